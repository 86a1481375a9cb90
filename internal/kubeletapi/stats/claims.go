package stats

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/volume"
)

// ClaimReader reads a PersistentVolumeClaim; volume.Sources has it.
type ClaimReader interface {
	PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
}

// claimTimeout bounds the read of one claim, so that an API server that
// does not answer costs a request seconds only, once per volume stats
// period (a failure is kept as long as figures are).
const claimTimeout = 5 * time.Second

// claimSample is the PV a pod's claim was bound to when read.
type claimSample struct {
	at   time.Time
	pv   string // "" when the claim could not be read or is not bound
	used time.Time
}

// claimCache keeps the PV of each pod's claims by pod UID and claim name.
// The claim of a volume the pod has mounted stays bound to its PV (the
// pvc-protection finalizer holds it while the pod uses it), so a bound
// one is read once per pod; one that could not be read is read again
// after the volume stats period.
type claimCache struct {
	mu      sync.Mutex
	samples map[string]claimSample
}

// boundVolumes are the PVs the pod's claims are bound to (claim name → PV
// name), read when the pod has a CSI or local volume directory, whose name
// is its PV's.
func (p *Provider) boundVolumes(pod *v1.Pod, dirs []volume.PodVolume, now time.Time) map[string]string {
	if pod == nil || p.Claims == nil {
		return nil
	}
	byPV := false
	for _, d := range dirs {
		byPV = byPV || d.Plugin == volume.PluginCSI || d.Plugin == volume.PluginLocal
	}
	if !byPV {
		return nil
	}
	out := map[string]string{}
	for i := range pod.Spec.Volumes {
		claim := claimName(pod, &pod.Spec.Volumes[i])
		if claim == "" {
			continue
		}
		if pv := p.boundPV(pod, claim, now); pv != "" {
			out[claim] = pv
		}
	}
	return out
}

// boundPV is the PV the pod's claim is bound to, from the cache or read.
func (p *Provider) boundPV(pod *v1.Pod, claim string, now time.Time) string {
	key := string(pod.UID) + "/" + claim
	c := &p.claims
	c.mu.Lock()
	s, ok := c.samples[key]
	c.mu.Unlock()
	if !ok || (s.pv == "" && now.Sub(s.at) >= p.volumeStatsPeriod()) {
		s = claimSample{at: now}
		ctx, cancel := context.WithTimeout(context.Background(), claimTimeout)
		pvc, err := p.Claims.PersistentVolumeClaim(ctx, pod.Namespace, claim)
		cancel()
		if err != nil {
			p.Log.Debug().Err(err).Str("claim", pod.Namespace+"/"+claim).Msg("claim unread: its volume is named by its directory")
		} else if pvc.Status.Phase == v1.ClaimBound {
			s.pv = pvc.Spec.VolumeName
		}
	}
	s.used = now
	c.mu.Lock()
	if c.samples == nil {
		c.samples = map[string]claimSample{}
	}
	c.samples[key] = s
	c.mu.Unlock()
	return s.pv
}

// forget drops the claims no request read since cutoff.
func (c *claimCache) forget(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for key, s := range c.samples {
		if s.used.Before(cutoff) {
			delete(c.samples, key)
		}
	}
}
