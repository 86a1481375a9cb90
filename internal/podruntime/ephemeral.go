package podruntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Ephemeral containers (kubectl debug) are added to a running pod through
// the pods/ephemeralcontainers subresource. As upstream's, they start once
// in the pod's running sandbox, even before its initialization is done, and
// are never restarted: an instance that exited stays as it ended. They
// carry the same labels and annotations as the pod's other containers: the
// API forbids two containers of a pod to share a name, so the spec tells
// which instances are ephemeral.

// ephemeralContainersToStart are the indexes in pod.Spec.EphemeralContainers
// of the ephemeral containers with no instance at all, as upstream's
// computePodActions.
func ephemeralContainersToStart(pod *v1.Pod, status *PodStatus) []int {
	var out []int
	for i := range pod.Spec.EphemeralContainers {
		if status.FindContainer(pod.Spec.EphemeralContainers[i].Name) == nil {
			out = append(out, i)
		}
	}
	return out
}

// ephemeralContainer is the ephemeral container of pod named name, nil when
// name is not one.
func ephemeralContainer(pod *v1.Pod, name string) *v1.EphemeralContainer {
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return ec
		}
	}
	return nil
}

// ephemeralContainers are the pod's ephemeral containers as containers
// (EphemeralContainerCommon has the fields of a Container).
func ephemeralContainers(pod *v1.Pod) []v1.Container {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	out := make([]v1.Container, len(pod.Spec.EphemeralContainers))
	for i := range pod.Spec.EphemeralContainers {
		out[i] = v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
	}
	return out
}

// ephemeralTarget is the runtime ID of the current instance of the
// container whose process namespace the ephemeral container c targets
// (targetContainerName), as upstream's getTargetID; "" when c is not an
// ephemeral container or targets none. A target with no instance is
// upstream's error.
func ephemeralTarget(pod *v1.Pod, c *v1.Container, status *PodStatus) (string, error) {
	ec := ephemeralContainer(pod, c.Name)
	if ec == nil || ec.TargetContainerName == "" {
		return "", nil
	}
	target := status.FindContainer(ec.TargetContainerName)
	if target == nil {
		return "", fmt.Errorf("unable to find target container %v", ec.TargetContainerName)
	}
	return target.ID, nil
}

// targetPIDNamespace puts the container of cfg in the process namespace of
// the container targetID, as upstream's generateLinuxContainerConfig: only
// when it would otherwise have one of its own (not with the pod's shared
// namespace nor the host's).
func targetPIDNamespace(cfg *runtimeapi.ContainerConfig, targetID string) {
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if targetID == "" || ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = targetID
}

// ephemeralContainerStatuses is the pod's status.ephemeralContainerStatuses,
// as upstream's generateAPIPodStatus makes it: converted as regular
// containers' (ContainerCreating, or PodInitializing in a pod with init
// containers, until created; the reason a pass failed to start one) and
// sorted by name, but neither ready nor started: upstream's probe manager,
// which sets those, only looks at regular and init containers.
func ephemeralContainerStatuses(pod *v1.Pod, status *PodStatus, waiting map[string]WaitingReason, previous []v1.ContainerStatus) []v1.ContainerStatus {
	out := convertContainerStatuses(pod, status, waiting, previous, ephemeralContainers(pod), len(pod.Spec.InitContainers) > 0, false)
	for i := range out {
		out[i].Ready, out[i].Started = false, nil
	}
	return out
}
