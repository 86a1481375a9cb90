package stats

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/volume"
)

// csiStatsTimeout bounds the calls that measure one CSI volume. Upstream
// measures in the background with its csiTimeout (two minutes); here a
// request waits for the measure, so a hung driver must cost it seconds
// only, and no more than once per volume stats period (its failure is
// cached as figures are).
const csiStatsTimeout = 5 * time.Second

// defaultVolumeStatsPeriod is how long a volume's figures are reused when
// Provider.VolumeStatsPeriod is zero: upstream's default volume stats
// aggregation period. Walking a large emptyDir on every request would cost
// a request the time of a du.
const defaultVolumeStatsPeriod = time.Minute

// volumeStatsPeriod is how long a volume's figures are reused; negative:
// volumes are not measured at all, as upstream with a period of zero.
func (p *Provider) volumeStatsPeriod() time.Duration {
	if p.VolumeStatsPeriod == 0 {
		return defaultVolumeStatsPeriod
	}
	return p.VolumeStatsPeriod
}

// volumeSample is one volume's figures, as measured at a time.
type volumeSample struct {
	at        time.Time
	metrics   volume.Metrics
	ephemeral bool
	// failed: the volume could not be measured at that time; it is left
	// out until the period ends, as upstream's calculator leaves it out
	// until its next round, rather than tried again at every request.
	failed bool
	used   time.Time // last request that read it
}

// volumeCache keeps each volume's last figures by its path; a volume no
// request has read for a while (its pod gone) is dropped.
type volumeCache struct {
	mu      sync.Mutex
	samples map[string]volumeSample
}

// podVolume is one of a pod's volumes in a summary, and whether its usage
// counts in the pod's ephemeral storage.
type podVolume struct {
	stats     statsapi.VolumeStats
	ephemeral bool
}

// podVolumes are the pod's volumes as upstream's volume stats calculator
// lists them: every volume set up under ROOT/pods/UID/volumes, measured as
// upstream's plugin for it measures (volume.PodVolume.Metrics), named as
// nameVolume names it from the pod's spec (nil: by its directory). The
// ephemeral ones come first, then the persistent ones, each sorted by
// name, as upstream appends them. A volume that cannot be measured is left
// out, as upstream's. The volumes are measured concurrently, so that a
// slow one (a hung CSI driver) holds the others no longer than itself.
func (p *Provider) podVolumes(uid string, pod *v1.Pod, now time.Time) []podVolume {
	if p.RootDir == "" || p.volumeStatsPeriod() < 0 {
		return nil
	}
	vols, err := volume.PodVolumes(p.RootDir, types.UID(uid))
	if err != nil {
		p.Log.Debug().Err(err).Str("pod", uid).Msg("pod volumes left out")
		return nil
	}
	samples := make([]volumeSample, len(vols))
	var boundPV map[string]string
	var wg sync.WaitGroup
	wg.Go(func() { boundPV = p.boundVolumes(pod, vols, now) })
	for i, v := range vols {
		wg.Go(func() { samples[i] = p.volumeSample(v, now) })
	}
	wg.Wait()
	out := make([]podVolume, 0, len(vols))
	for i, v := range vols {
		s := samples[i]
		if s.failed {
			continue
		}
		m := s.metrics
		fs := statsapi.FsStats{
			Time:           metaTime(s.at),
			AvailableBytes: ptrTo(m.Available),
			CapacityBytes:  ptrTo(m.Capacity),
			UsedBytes:      ptrTo(m.Used),
			InodesUsed:     ptrTo(m.InodesUsed),
		}
		// Filesystems without inodes (btrfs reports 0) have none to tell.
		if m.Inodes > 0 {
			fs.Inodes, fs.InodesFree = ptrTo(m.Inodes), ptrTo(m.InodesFree)
		}
		ref := nameVolume(pod, boundPV, v)
		ephemeral := v.Ephemeral(m)
		if ref.ephemeral != nil {
			ephemeral = *ref.ephemeral
		}
		out = append(out, podVolume{stats: statsapi.VolumeStats{Name: ref.name, PVCRef: ref.pvcRef, FsStats: fs}, ephemeral: ephemeral})
	}
	slices.SortFunc(out, func(a, b podVolume) int {
		// Ephemeral (true) first.
		return cmp.Or(cmp.Compare(b2i(b.ephemeral), b2i(a.ephemeral)), cmp.Compare(a.stats.Name, b.stats.Name))
	})
	return out
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// volumeSample is the volume's figures (or its failure), measured again
// when the cached ones are older than the volume stats period.
func (p *Provider) volumeSample(v volume.PodVolume, now time.Time) volumeSample {
	c := &p.volumes
	c.mu.Lock()
	s, ok := c.samples[v.Path]
	c.mu.Unlock()
	if !ok || now.Sub(s.at) >= p.volumeStatsPeriod() {
		m, err := p.measure(v)
		switch {
		case errors.Is(err, errStatsNotSupported):
			// Expected, as upstream, which logs nothing for it.
			s = volumeSample{at: now, failed: true}
		case err != nil:
			p.Log.Debug().Err(err).Str("volume", v.Path).Msg("volume figures left out")
			s = volumeSample{at: now, failed: true}
		default:
			s = volumeSample{at: now, metrics: m, ephemeral: v.Ephemeral(m)}
		}
	}
	s.used = now
	c.mu.Lock()
	if c.samples == nil {
		c.samples = map[string]volumeSample{}
	}
	c.samples[v.Path] = s
	c.mu.Unlock()
	return s
}

// errStatsNotSupported: the volume's driver does not give its figures.
var errStatsNotSupported = errors.New("volume stats not supported")

// measure measures the volume as upstream's plugin for it does: a CSI
// volume by its driver, every other one on disk.
func (p *Provider) measure(v volume.PodVolume) (volume.Metrics, error) {
	if v.Plugin != volume.PluginCSI {
		return v.Metrics()
	}
	return p.measureCSI(v)
}

// measureCSI is upstream's metricsCsi.GetMetrics: the registered driver
// that published the volume is asked for its figures, with the volume's
// handle and publish target, when its node service has GET_VOLUME_STATS.
// Without the capability, or without the driver registered, the volume
// is left out.
func (p *Provider) measureCSI(v volume.PodVolume) (volume.Metrics, error) {
	pub, err := v.CSI()
	if err != nil {
		return volume.Metrics{}, err
	}
	var drv registry.Driver
	ok := false
	if p.CSIDrivers != nil {
		drv, ok = p.CSIDrivers.Driver(pub.Driver)
	}
	if !ok {
		return volume.Metrics{}, fmt.Errorf("driver name %s not found in the list of registered CSI drivers", pub.Driver)
	}
	timeout := p.csiStatsTimeout
	if timeout == 0 {
		timeout = csiStatsTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	caps, err := csi.NodeGetCapabilities(ctx, drv.Endpoint)
	if err != nil {
		return volume.Metrics{}, err
	}
	if !caps.GetVolumeStats {
		return volume.Metrics{}, fmt.Errorf("driver %s: %w", pub.Driver, errStatsNotSupported)
	}
	st, err := csi.NodeGetVolumeStats(ctx, drv.Endpoint, pub.Handle, pub.Target)
	if err != nil {
		return volume.Metrics{}, err
	}
	return volume.Metrics{Used: st.Used, Capacity: st.Capacity, Available: st.Available,
		InodesUsed: st.InodesUsed, Inodes: st.Inodes, InodesFree: st.InodesFree}, nil
}

// forgetVolumes drops the figures and claims of volumes no request read
// for two volume stats periods: their pods are gone.
func (p *Provider) forgetVolumes(now time.Time) {
	cutoff := now.Add(-2 * p.volumeStatsPeriod())
	p.volumes.forget(cutoff)
	p.claims.forget(cutoff)
}

// forget drops the figures of volumes no request read since cutoff.
func (c *volumeCache) forget(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for path, s := range c.samples {
		if s.used.Before(cutoff) {
			delete(c.samples, path)
		}
	}
}

func volumeStats(vols []podVolume) []statsapi.VolumeStats {
	if len(vols) == 0 {
		return nil
	}
	out := make([]statsapi.VolumeStats, len(vols))
	for i, v := range vols {
		out[i] = v.stats
	}
	return out
}
