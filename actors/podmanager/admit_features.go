package podmanager

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ReasonFeatureUnsupported is upstream's PodFeatureUnsupported: the reason
// its declared-features admission handler gives a pod that needs a feature
// the node does not have.
const ReasonFeatureUnsupported = "PodFeatureUnsupported"

// The features a pod may need that actorlet does not implement, by the
// names of upstream's feature gates.
const (
	featureDRA          = "DynamicResourceAllocation"
	featureRestartRules = "ContainerRestartRules"
	featureImageVolume  = "ImageVolume"
)

// admitFeatures refuses a pod that needs what actorlet does not implement,
// rather than run it without: DRA claims when there is no dra-manager
// (without an API server: upstream's kubelet prepares them through the
// claims' drivers before the sandbox, and never starts the pod without),
// and per-container restart policies and rules (upstream
// restarts or keeps a container by them); and a pod with an image volume
// when imageVolumes says why the runtime cannot mount one (upstream runs
// the pod and its containers fail to be created, or run without the
// volume). It comes last, where upstream's declared-features handler is,
// with that handler's reason and message, and the runtime's shortcoming.
func admitFeatures(pod *v1.Pod, imageVolumes error, dra bool) *Rejection {
	var missing []string
	if !dra && needsDRA(pod) {
		missing = append(missing, featureDRA)
	}
	if hasRestartRules(pod) {
		missing = append(missing, featureRestartRules)
	}
	imageVolumesMissing := imageVolumes != nil && hasImageVolume(pod)
	if imageVolumesMissing {
		missing = append(missing, featureImageVolume)
	}
	if len(missing) == 0 {
		return nil
	}
	msg := fmt.Sprintf("Pod requires node features that are not available: %s", strings.Join(missing, ", "))
	if imageVolumesMissing {
		msg += "; " + imageVolumes.Error()
	}
	return &Rejection{Reason: ReasonFeatureUnsupported, Message: msg}
}

func hasImageVolume(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Image != nil {
			return true
		}
	}
	return false
}

// ImageVolumeRuntime tells whether the container runtime that answered
// the CRI Version v mounts image volumes (CRI Mount.image): containerd
// does from 2.1 and earlier ones ignore the field, so a container would
// run without its volume. Other runtimes are trusted to (CRI-O does from
// 1.31). nil: it does.
func ImageVolumeRuntime(v *runtimeapi.VersionResponse) error {
	if v.GetRuntimeName() != "containerd" {
		return nil
	}
	major, minor, ok := majorMinor(v.GetRuntimeVersion())
	if !ok {
		return fmt.Errorf("the container runtime containerd %s may not mount image volumes: its version does not parse", v.GetRuntimeVersion())
	}
	if major < 2 || (major == 2 && minor < 1) {
		return fmt.Errorf("the container runtime containerd %s cannot mount image volumes: that needs containerd 2.1 or later", v.GetRuntimeVersion())
	}
	return nil
}

// majorMinor reads the major and minor numbers of a version such as
// "v2.4.2", "1.6.20~ds1" or "2.1.0-rc.1".
func majorMinor(version string) (major, minor int, ok bool) {
	parts := strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3)
	if len(parts) < 2 {
		return 0, 0, false
	}
	var err error
	if major, err = strconv.Atoi(parts[0]); err != nil {
		return 0, 0, false
	}
	// The minor number may run into a suffix when there is no patch
	// number ("2.1-rc.1").
	digits := strings.IndexFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' })
	if digits == 0 {
		return 0, 0, false
	}
	if digits > 0 {
		parts[1] = parts[1][:digits]
	}
	if minor, err = strconv.Atoi(parts[1]); err != nil {
		return 0, 0, false
	}
	return major, minor, true
}

// needsDRA tells whether upstream's DRA manager would have a claim to
// prepare for the pod: one of its resourceClaims names a claim, or comes
// from a template whose claim the pod's status does not declare unneeded,
// or the scheduler made a claim for its extended resources; or a container
// asks for a claim (the API server allows that only for the pod's own).
func needsDRA(pod *v1.Pod) bool {
	if pod.Status.ExtendedResourceClaimStatus != nil {
		return true
	}
	for _, c := range pod.Spec.ResourceClaims {
		if c.ResourceClaimName != nil || !unneededClaim(pod, c.Name) {
			return true
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			if len(c.Resources.Claims) > 0 {
				return true
			}
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if len(c.Resources.Claims) > 0 {
			return true
		}
	}
	return pod.Spec.Resources != nil && len(pod.Spec.Resources.Claims) > 0
}

// unneededClaim: the pod's status says the template of the pod's claim
// name made no claim (upstream's resourceclaim.Name returns none then, and
// there is nothing to prepare).
func unneededClaim(pod *v1.Pod, name string) bool {
	for _, s := range pod.Status.ResourceClaimStatuses {
		if s.Name == name {
			return s.ResourceClaimName == nil
		}
	}
	return false
}

// hasRestartRules tells whether a container has restart rules, or a
// restart policy of its own that would restart or keep it otherwise than
// the pod's restartPolicy does (upstream's ContainerShouldRestart): a
// regular container's other than the pod's, a regular init container's
// that differs on a failure (an init container that exits 0 is done; one
// that fails is restarted unless the pod's policy is Never). An init
// container's Always makes it a sidecar, which actorlet implements.
func hasRestartRules(pod *v1.Pod) bool {
	podPolicy := v1.ContainerRestartPolicy(pod.Spec.RestartPolicy)
	if podPolicy == "" {
		podPolicy = v1.ContainerRestartPolicyAlways
	}
	for _, c := range pod.Spec.InitContainers {
		if len(c.RestartPolicyRules) > 0 {
			return true
		}
		if c.RestartPolicy == nil || *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			continue
		}
		restartsOnFailure := *c.RestartPolicy == v1.ContainerRestartPolicyOnFailure
		if restartsOnFailure != (podPolicy != v1.ContainerRestartPolicyNever) {
			return true
		}
	}
	for _, c := range pod.Spec.Containers {
		if len(c.RestartPolicyRules) > 0 || (c.RestartPolicy != nil && *c.RestartPolicy != podPolicy) {
			return true
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.RestartPolicy != nil || len(c.RestartPolicyRules) > 0 {
			return true
		}
	}
	return false
}
