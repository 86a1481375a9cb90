package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The kubelet metrics, under upstream's names, types, labels and buckets
// (k8s.io/kubernetes pkg/kubelet/metrics). Upstream registers them through
// component-base, whose stability level starts each help ([ALPHA]) and
// adds nothing to the names, so dashboards and alerts written for the
// kubelet read these as they are.

// kubeletSubsystem prefixes every kubelet metric, as upstream's.
const kubeletSubsystem = "kubelet"

// Values of kubelet_pod_worker_duration_seconds' operation_type label:
// upstream's SyncPodType names.
const (
	// OperationCreate is the first sync of a pod the kubelet was given.
	OperationCreate = "create"
	// OperationUpdate is the sync that follows a change of the pod's spec.
	OperationUpdate = "update"
	// OperationSync is any other sync (runtime events, retries).
	OperationSync = "sync"
	// OperationKill is stopping the pod's containers and removing them.
	OperationKill = "kill"
)

// Values of kubelet_running_containers' container_state label: upstream's
// kubecontainer states, one for each CRI container state.
const (
	ContainerStateCreated = "created"
	ContainerStateRunning = "running"
	ContainerStateExited  = "exited"
	ContainerStateUnknown = "unknown"
)

// Values of the static label of kubelet_desired_pods and kubelet_active_pods:
// upstream writes "true" for a static pod and the empty string otherwise.
const (
	StaticTrue  = "true"
	StaticFalse = ""
)

var (
	// podStartupDurationBuckets are upstream's, roughly exponential in
	// everyday units so that SLO thresholds fall on a bucket boundary.
	podStartupDurationBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	// runtimeOperationsBuckets are upstream's: 5 ms to about 3.5 hours.
	runtimeOperationsBuckets = prometheus.ExponentialBuckets(.005, 2.5, 14)
	// imagePullDurationBuckets are upstream's: 1 s to an hour.
	imagePullDurationBuckets = []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
)

// Values of kubelet_started_containers_total's container_type label.
const (
	ContainerTypeContainer = "container"
	ContainerTypeInit      = "init_container"
	ContainerTypeEphemeral = "ephemeral_container"
)

// imageSizeBuckets are upstream's image_size_in_bytes labels, each from
// its lower bound.
var imageSizeBuckets = []struct {
	from  uint64
	label string
}{
	{0, "0-10MB"}, {10 << 20, "10MB-100MB"}, {100 << 20, "100MB-500MB"}, {500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"}, {5 << 30, "5GB-10GB"}, {10 << 30, "10GB-20GB"}, {20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"}, {40 << 30, "40GB-60GB"}, {60 << 30, "60GB-100GB"}, {100 << 30, "GT100GB"},
}

// ImageSizeBucket is the image_size_in_bytes label of an image of size
// bytes: "N/A" when the size is unknown (0), as upstream's.
func ImageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeBuckets) - 1; i > 0; i-- {
		if size > imageSizeBuckets[i].from {
			return imageSizeBuckets[i].label
		}
	}
	return imageSizeBuckets[0].label
}

// Values of kubelet_cgroup_manager_duration_seconds' operation_type label.
const (
	CgroupCreate  = "create"
	CgroupUpdate  = "update"
	CgroupDestroy = "destroy"
)

var (
	// NodeName is 1 with the node's name as its label.
	NodeName = kubeletFamily.gaugeVec("node_name", "The node's name. The count is always 1.", "node")

	// RunningPods counts the pods with a ready sandbox, as PLEG's last
	// relist saw them.
	RunningPods = kubeletFamily.gauge("running_pods", "Number of pods that have a running pod sandbox")

	// RunningContainers counts the containers by state, as PLEG's last
	// relist saw them.
	RunningContainers = kubeletFamily.gaugeVec("running_containers", "Number of containers currently running", "container_state")

	// DesiredPods counts the pods the sources want on this node, rejected
	// ones included.
	DesiredPods = kubeletFamily.gaugeVec("desired_pods", "The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.", "static")

	// ActivePods counts the pods admission counts against the node: admitted,
	// neither terminating nor finished.
	ActivePods = kubeletFamily.gaugeVec("active_pods", "The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.", "static")

	// PodStartDuration is the time from the kubelet's first sight of a pod
	// (its config.seen annotation) to all of its containers running.
	PodStartDuration = kubeletFamily.histogram("pod_start_duration_seconds", "Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run", podStartupDurationBuckets)

	// PodStartSLIDuration is the time from a pod's creation to all of its
	// containers running as the kubelet reports it, less the time its
	// images took to pull; PodStartTotalDuration the same with the pulls.
	PodStartSLIDuration   = kubeletFamily.histogramVec("pod_start_sli_duration_seconds", "Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch", podStartupDurationBuckets)
	PodStartTotalDuration = kubeletFamily.histogramVec("pod_start_total_duration_seconds", "Duration in seconds to start a pod since creation, including time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch", podStartupDurationBuckets)

	// PodWorkerStartDuration is the time from the kubelet's first sight of
	// a pod to its worker's first sync.
	PodWorkerStartDuration = kubeletFamily.histogram("pod_worker_start_duration_seconds", "Duration in seconds from kubelet seeing a pod to starting a worker.", prometheus.DefBuckets)

	// ContainersPerPod is the number of containers of each pod a worker
	// is given.
	ContainersPerPod = kubeletFamily.histogram("containers_per_pod_count", "The number of containers per pod.", prometheus.ExponentialBuckets(1, 2, 5))

	// PodWorkerDuration is the time one sync or kill pass of a pod took.
	PodWorkerDuration = kubeletFamily.histogramVec("pod_worker_duration_seconds", "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync", prometheus.DefBuckets, "operation_type")

	// PLEGRelistDuration is the time one relist of the runtime took.
	PLEGRelistDuration = kubeletFamily.histogram("pleg_relist_duration_seconds", "Duration in seconds for relisting pods in PLEG.", prometheus.DefBuckets)

	// PLEGRelistInterval is the time from the last successful relist to the
	// start of the next one.
	PLEGRelistInterval = kubeletFamily.histogram("pleg_relist_interval_seconds", "Interval in seconds between relisting in PLEG.", prometheus.DefBuckets)

	// PLEGDiscardEvents counts the lifecycle events a relist could not
	// hand on. PLEG's events go to the pod-workers' mailboxes, which do not
	// drop any: it stays 0, served for the alerts that read it.
	PLEGDiscardEvents = kubeletFamily.counter("pleg_discard_events", "The number of discard events in PLEG.")

	// PLEGLastSeen is the Unix time, in whole seconds as upstream's, of the
	// last successful relist, so that alerts can say
	// time() - kubelet_pleg_last_seen_seconds > threshold.
	PLEGLastSeen = kubeletFamily.gauge("pleg_last_seen_seconds", "Timestamp in seconds when PLEG was last seen active.")

	// RuntimeOperations counts the CRI calls by operation (cri.go).
	RuntimeOperations = kubeletFamily.counterVec("runtime_operations_total", "Cumulative number of runtime operations by operation type.", "operation_type")

	// RuntimeOperationsErrors counts the CRI calls that failed.
	RuntimeOperationsErrors = kubeletFamily.counterVec("runtime_operations_errors_total", "Cumulative number of runtime operation errors by operation type.", "operation_type")

	// RuntimeOperationsDuration is the time each CRI call took.
	RuntimeOperationsDuration = kubeletFamily.histogramVec("runtime_operations_duration_seconds", "Duration in seconds of runtime operations. Broken down by operation type.", runtimeOperationsBuckets, "operation_type")

	// StartedPods counts the pod sandboxes the kubelet asked the runtime
	// to create.
	StartedPods = kubeletFamily.counter("started_pods_total", "Cumulative number of pods started")

	// RunPodSandboxDuration times RunPodSandbox calls by the runtime
	// handler of the pod's RuntimeClass ("" for the default).
	RunPodSandboxDuration = kubeletFamily.histogramVec("run_podsandbox_duration_seconds", "Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.", prometheus.DefBuckets, "runtime_handler")

	// RunPodSandboxErrors counts the RunPodSandbox calls that failed, by
	// runtime handler.
	RunPodSandboxErrors = kubeletFamily.counterVec("run_podsandbox_errors_total", "Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.", "runtime_handler")

	// StartedPodsErrors counts the sandbox creations that failed.
	StartedPodsErrors = kubeletFamily.counter("started_pods_errors_total", "Cumulative number of errors when starting pods")

	// StartedContainers counts the container instances a sync set out to
	// start (after their backoff), by container_type; StartedContainersErrors
	// those that failed, by the reason (code) their status gives.
	StartedContainers       = kubeletFamily.counterVec("started_containers_total", "Cumulative number of containers started", "container_type")
	StartedContainersErrors = kubeletFamily.counterVec("started_containers_errors_total", "Cumulative number of errors when starting containers", "container_type", "code")

	// ImagePullDuration is the time each image pull took, by the pulled
	// image's size bucket (ImageSizeBucket).
	ImagePullDuration = kubeletFamily.histogramVec("image_pull_duration_seconds", "Duration in seconds to pull an image.", imagePullDurationBuckets, "image_size_in_bytes")

	// CgroupManagerDuration is the time cgroup operations took: create,
	// update, destroy.
	CgroupManagerDuration = kubeletFamily.histogramVec("cgroup_manager_duration_seconds", "Duration in seconds for cgroup manager operations. Broken down by method.", prometheus.DefBuckets, "operation_type")

	// MirrorPods counts the mirror pods of the node's static pods.
	MirrorPods = kubeletFamily.gauge("mirror_pods", "The number of mirror pods the kubelet will try to create (one per admitted static pod)")

	// StartedUserNamespacedPods counts the sandbox creations of pods with
	// hostUsers: false, StartedUserNamespacedPodsErrors the sync passes
	// of such a creation that failed, as upstream's SyncPod counts them.
	StartedUserNamespacedPods       = kubeletFamily.counter("started_user_namespaced_pods_total", "Cumulative number of pods with user namespaces started. This metric will only be collected on Linux.")
	StartedUserNamespacedPodsErrors = kubeletFamily.counter("started_user_namespaced_pods_errors_total", "Cumulative number of errors when starting pods with user namespaces. This metric will only be collected on Linux.")
)

// kubeletMetrics are registered on Registry, in the order of the list of
// names documented for /metrics.
var kubeletMetrics = []prometheus.Collector{
	NodeName, RunningPods, RunningContainers, DesiredPods, ActivePods,
	PodStartDuration, PodStartSLIDuration, PodStartTotalDuration, PodWorkerStartDuration, ContainersPerPod, PodWorkerDuration,
	PLEGRelistDuration, PLEGRelistInterval, PLEGDiscardEvents, PLEGLastSeen,
	RuntimeOperations, RuntimeOperationsErrors, RuntimeOperationsDuration,
	RunPodSandboxDuration, RunPodSandboxErrors,
	StartedPods, StartedPodsErrors,
	StartedContainers, StartedContainersErrors, ImagePullDuration, CgroupManagerDuration, MirrorPods,
	StartedUserNamespacedPods, StartedUserNamespacedPodsErrors,
}

func init() {
	Registry.MustRegister(kubeletMetrics...)
}

// SetNodeName makes kubelet_node_name report name, as upstream's.
func SetNodeName(name string) {
	NodeName.WithLabelValues(name).Set(1)
}
