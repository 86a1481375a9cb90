package stats

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// PodLister lists the node's pods with their specs, as the pod-manager
// knows them.
type PodLister func(ctx context.Context) ([]v1.Pod, error)

// podSpecs looks the summary's pods up in what pods lists; nil when it
// cannot list them (the volumes are then named by their directories).
func (p *Provider) podSpecs(ctx context.Context, pods PodLister) PodSpecs {
	if pods == nil {
		return nil
	}
	list, err := pods(ctx)
	if err != nil {
		p.Log.Debug().Err(err).Msg("pods unknown: volumes named by their directories")
		return nil
	}
	byUID := make(map[string]*v1.Pod, len(list))
	for i := range list {
		byUID[string(list[i].UID)] = &list[i]
	}
	return func(uid string) *v1.Pod { return byUID[uid] }
}

// The volume stats metrics under upstream's names, labels and help texts,
// the latter prefixed with their stability level as component-base does.
var (
	volumeStatsLabels            = []string{"namespace", "persistentvolumeclaim"}
	volumeStatsCapacityBytesDesc = prometheus.NewDesc("kubelet_volume_stats_capacity_bytes",
		"[ALPHA] Capacity in bytes of the volume", volumeStatsLabels, nil)
	volumeStatsAvailableBytesDesc = prometheus.NewDesc("kubelet_volume_stats_available_bytes",
		"[ALPHA] Number of available bytes in the volume", volumeStatsLabels, nil)
	volumeStatsUsedBytesDesc = prometheus.NewDesc("kubelet_volume_stats_used_bytes",
		"[ALPHA] Number of used bytes in the volume", volumeStatsLabels, nil)
	volumeStatsInodesDesc = prometheus.NewDesc("kubelet_volume_stats_inodes",
		"[ALPHA] Maximum number of inodes in the volume", volumeStatsLabels, nil)
	volumeStatsInodesFreeDesc = prometheus.NewDesc("kubelet_volume_stats_inodes_free",
		"[ALPHA] Number of free inodes in the volume", volumeStatsLabels, nil)
	volumeStatsInodesUsedDesc = prometheus.NewDesc("kubelet_volume_stats_inodes_used",
		"[ALPHA] Number of used inodes in the volume", volumeStatsLabels, nil)
)

// VolumeStatsCollector is upstream's volume stats collector for one
// /metrics request: the figures of every PVC-backed volume of the pods
// pods lists, once per claim, as the summary gives them (measured at most
// once per volume stats period, each measure bounded).
func (p *Provider) VolumeStatsCollector(ctx context.Context, pods PodLister) prometheus.Collector {
	return volumeStatsCollector{ctx: ctx, p: p, pods: pods}
}

type volumeStatsCollector struct {
	ctx  context.Context
	p    *Provider
	pods PodLister
}

func (c volumeStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{volumeStatsCapacityBytesDesc, volumeStatsAvailableBytesDesc, volumeStatsUsedBytesDesc,
		volumeStatsInodesDesc, volumeStatsInodesFreeDesc, volumeStatsInodesUsedDesc} {
		ch <- d
	}
}

func (c volumeStatsCollector) Collect(ch chan<- prometheus.Metric) {
	c.p.init()
	list, err := c.pods(c.ctx)
	if err != nil {
		c.p.Log.Debug().Err(err).Msg("pods unknown: no volume stats metrics")
		return
	}
	now := c.p.now()
	seen := map[statsapi.PVCReference]bool{}
	for i := range list {
		pod := &list[i]
		if !hasClaim(pod) {
			continue
		}
		for _, v := range c.p.podVolumes(string(pod.UID), pod, now) {
			ref := v.stats.PVCRef
			if ref == nil || seen[*ref] {
				continue
			}
			seen[*ref] = true
			collectVolume(ch, *ref, v.stats.FsStats)
		}
	}
	c.p.forgetVolumes(now)
}

// collectVolume gives a PVC's series; a figure the summary leaves out
// (inodes of a filesystem without them) is 0, as upstream's.
func collectVolume(ch chan<- prometheus.Metric, ref statsapi.PVCReference, fs statsapi.FsStats) {
	labels := []string{ref.Namespace, ref.Name}
	for _, s := range []struct {
		desc *prometheus.Desc
		v    *uint64
	}{
		{volumeStatsCapacityBytesDesc, fs.CapacityBytes},
		{volumeStatsAvailableBytesDesc, fs.AvailableBytes},
		{volumeStatsUsedBytesDesc, fs.UsedBytes},
		{volumeStatsInodesDesc, fs.Inodes},
		{volumeStatsInodesFreeDesc, fs.InodesFree},
		{volumeStatsInodesUsedDesc, fs.InodesUsed},
	} {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, float64(deref(s.v)), labels...)
	}
}

// hasClaim reports whether a volume of the pod is backed by a claim.
func hasClaim(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if claimName(pod, &pod.Spec.Volumes[i]) != "" {
			return true
		}
	}
	return false
}
