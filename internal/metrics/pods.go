package metrics

import (
	"strconv"
	"strings"
)

// Upstream's kubelet_* families of pod admission, pod status, container
// lifecycle hooks and image requests, kept apart from kubelet.go's list so
// that each group registers itself.

var (
	// PodLevelResourcesAdmission counts the pods admission accepted, by
	// how their resources are set (PodResourcesConfigMode) and their QoS
	// class in lower case.
	PodLevelResourcesAdmission = kubeletFamily.counterVec("pod_level_resources_admission_total", "Total number of pods admitted during Kubelet admission, categorized by resource configuration mode (pod_and_container_level, pod_level, container_level, or empty for unconfigured/BestEffort) and QoS class.", "config_mode", "qos_class")

	// TerminatedContainers counts the containers a pod's reported status
	// shows terminated where the status before did not, by container type
	// (ContainerType*), exit code and reason.
	TerminatedContainers = kubeletFamily.counterVec("terminated_containers_total", "Cumulative number of container terminations.", "container_type", "exit_code", "reason")

	// PodStatusSyncDuration is the time from the first change of a pod's
	// status not yet in the API to the write that put it there.
	PodStatusSyncDuration = kubeletFamily.histogram("pod_status_sync_duration_seconds", "Duration in seconds to sync a pod status update. Measures time from detection of a change to pod status until the API is successfully updated for that pod, even if multiple intevening changes to pod status occur.", []float64{0.010, 0.050, 0.100, 0.500, 1, 5, 10, 20, 30, 45, 60})

	// SleepActionTerminatedEarly counts the Sleep lifecycle hooks cut short
	// because their container's stop ran out of time.
	SleepActionTerminatedEarly = kubeletFamily.counter("sleep_action_terminated_early_total", "The number of times lifecycle sleep handler got terminated before it finishes")
)

// Values of kubelet_pod_level_resources_admission_total's config_mode
// label; the empty string is a pod that sets no resources.
const (
	ConfigModePodAndContainer = "pod_and_container_level"
	ConfigModePod             = "pod_level"
	ConfigModeContainer       = "container_level"
	ConfigModeNone            = ""
)

// PodResourcesConfigMode is the config_mode label of a pod that sets
// resources at the pod level (podLevel) and in any of its regular or init
// containers (containerLevel).
func PodResourcesConfigMode(podLevel, containerLevel bool) string {
	switch {
	case podLevel && containerLevel:
		return ConfigModePodAndContainer
	case podLevel:
		return ConfigModePod
	case containerLevel:
		return ConfigModeContainer
	}
	return ConfigModeNone
}

func init() {
	Registry.MustRegister(PodLevelResourcesAdmission, TerminatedContainers, PodStatusSyncDuration, SleepActionTerminatedEarly)
}

// EnsureImageRequests is upstream's
// kubelet_image_manager_ensure_image_requests_total: every time a pod's
// image (a container's or an image volume's) was ensured, by pull policy
// and what was found (EnsureImageLabels).
var EnsureImageRequests = kubeletFamily.counterVec("image_manager_ensure_image_requests_total", "Number of ensure-image requests processed by the kubelet.", "pull_policy", "present_locally", "pull_required")

// EnsureImageLabels are the labels of one ensure-image request, as
// upstream's: the policy in lower case; whether the image was found on the
// node and whether it had to be pulled, "unknown" when the request did not
// get as far as telling (nil).
func EnsureImageLabels(policy string, present, pullRequired *bool) (string, string, string) {
	tell := func(b *bool) string {
		if b == nil {
			return "unknown"
		}
		return strconv.FormatBool(*b)
	}
	return strings.ToLower(policy), tell(present), tell(pullRequired)
}

func init() {
	Registry.MustRegister(EnsureImageRequests)
}
