package metrics

import "github.com/prometheus/client_golang/prometheus"

// The resource managers' kubelet_* families, under upstream's names: the
// pod-manager, which owns the managers, counts what their admissions did.

var (
	// CPUManagerPinningRequests counts the containers that took exclusive
	// CPUs at their admission, CPUManagerPinningErrors those that could
	// not.
	CPUManagerPinningRequests = kubeletFamily.counter("cpu_manager_pinning_requests_total", "The number of cpu core allocations which required pinning.")
	CPUManagerPinningErrors   = kubeletFamily.counter("cpu_manager_pinning_errors_total", "The number of cpu core allocations which required pinning failed.")

	// CPUManagerSharedPoolSize is the static policy's shared pool less the
	// reserved CPUs, in millicores; CPUManagerExclusiveCPUs the CPUs given
	// to containers exclusively. Both stay 0 under the none policy.
	CPUManagerSharedPoolSize = kubeletFamily.gauge("cpu_manager_shared_pool_size_millicores", "The size of the shared CPU pool for non-guaranteed QoS pods, in millicores.")
	CPUManagerExclusiveCPUs  = kubeletFamily.gauge("cpu_manager_exclusive_cpu_allocation_count", "The total number of CPUs exclusively allocated to containers running on this node")

	// MemoryManagerPinningRequests counts the containers whose memory the
	// static policy pinned at their admission, MemoryManagerPinningErrors
	// those it could not.
	MemoryManagerPinningRequests = kubeletFamily.counter("memory_manager_pinning_requests_total", "The number of memory pages allocations which required pinning.")
	MemoryManagerPinningErrors   = kubeletFamily.counter("memory_manager_pinning_errors_total", "The number of memory pages allocations which required pinning that failed.")

	// TopologyManagerAdmissionRequests counts the pods the resource
	// managers admitted or refused, TopologyManagerAdmissionErrors those
	// refused (not under the none policy, which merges no hints), and
	// TopologyManagerAdmissionDuration the time each admission took, in
	// whole milliseconds as upstream's.
	TopologyManagerAdmissionRequests = kubeletFamily.counter("topology_manager_admission_requests_total", "The number of admission requests where resources have to be aligned.")
	TopologyManagerAdmissionErrors   = kubeletFamily.counter("topology_manager_admission_errors_total", "The number of admission request failures where resources could not be aligned.")
	TopologyManagerAdmissionDuration = kubeletFamily.histogram("topology_manager_admission_duration_ms", "Duration in milliseconds to serve a pod admission request.", prometheus.ExponentialBuckets(.05, 2, 15))
)

func init() {
	Registry.MustRegister(CPUManagerPinningRequests, CPUManagerPinningErrors, CPUManagerSharedPoolSize, CPUManagerExclusiveCPUs,
		MemoryManagerPinningRequests, MemoryManagerPinningErrors,
		TopologyManagerAdmissionRequests, TopologyManagerAdmissionErrors, TopologyManagerAdmissionDuration)
}
