package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// The gc actor's metrics. Upstream's kubelet has one GC metric,
// kubelet_image_garbage_collected_total, kept under its name; the others
// are actorlet's own, under actorlet_gc_.

// Values of the kind label of the actorlet_gc_ run metrics: one per pass of
// the gc actor.
const (
	GCKindContainer   = "container"    // dead containers, sandboxes, pod log directories
	GCKindImage       = "image"        // unused images
	GCKindLogRotation = "log_rotation" // container logs past containerLogMaxSize
)

// Values of actorlet_gc_runs_total's result label.
const (
	GCResultSuccess = "success"
	// GCResultFailure counts a pass that failed, or in which some removal did.
	GCResultFailure = "failure"
)

// Values of actorlet_gc_removed_total's object label.
const (
	GCObjectContainer = "container"
	GCObjectSandbox   = "sandbox"
	GCObjectImage     = "image"
	// GCObjectLogFile counts rotated log files beyond containerLogMaxFiles.
	GCObjectLogFile = "log_file"
	// GCObjectPodLogDir counts the /var/log/pods directories of pods that are gone.
	GCObjectPodLogDir = "pod_log_dir"
	// GCObjectPodCgroup counts pods that are gone whose cgroups were removed.
	GCObjectPodCgroup = "pod_cgroup"
)

// Values of kubelet_image_garbage_collected_total's reason label, upstream's.
const (
	ImageGCReasonAge   = "age"
	ImageGCReasonSpace = "space"
)

// gcDurationBuckets span a pass over an idle node (a few ms) to one
// removing hundreds of objects or images (minutes).
var gcDurationBuckets = prometheus.ExponentialBuckets(0.005, 2.5, 12)

var (
	// ImageGarbageCollectedTotal is upstream's: images removed, by reason.
	ImageGarbageCollectedTotal = kubeletFamily.counterVec("image_garbage_collected_total", "Total number of images garbage collected by the kubelet, whether through disk usage or image age.", "reason")

	// GCDuration is how long each GC pass took, by kind.
	GCDuration = gcFamily.histogramVec("duration_seconds", "Duration in seconds of a garbage collection pass, by kind (container, image, log_rotation).", gcDurationBuckets, "kind")

	// GCRuns counts the GC passes by kind and result.
	GCRuns = gcFamily.counterVec("runs_total", "Number of garbage collection passes, by kind and result (success, or failure when the pass or one of its removals failed).", "kind", "result")

	// GCRemoved counts what GC removed, by object.
	GCRemoved = gcFamily.counterVec("removed_total", "Number of objects garbage collection removed, by object (container, sandbox, image, log_file, pod_log_dir).", "object")

	// GCLogsRotated counts the container logs rotated.
	GCLogsRotated = gcFamily.counter("logs_rotated_total", "Number of container logs rotated for reaching containerLogMaxSize.")

	// GCImageBytesFreed counts the bytes image GC freed (the removed
	// images' sizes as the runtime reports them).
	GCImageBytesFreed = gcFamily.counter("image_bytes_freed_total", "Bytes freed by image garbage collection: the sum of the removed images' sizes.")

	// GCLastRun is when each kind of pass last ended.
	GCLastRun = gcFamily.gaugeVec("last_run_timestamp_seconds", "Unix time at which the last garbage collection pass of each kind ended.", "kind")
)

func init() {
	Registry.MustRegister(ImageGarbageCollectedTotal, GCDuration, GCRuns, GCRemoved, GCLogsRotated, GCImageBytesFreed, GCLastRun)
}
