package podmanager

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
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
)

// admitFeatures refuses a pod that needs what actorlet does not implement,
// rather than run it without: DRA claims (upstream's kubelet prepares them
// through the claims' drivers before the sandbox, and without a driver never
// starts the pod), and per-container restart policies and rules (upstream
// restarts or keeps a container by them). It comes last, where upstream's
// declared-features handler is, with that handler's reason and message.
func admitFeatures(pod *v1.Pod) *Rejection {
	var missing []string
	if needsDRA(pod) {
		missing = append(missing, featureDRA)
	}
	if hasRestartRules(pod) {
		missing = append(missing, featureRestartRules)
	}
	if len(missing) == 0 {
		return nil
	}
	return &Rejection{Reason: ReasonFeatureUnsupported,
		Message: fmt.Sprintf("Pod requires node features that are not available: %s", strings.Join(missing, ", "))}
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
