package podruntime

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/nodecapacity"
)

// Constants of upstream's cm and qos packages.
const (
	minShares     = 2
	sharesPerCPU  = 1024
	milliCPUToCPU = 1000
	quotaPeriod   = 100000 // µs
	minQuota      = 1000   // µs

	guaranteedOOMScoreAdj = -997
	bestEffortOOMScoreAdj = 1000
)

// containerResources is upstream's calculateLinuxResources plus the OOM
// score of the pod's QoS class.
func containerResources(pod *v1.Pod, c *v1.Container, opts Options) (*runtimeapi.LinuxContainerResources, error) {
	r := &runtimeapi.LinuxContainerResources{}
	cpuReq, cpuLim := c.Resources.Requests.Cpu(), c.Resources.Limits.Cpu()
	// A limit without request means request = limit (API defaulting).
	if cpuReq.IsZero() && !cpuLim.IsZero() {
		r.CpuShares = milliCPUToShares(cpuLim.MilliValue())
	} else {
		r.CpuShares = milliCPUToShares(cpuReq.MilliValue())
	}
	r.CpuPeriod, r.CpuQuota = cfsQuota(cpuLim.MilliValue(), opts.NoCPUCFSQuota, opts.CPUCFSQuotaPeriod)
	if !opts.NoCPUCFSQuota && opts.CPUSets.Exclusive(string(pod.UID), c.Name) {
		// Upstream's DisableCPUQuotaWithExclusiveCPUs (locked on): the
		// period stays, the quota is unlimited.
		r.CpuQuota = -1
	}
	if m := c.Resources.Limits.Memory(); !m.IsZero() {
		r.MemoryLimitInBytes = m.Value()
	}
	if opts.CgroupV2 && !opts.SingleProcessOOMKill {
		// The kernel kills every process of the container's cgroup on
		// OOM, not one of them.
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	configureSwap(r, pod, c, opts.Swap, opts.CgroupV2)
	adj, err := oomScoreAdj(pod, c, opts)
	if err != nil {
		return nil, err
	}
	r.OomScoreAdj = adj
	// The CPU manager's cpuset: exclusive CPUs, or the shared pool.
	r.CpusetCpus = opts.CPUSets.CPUSet(string(pod.UID), c.Name)
	// The memory manager's NUMA nodes (Static policy), as upstream's
	// PreCreateContainer.
	r.CpusetMems = opts.MemoryNodes.CPUSetMems(string(pod.UID), c.Name)
	return r, nil
}

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return max(milli*sharesPerCPU/milliCPUToCPU, minShares)
}

// cfsQuota is upstream's calculateLinuxResources for the CFS bandwidth:
// with cpuCFSQuota (noQuota false) the period is cpuCFSQuotaPeriod (100 ms
// when 0, as without the CustomCPUCFSQuotaPeriod gate, whose validation
// leaves the period at 100 ms) and the quota the limit over it, 0 without a
// limit; with cpuCFSQuota false neither is set, so the container runs
// unthrottled.
func cfsQuota(limitMilli int64, noQuota bool, period time.Duration) (periodUs, quota int64) {
	if noQuota {
		return 0, 0
	}
	periodUs = int64(period / time.Microsecond)
	if periodUs <= 0 {
		periodUs = quotaPeriod
	}
	if limitMilli == 0 {
		return periodUs, 0
	}
	return periodUs, max(limitMilli*periodUs/milliCPUToCPU, minQuota)
}

// oomScoreAdj is upstream's GetContainerOOMScoreAdjust: node-critical and
// Guaranteed pods are killed last, BestEffort first, Burstable containers
// by their share of node memory (their memory request, plus an equal share
// of a pod-level memory request the containers leave unassigned); a
// sidecar scores no higher than the pod's smallest regular container, so
// that it outlives the containers it serves.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, opts Options) (int64, error) {
	if isNodeCriticalPod(pod) {
		return guaranteedOOMScoreAdj, nil
	}
	switch cgroups.QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj, nil
	case v1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj, nil
	}
	capacity := opts.NodeMemoryCapacity
	if capacity <= 0 {
		var err error
		if capacity, err = nodecapacity.MemTotal("/proc/meminfo"); err != nil {
			return 0, fmt.Errorf("OOM score of container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
		}
	}
	var extra int64
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		extra = remainingPodMemReqPerContainer(pod)
	}
	adj := 1000 - (1000*(c.Resources.Requests.Memory().Value()+extra))/capacity
	if isSidecar(pod, c) && len(pod.Spec.Containers) > 0 {
		minReq := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := 1; i < len(pod.Spec.Containers); i++ {
			minReq = min(minReq, pod.Spec.Containers[i].Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-(1000*(minReq+extra))/capacity)
	}
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj, nil
	}
	if adj == bestEffortOOMScoreAdj {
		return adj - 1, nil
	}
	return adj, nil
}

// remainingPodMemReqPerContainer is upstream's: the part of the pod-level
// memory request that no container requests, shared equally among the
// init and regular containers.
func remainingPodMemReqPerContainer(pod *v1.Pod) int64 {
	if pod.Spec.Resources.Requests.Memory().IsZero() {
		return 0
	}
	n := int64(len(pod.Spec.Containers) + len(pod.Spec.InitContainers))
	aggr := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	return max(pod.Spec.Resources.Requests.Memory().Value()-aggr.Memory().Value(), 0) / n
}

// isSidecar is upstream's isSidecarContainer: a restartable init
// container.
func isSidecar(pod *v1.Pod, c *v1.Container) bool {
	if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
		return false
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return true
		}
	}
	return false
}

// systemCriticalPriority is upstream's scheduling.SystemCriticalPriority.
const systemCriticalPriority = 2000000000

// Swap is what the node's swap gives containers (memorySwap and the
// machine).
type Swap struct {
	// Controller tells whether the swap controller is there
	// (memory.memsw.limit_in_bytes on v1, memory.swap.max on v2);
	// without it nothing is set.
	Controller bool
	// Behavior is memorySwap.swapBehavior: "" or NoSwap, or LimitedSwap.
	Behavior string
	// Capacity is the machine's swap (SwapTotal), MemoryCapacity its
	// memory, in bytes.
	Capacity, MemoryCapacity int64
}

// configureSwap is upstream's configureContainerSwapResources: with the
// swap controller, LimitedSwap gives a Burstable container of a pod not
// critical, whose memory request is set and differs from its limit, swap
// in proportion of its request to the node's memory, on cgroup v2 only;
// any other container gets none: memory.swap.max 0 on v2, and on v1 a
// memory+swap limit equal to the memory limit.
func configureSwap(r *runtimeapi.LinuxContainerResources, pod *v1.Pod, c *v1.Container, s Swap, v2 bool) {
	if !s.Controller {
		return
	}
	if !v2 {
		r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		return
	}
	swap := int64(0)
	req, lim := c.Resources.Requests.Memory(), c.Resources.Limits.Memory()
	if s.Behavior == "LimitedSwap" && !isCriticalPod(pod) && cgroups.QOSClass(pod) == v1.PodQOSBurstable &&
		!(req.IsZero() && lim.IsZero()) && req.Cmp(*lim) != 0 && s.MemoryCapacity > 0 && req.Value() <= s.MemoryCapacity {
		swap = int64(float64(req.Value()) / float64(s.MemoryCapacity) * float64(s.Capacity))
	}
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified["memory.swap.max"] = fmt.Sprint(swap)
}

// isCriticalPod is upstream's IsCriticalPod: a static or mirror pod, or
// one of system-critical priority.
func isCriticalPod(pod *v1.Pod) bool {
	if src, ok := pod.Annotations[manifest.ConfigSourceAnnotation]; ok && src != "api" {
		return true
	}
	if manifest.IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

// isNodeCriticalPod is upstream's IsNodeCriticalPod: a critical pod
// (static, mirror, or of system-critical priority) of priority class
// system-node-critical.
func isNodeCriticalPod(pod *v1.Pod) bool {
	if pod.Spec.PriorityClassName != "system-node-critical" {
		return false
	}
	if src, ok := pod.Annotations[manifest.ConfigSourceAnnotation]; ok && src != "api" {
		return true
	}
	if manifest.IsMirror(pod) {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
