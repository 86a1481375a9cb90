package stats

import (
	"sync"
	"time"
)

// minRateInterval is the shortest interval a CPU rate is computed over.
// Upstream computes it only from the eviction manager's 10 s loop; here
// every request may, and two requests a few milliseconds apart would give
// a rate made of scheduling noise, so a sample younger than this keeps the
// previous rate.
const minRateInterval = time.Second

// rateRetention is how long a sample of a container or cgroup that is no
// longer reported is kept, as upstream's defaultCachePeriod.
const rateRetention = 10 * time.Minute

// cpuRates turns cumulative CPU times (core-nanoseconds) into rates
// (nanocores) from the previous sample kept per key: a container ID, a pod
// cgroup, the node. Safe for concurrent use.
type cpuRates struct {
	mu   sync.Mutex
	last map[string]cpuSample
}

type cpuSample struct {
	at    time.Time
	usage uint64
	rate  *uint64 // nil until two samples were far enough apart
}

func newCPURates() *cpuRates { return &cpuRates{last: map[string]cpuSample{}} }

// observe records a sample of key's cumulative usage at the time at and
// returns its rate in nanocores, or nil when there is none yet: first
// sample, or a counter that went backwards (a new cgroup under the same
// key). A sample less than minRateInterval after the kept one returns the
// kept rate and is dropped, so that the kept one ages into a valid base.
func (c *cpuRates) observe(key string, at time.Time, usage uint64) *uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.last[key]
	if !ok || usage < prev.usage || at.Before(prev.at) {
		c.last[key] = cpuSample{at: at, usage: usage}
		return nil
	}
	interval := at.Sub(prev.at)
	if interval < minRateInterval {
		return copyPtr(prev.rate)
	}
	rate := uint64(float64(usage-prev.usage) / float64(interval) * float64(time.Second))
	c.last[key] = cpuSample{at: at, usage: usage, rate: &rate}
	return ptrTo(rate)
}

// forget drops the samples taken before cutoff: their containers and pods
// are gone, or they would have been sampled since.
func (c *cpuRates) forget(cutoff time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, s := range c.last {
		if s.at.Before(cutoff) {
			delete(c.last, k)
		}
	}
}

func copyPtr(p *uint64) *uint64 {
	if p == nil {
		return nil
	}
	return ptrTo(*p)
}
