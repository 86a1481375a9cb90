package evictionpolicy

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Upstream's messages of the local storage evictions.
const (
	containerEphemeralStorageMessageFmt = "Container %s exceeded its local ephemeral storage limit %q. "
	podEphemeralStorageMessageFmt       = "Pod ephemeral local storage usage exceeds the total limit of containers %s. "
	emptyDirMessageFmt                  = "Usage of EmptyDir volume %q exceeds the limit %q. "
)

// Signals of the local storage evictions, as upstream's metrics name them.
const (
	SignalEmptyDirFsLimit           Signal = "emptydirfs.limit"
	SignalEphemeralPodFsLimit       Signal = "ephemeralpodfs.limit"
	SignalEphemeralContainerFsLimit Signal = "ephemeralcontainerfs.limit"
)

// Violation is a pod using more local storage than it may: it is evicted
// at once (localStorageCapacityIsolation).
type Violation struct {
	Pod     *v1.Pod
	Signal  Signal
	Message string
}

// LocalStorageViolations are the pods over a local storage limit, as
// upstream's localStorageEviction, each once, checked in its order: an
// emptyDir over its sizeLimit, the pod over the sum of its containers'
// ephemeral-storage limits, a container (or restartable init container)
// over its own (its logs, and its writable layer unless the images have a
// filesystem of their own). Pods without statistics are skipped.
func LocalStorageViolations(pods []*v1.Pod, stats PodStats, dedicatedImageFs bool) []Violation {
	var out []Violation
	for _, pod := range pods {
		st, ok := stats(pod)
		if !ok {
			continue
		}
		if v, ok := emptyDirViolation(pod, st.VolumeStats); ok {
			out = append(out, v)
			continue
		}
		if limit, ok := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})[v1.ResourceEphemeralStorage]; ok {
			used := resource.NewQuantity(0, resource.BinarySI)
			if st.EphemeralStorage != nil && st.EphemeralStorage.UsedBytes != nil {
				used = resource.NewQuantity(int64(*st.EphemeralStorage.UsedBytes), resource.BinarySI)
			}
			if used.Cmp(limit) > 0 {
				out = append(out, Violation{pod, SignalEphemeralPodFsLimit, fmt.Sprintf(podEphemeralStorageMessageFmt, limit.String())})
				continue
			}
		}
		limits := map[string]resource.Quantity{}
		for _, c := range pod.Spec.Containers {
			if l, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && !l.IsZero() {
				limits[c.Name] = l
			}
		}
		for _, c := range pod.Spec.InitContainers {
			if c.RestartPolicy == nil || *c.RestartPolicy != v1.ContainerRestartPolicyAlways {
				continue
			}
			if l, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]; ok && !l.IsZero() {
				limits[c.Name] = l
			}
		}
		for _, cs := range st.Containers {
			limit, ok := limits[cs.Name]
			if !ok {
				continue
			}
			b, _ := fsUsage(cs.Logs)
			if !dedicatedImageFs {
				r, _ := fsUsage(cs.Rootfs)
				b += r
			}
			if resource.NewQuantity(b, resource.BinarySI).Cmp(limit) > 0 {
				out = append(out, Violation{pod, SignalEphemeralContainerFsLimit, fmt.Sprintf(containerEphemeralStorageMessageFmt, cs.Name, limit.String())})
				break
			}
		}
	}
	return out
}

func emptyDirViolation(pod *v1.Pod, volumes []statsapi.VolumeStats) (Violation, bool) {
	used := map[string]int64{}
	for _, vs := range volumes {
		if vs.UsedBytes != nil {
			used[vs.Name] = int64(*vs.UsedBytes)
		}
	}
	for _, vol := range pod.Spec.Volumes {
		ed := vol.EmptyDir
		// A memory-backed emptyDir is a tmpfs of its size limit: the
		// kernel enforces it.
		if ed == nil || ed.Medium == v1.StorageMediumMemory || ed.SizeLimit == nil || ed.SizeLimit.Sign() != 1 {
			continue
		}
		u, ok := used[vol.Name]
		if ok && ed.SizeLimit.Cmp(*resource.NewQuantity(u, resource.BinarySI)) < 0 {
			return Violation{pod, SignalEmptyDirFsLimit, fmt.Sprintf(emptyDirMessageFmt, vol.Name, ed.SizeLimit.String())}, true
		}
	}
	return Violation{}, false
}
