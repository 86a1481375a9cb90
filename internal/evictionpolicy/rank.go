package evictionpolicy

import (
	"cmp"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Reason is the reason of an evicted pod's status and of its event.
const Reason = "Evicted"

// Upstream's message formats.
const (
	nodeLowMessageFmt       = "The node was low on resource: %v. "
	nodeConditionMessageFmt = "The node had condition: %v. "
	thresholdMetMessageFmt  = "Threshold quantity: %v, available: %v. "
	containerMessageFmt     = "Container %s was using %s, request is %s, has larger consumption of %v. "
)

// PodStats finds a pod's statistics; false when the summary has none.
type PodStats func(pod *v1.Pod) (statsapi.PodStats, bool)

// StatsByUID indexes a summary's pods by UID.
func StatsByUID(pods []statsapi.PodStats) PodStats {
	byUID := make(map[string]statsapi.PodStats, len(pods))
	for _, p := range pods {
		byUID[p.PodRef.UID] = p
	}
	return func(pod *v1.Pod) (statsapi.PodStats, bool) {
		s, ok := byUID[string(pod.UID)]
		return s, ok
	}
}

// fsKind is which of a pod's filesystem usages counts for a signal.
type fsKind int

const (
	fsRoot fsKind = iota
	fsLogs
	fsLocalVolumes
)

// diskFs are the usages that count for a disk signal, as upstream's
// buildSignalToRankFunc: with a dedicated image filesystem, nodefs counts
// logs and local volumes and imagefs the writable layers; on one
// filesystem, everything counts for every disk signal.
func diskFs(s Signal, dedicatedImageFs bool) []fsKind {
	if !dedicatedImageFs {
		return []fsKind{fsRoot, fsLogs, fsLocalVolumes}
	}
	switch s {
	case SignalNodeFsAvailable, SignalNodeFsInodesFree:
		return []fsKind{fsLogs, fsLocalVolumes}
	}
	return []fsKind{fsRoot}
}

// Rank orders pods for eviction under pressure on signal s, the first to
// go first, as upstream's rank functions: for memory, pods using more than
// they request, then lower priority, then more usage above their request;
// for disk the same with ephemeral storage (or inodes); for PIDs, lower
// priority then more processes. Pods without statistics go first.
func Rank(s Signal, pods []*v1.Pod, stats PodStats, dedicatedImageFs bool) {
	var cmps []func(a, b *v1.Pod) int
	switch res := s.Resource(); {
	case res == v1.ResourceMemory:
		usage := func(p *v1.Pod) (resource.Quantity, bool) {
			st, ok := stats(p)
			if !ok {
				return resource.Quantity{}, false
			}
			return memoryUsage(st.Memory), true
		}
		cmps = []func(a, b *v1.Pod) int{exceedsRequests(usage, v1.ResourceMemory), byPriority, aboveRequests(usage, v1.ResourceMemory)}
	case res == ResourcePIDs:
		cmps = []func(a, b *v1.Pod) int{byPriority, func(a, b *v1.Pod) int {
			sa, oka := stats(a)
			sb, okb := stats(b)
			if !oka || !okb {
				return cmpBool(!oka, !okb)
			}
			return cmp.Compare(processes(sb), processes(sa))
		}}
	default:
		kinds := diskFs(s, dedicatedImageFs)
		usage := func(p *v1.Pod) (resource.Quantity, bool) {
			st, ok := stats(p)
			if !ok {
				return resource.Quantity{}, false
			}
			u := podDiskUsage(st, p, kinds)
			return u[res], true
		}
		cmps = []func(a, b *v1.Pod) int{exceedsRequests(usage, res), byPriority, aboveRequests(usage, v1.ResourceEphemeralStorage)}
	}
	slices.SortStableFunc(pods, func(a, b *v1.Pod) int {
		for _, c := range cmps {
			if r := c(a, b); r != 0 {
				return r
			}
		}
		return 0
	})
}

func request(p *v1.Pod, res v1.ResourceName) resource.Quantity {
	q, ok := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})[res]
	if !ok {
		return resource.Quantity{}
	}
	return q
}

// exceedsRequests puts first the pods using more of res than they
// request, and those without statistics before all.
func exceedsRequests(usage func(*v1.Pod) (resource.Quantity, bool), res v1.ResourceName) func(a, b *v1.Pod) int {
	return func(a, b *v1.Pod) int {
		ua, oka := usage(a)
		ub, okb := usage(b)
		if !oka || !okb {
			return cmpBool(!oka, !okb)
		}
		return cmpBool(ua.Cmp(request(a, res)) > 0, ub.Cmp(request(b, res)) > 0)
	}
}

// aboveRequests puts first the pods using the most above their request of
// res (upstream compares disk usage to the ephemeral-storage request even
// for inodes).
func aboveRequests(usage func(*v1.Pod) (resource.Quantity, bool), res v1.ResourceName) func(a, b *v1.Pod) int {
	return func(a, b *v1.Pod) int {
		ua, oka := usage(a)
		ub, okb := usage(b)
		if !oka || !okb {
			return cmpBool(!oka, !okb)
		}
		ua.Sub(request(a, res))
		ub.Sub(request(b, res))
		return ub.Cmp(ua)
	}
}

// byPriority puts lower priorities first.
func byPriority(a, b *v1.Pod) int {
	return cmp.Compare(corev1helpers.PodPriority(a), corev1helpers.PodPriority(b))
}

// cmpBool puts true first.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

func memoryUsage(m *statsapi.MemoryStats) resource.Quantity {
	if m == nil || m.WorkingSetBytes == nil {
		return *resource.NewQuantity(0, resource.BinarySI)
	}
	return *resource.NewQuantity(int64(*m.WorkingSetBytes), resource.BinarySI)
}

func processes(s statsapi.PodStats) uint64 {
	if s.ProcessStats == nil || s.ProcessStats.ProcessCount == nil {
		return 0
	}
	return *s.ProcessStats.ProcessCount
}

func fsUsage(f *statsapi.FsStats) (bytes, inodes int64) {
	if f == nil {
		return 0, 0
	}
	if f.UsedBytes != nil {
		bytes = int64(*f.UsedBytes)
	}
	if f.InodesUsed != nil {
		inodes = int64(*f.InodesUsed)
	}
	return bytes, inodes
}

// podDiskUsage is a pod's usage of ephemeral storage and inodes on the
// filesystems kinds, as upstream's podDiskUsage: its containers' writable
// layers and logs, and its local volumes (emptyDir but memory-backed,
// hostPath and the like, as upstream's localVolumeNames).
func podDiskUsage(st statsapi.PodStats, pod *v1.Pod, kinds []fsKind) v1.ResourceList {
	var bytes, inodes int64
	add := func(f *statsapi.FsStats) {
		b, i := fsUsage(f)
		bytes += b
		inodes += i
	}
	for _, c := range st.Containers {
		if slices.Contains(kinds, fsRoot) {
			add(c.Rootfs)
		}
		if slices.Contains(kinds, fsLogs) {
			add(c.Logs)
		}
	}
	if slices.Contains(kinds, fsLocalVolumes) {
		for _, name := range localVolumeNames(pod) {
			for _, vs := range st.VolumeStats {
				if vs.Name == name {
					add(&vs.FsStats)
					break
				}
			}
		}
	}
	return v1.ResourceList{
		v1.ResourceEphemeralStorage: *resource.NewQuantity(bytes, resource.BinarySI),
		ResourceInodes:              *resource.NewQuantity(inodes, resource.DecimalSI),
	}
}

// localVolumeNames are the pod's volumes on the node's filesystem, as
// upstream's: hostPath, and its IsLocalEphemeralVolume (gitRepo, configMap,
// emptyDir on the default medium).
func localVolumeNames(pod *v1.Pod) []string {
	var out []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.HostPath != nil,
			v.EmptyDir != nil && v.EmptyDir.Medium == v1.StorageMediumDefault,
			v.ConfigMap != nil, v.GitRepo != nil:
			out = append(out, v.Name)
		}
	}
	return out
}

// Message is upstream's eviction message for pod: the resource the node
// was low on, the threshold and what was available, and each container
// using more than it requests.
func Message(res v1.ResourceName, pod *v1.Pod, stats PodStats, thresholds []Threshold, obs Observations) string {
	msg := fmt.Sprintf(nodeLowMessageFmt, res)
	for _, t := range thresholds {
		if t.Signal.Resource() != res {
			continue
		}
		if o, ok := obs[t.Signal]; ok {
			q := t.Value.Of(o.Capacity)
			msg += fmt.Sprintf(thresholdMetMessageFmt, &q, &o.Available)
			break
		}
	}
	st, ok := stats(pod)
	if !ok {
		return msg
	}
	containers := append(slices.Clip(pod.Spec.Containers), pod.Spec.InitContainers...)
	for _, cs := range st.Containers {
		for _, c := range containers {
			if c.Name != cs.Name {
				continue
			}
			req := c.Resources.Requests[res]
			var usage *resource.Quantity
			switch res {
			case v1.ResourceEphemeralStorage:
				if cs.Rootfs != nil && cs.Rootfs.UsedBytes != nil && cs.Logs != nil && cs.Logs.UsedBytes != nil {
					usage = resource.NewQuantity(int64(*cs.Rootfs.UsedBytes+*cs.Logs.UsedBytes), resource.BinarySI)
				}
			case v1.ResourceMemory:
				if cs.Memory != nil && cs.Memory.WorkingSetBytes != nil {
					usage = resource.NewQuantity(int64(*cs.Memory.WorkingSetBytes), resource.BinarySI)
				}
			}
			if usage != nil && usage.Cmp(req) > 0 {
				msg += fmt.Sprintf(containerMessageFmt, c.Name, usage.String(), req.String(), res)
			}
			break
		}
	}
	return msg
}

// ConditionMessage is the message of a pod refused under pressure.
func ConditionMessage(conditions []v1.NodeConditionType) string {
	return fmt.Sprintf(nodeConditionMessageFmt, conditions)
}

// The annotations and priority of critical pods, as upstream's
// kubelet/types.
const (
	configSourceAnnotation = "kubernetes.io/config.source"
	configMirrorAnnotation = "kubernetes.io/config.mirror"
	systemCriticalPriority = 2 * 1000000000
)

// IsCritical reports whether pod must not be evicted, as upstream's
// IsCriticalPod: static and mirror pods, and pods of system-critical
// priority.
func IsCritical(pod *v1.Pod) bool {
	if src, ok := pod.Annotations[configSourceAnnotation]; ok && src != "api" {
		return true
	}
	if _, ok := pod.Annotations[configMirrorAnnotation]; ok {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}
