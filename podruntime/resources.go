package podruntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/machine"
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
	if !cpuLim.IsZero() {
		r.CpuPeriod = quotaPeriod
		r.CpuQuota = milliCPUToQuota(cpuLim.MilliValue())
	}
	if m := c.Resources.Limits.Memory(); !m.IsZero() {
		r.MemoryLimitInBytes = m.Value()
	}
	adj, err := oomScoreAdj(pod, c, opts)
	if err != nil {
		return nil, err
	}
	r.OomScoreAdj = adj
	return r, nil
}

func milliCPUToShares(milli int64) int64 {
	if milli == 0 {
		return minShares
	}
	return max(milli*sharesPerCPU/milliCPUToCPU, minShares)
}

func milliCPUToQuota(milli int64) int64 {
	return max(milli*quotaPeriod/milliCPUToCPU, minQuota)
}

// oomScoreAdj is upstream's GetContainerOOMScoreAdjust: Guaranteed pods are
// killed last, BestEffort first, Burstable by their share of node memory.
func oomScoreAdj(pod *v1.Pod, c *v1.Container, opts Options) (int64, error) {
	switch PodQOSClass(pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj, nil
	case v1.PodQOSBestEffort:
		return bestEffortOOMScoreAdj, nil
	}
	capacity := opts.NodeMemoryCapacity
	if capacity <= 0 {
		var err error
		if capacity, err = machine.MemTotal("/proc/meminfo"); err != nil {
			return 0, fmt.Errorf("OOM score of container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err)
		}
	}
	adj := 1000 - (1000*c.Resources.Requests.Memory().Value())/capacity
	if adj < 1000+guaranteedOOMScoreAdj {
		return 1000 + guaranteedOOMScoreAdj, nil
	}
	if adj == bestEffortOOMScoreAdj {
		return adj - 1, nil
	}
	return adj, nil
}

// PodQOSClass is the pod's QoS class as upstream's GetPodQOS computes it from
// the containers' cpu and memory requests and limits.
func PodQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	add := func(list v1.ResourceList, name v1.ResourceName, q resource.Quantity) {
		if cur, ok := list[name]; ok {
			cur.Add(q)
			list[name] = cur
		} else {
			list[name] = q.DeepCopy()
		}
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
				if q, ok := c.Resources.Requests[name]; ok && !q.IsZero() {
					add(requests, name, q)
				}
				q, ok := c.Resources.Limits[name]
				if ok && !q.IsZero() {
					add(limits, name, q)
				} else {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(limits) == 2 {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
