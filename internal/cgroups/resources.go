// Package cgroups is the node's cgroup tree as upstream's kubelet
// container manager (pkg/kubelet/cm) lays it out: the node-allocatable
// cgroup kubepods below cgroupRoot, its QoS children burstable and
// besteffort (Guaranteed pods sit directly in kubepods), and a pod<UID>
// cgroup per pod below its QoS cgroup, each with the limits upstream
// computes. What the limits are is pure computation (this file, layout.go,
// files.go); Manager (manager.go) is the filesystem edge that creates,
// updates and removes the cgroups under /sys/fs/cgroup, cgroup v1 or v2.
package cgroups

import (
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Constants of upstream's cm package (helpers_linux.go): the kernel's
// bounds of cpu.shares and CFS quota, in shares and microseconds.
const (
	MinShares     = 2
	MaxShares     = 262144
	SharesPerCPU  = 1024
	MilliCPUToCPU = 1000
	// QuotaPeriod is the CFS period (100 ms) quotas are computed over.
	QuotaPeriod    = 100000
	MinQuotaPeriod = 1000
)

// ResourceConfig is the limits of one cgroup, as upstream's
// cm.ResourceConfig: nil fields are left as they are.
type ResourceConfig struct {
	// CPUShares is cpu.shares (v1), converted to cpu.weight on v2.
	CPUShares *uint64
	// CPUQuota is the CFS quota in µs per CPUPeriod; -1 is unlimited.
	CPUQuota  *int64
	CPUPeriod *uint64
	// Memory is the memory limit in bytes.
	Memory *int64
	// PidsLimit is pids.max; -1 is unlimited.
	PidsLimit *int64
	// HugePageLimit is the hugetlb limit in bytes by page size in bytes.
	// Non-nil, the machine's page sizes it omits are limited to 0, as
	// upstream's maybeSetHugetlb; nil leaves hugetlb as it is.
	HugePageLimit map[int64]int64
}

// HugePageLimits is upstream's: the hugepages-<size> resources of rl by
// page size in bytes.
func HugePageLimits(rl v1.ResourceList) map[int64]int64 {
	out := map[int64]int64{}
	for name, q := range rl {
		size, ok := strings.CutPrefix(string(name), v1.ResourceHugePagesPrefix)
		if !ok {
			continue
		}
		ps, err := resource.ParseQuantity(size)
		if err != nil {
			continue
		}
		out[ps.Value()] += q.Value()
	}
	return out
}

// MilliCPUToShares is upstream's: millicores to cpu.shares, within the
// kernel's bounds; 0 gives the minimum (not the kernel's default 1024).
func MilliCPUToShares(milliCPU int64) uint64 {
	if milliCPU == 0 {
		return MinShares
	}
	shares := (milliCPU * SharesPerCPU) / MilliCPUToCPU
	return uint64(min(max(shares, MinShares), MaxShares))
}

// MilliCPUToQuota is upstream's: millicores to a CFS quota over period
// (µs), at least 1 ms; 0 for no limit.
func MilliCPUToQuota(milliCPU int64, period int64) int64 {
	if milliCPU == 0 {
		return 0
	}
	return max((milliCPU*period)/MilliCPUToCPU, MinQuotaPeriod)
}

// ForPod is upstream's ResourceConfigForPod (without memory QoS and DRA):
// the pod cgroup's limits from the pod's effective requests and limits —
// containers, init containers and sidecars as resourcehelper.PodRequests
// and PodLimits aggregate them (pod-level resources when set), plus
// pod.Spec.Overhead. Guaranteed pods get shares, quota and memory limit;
// Burstable pods shares, and the quota (memory limit) only when every
// container sets a CPU (memory) limit; BestEffort pods the minimum shares.
// enforceCPULimits false (cpuCFSQuota: false) leaves the quota unlimited;
// cpuPeriod is cpuCFSQuotaPeriod in µs (0: QuotaPeriod), as upstream's.
// Callers pass the pod whose container resources are the ones to apply
// (for an in-place resize: the allocated ones).
func ForPod(pod *v1.Pod, enforceCPULimits bool, cpuPeriod uint64) ResourceConfig {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	cpuLimitsDeclared, memoryLimitsDeclared := true, true
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Cpu().IsZero() {
				cpuLimitsDeclared = false
			}
			if cs[i].Resources.Limits.Memory().IsZero() {
				memoryLimitsDeclared = false
			}
		}
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		if !pod.Spec.Resources.Limits.Cpu().IsZero() {
			cpuLimitsDeclared = true
		}
		if !pod.Spec.Resources.Limits.Memory().IsZero() {
			memoryLimitsDeclared = true
		}
	}
	var cpuRequests, cpuLimits, memoryLimits int64
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpuRequests = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceCPU]; ok {
		cpuLimits = q.MilliValue()
	}
	if q, ok := limits[v1.ResourceMemory]; ok {
		memoryLimits = q.Value()
	}
	shares := MilliCPUToShares(cpuRequests)
	period := cpuPeriod
	if period == 0 {
		period = QuotaPeriod
	}
	quota := MilliCPUToQuota(cpuLimits, int64(period))
	if !enforceCPULimits {
		quota = -1
	}
	var rc ResourceConfig
	switch QOSClass(pod) {
	case v1.PodQOSGuaranteed:
		rc.CPUShares, rc.CPUQuota, rc.CPUPeriod, rc.Memory = &shares, &quota, &period, &memoryLimits
	case v1.PodQOSBurstable:
		rc.CPUShares = &shares
		if cpuLimitsDeclared {
			rc.CPUQuota, rc.CPUPeriod = &quota, &period
		}
		if memoryLimitsDeclared {
			rc.Memory = &memoryLimits
		}
	default:
		minShares := uint64(MinShares)
		rc.CPUShares = &minShares
	}
	rc.HugePageLimit = HugePageLimits(reqs)
	return rc
}

// QoSConfigs is what upstream's qosContainerManager.UpdateCgroups sets on
// the QoS cgroups for the active pods: besteffort the minimum shares,
// burstable the shares of the sum of the Burstable pods' CPU requests
// (overhead included), so that the two compete for CPU in proportion to
// what their pods asked for. Guaranteed pods' cgroups sit in kubepods,
// whose shares come from node allocatable (NodeAllocatableConfig).
func QoSConfigs(pods []*v1.Pod) (burstable, bestEffort ResourceConfig) {
	var milli int64
	for _, pod := range pods {
		if QOSClass(pod) != v1.PodQOSBurstable {
			continue
		}
		if q, ok := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceCPU]; ok {
			milli += q.MilliValue()
		}
	}
	b, be := MilliCPUToShares(milli), uint64(MinShares)
	return ResourceConfig{CPUShares: &b}, ResourceConfig{CPUShares: &be}
}

// ResourcePIDs is the "pid" resource of kubeReserved and systemReserved
// (upstream's pidlimit.PIDs).
const ResourcePIDs v1.ResourceName = "pid"

// NodeAllocatableConfig is upstream's getCgroupConfig for a cgroup
// bounded by rl: memory limit, cpu shares and pids.max from rl's memory,
// cpu and pid. compressibleOnly (the -compressible enforcements) sets the
// shares alone.
func NodeAllocatableConfig(rl v1.ResourceList, compressibleOnly bool) ResourceConfig {
	var rc ResourceConfig
	if q, ok := rl[v1.ResourceCPU]; ok {
		s := MilliCPUToShares(q.MilliValue())
		rc.CPUShares = &s
	}
	if compressibleOnly {
		return rc
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		m := q.Value()
		rc.Memory = &m
	}
	if q, ok := rl[ResourcePIDs]; ok {
		p := q.Value()
		rc.PidsLimit = &p
	}
	if h := HugePageLimits(rl); len(h) > 0 {
		// Only when the capacity lists hugepages: an absent figure is not
		// a zero one.
		rc.HugePageLimit = h
	}
	return rc
}

// AllocatableAbsolute is upstream's getNodeAllocatableAbsolute: capacity
// minus systemReserved and kubeReserved, at least zero. Unlike the
// allocatable the node reports, the hard eviction thresholds are not
// subtracted: pods may use that memory, so that the eviction manager acts
// before the kubepods limit makes the kernel kill.
func AllocatableAbsolute(capacity, systemReserved, kubeReserved v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for k, v := range capacity {
		value := v.DeepCopy()
		if q, ok := systemReserved[k]; ok {
			value.Sub(q)
		}
		if q, ok := kubeReserved[k]; ok {
			value.Sub(q)
		}
		if value.Sign() < 0 {
			value = *resource.NewQuantity(0, value.Format)
		}
		out[k] = value
	}
	return out
}

// ParseReserved parses kubeReserved/systemReserved (name to quantity, as
// the configuration holds them; validated before).
func ParseReserved(m map[string]string) (v1.ResourceList, error) {
	out := v1.ResourceList{}
	for k, v := range m {
		q, err := resource.ParseQuantity(v)
		if err != nil {
			return nil, err
		}
		out[v1.ResourceName(k)] = q
	}
	return out, nil
}

func itoa(n int64) string  { return strconv.FormatInt(n, 10) }
func utoa(n uint64) string { return strconv.FormatUint(n, 10) }
