package podruntime

import (
	"sync"
	"time"

	"github.com/actorlet/actorlet/internal/retry"
)

// Backoff delays, per key, the retries of something that keeps failing: the
// restarts of a crashing container or the pulls of an image. Each key is a
// retry.Backoff: each failure doubles the delay, from the initial one up to
// the maximum. It is safe for concurrent use because a Backoff is shared by the workers of
// all pods.
type Backoff struct {
	// policy gives each new key its delays and stable period: how long
	// after the last failure a new failure counts as the first one again
	// (upstream resets crash-loop backoff after a container ran for 10
	// minutes).
	policy retry.Backoff
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*retry.Backoff
}

// Upstream kubelet defaults (pkg/kubelet/kubelet.go).
const (
	InitialCrashLoopBackoff          = 10 * time.Second
	DefaultMaxContainerRestartPeriod = 5 * time.Minute
	crashLoopStablePeriod            = 10 * time.Minute
	InitialImagePullBackoff          = 10 * time.Second
	MaxImagePullBackoff              = 300 * time.Second
)

// NewBackoff returns a backoff doubling from initial to max (initial above
// max: max), that forgets a key once stable has passed between two failures
// (0: never). now nil means time.Now.
func NewBackoff(initial, max, stable time.Duration, now func() time.Time) *Backoff {
	if now == nil {
		now = time.Now
	}
	return &Backoff{policy: retry.Backoff{Initial: initial, Max: max, Stable: stable}, now: now, entries: map[string]*retry.Backoff{}}
}

// NewCrashLoopBackoff is the container restart backoff: 10 s doubling to
// maxContainerRestartPeriod (0: 5 min, the kubelet's
// crashLoopBackOff.maxContainerRestartPeriod), reset when a container ran
// for 10 minutes. A maximum below 10 s also lowers the initial delay, as
// upstream does.
func NewCrashLoopBackoff(maxContainerRestartPeriod time.Duration, now func() time.Time) *Backoff {
	if maxContainerRestartPeriod <= 0 {
		maxContainerRestartPeriod = DefaultMaxContainerRestartPeriod
	}
	return NewBackoff(InitialCrashLoopBackoff, maxContainerRestartPeriod, crashLoopStablePeriod, now)
}

// NewImagePullBackoff is the image pull backoff: 10 s doubling to 300 s,
// reset after twice the maximum without a failure (upstream's default).
func NewImagePullBackoff(now func() time.Time) *Backoff {
	return NewBackoff(InitialImagePullBackoff, MaxImagePullBackoff, 2*MaxImagePullBackoff, now)
}

// Now is the backoff's clock.
func (b *Backoff) Now() time.Time { return b.now() }

// Next records a failure at eventTime (a container's finish time, or now for
// a pull) and lengthens the key's delay.
func (b *Backoff) Next(key string, eventTime time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		policy := b.policy
		e = &policy
		b.entries[key] = e
	}
	e.Fail(eventTime, b.now())
}

// Get is the key's current delay, 0 when it has none.
func (b *Backoff) Get(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if e, ok := b.entries[key]; ok {
		return e.Delay()
	}
	return 0
}

// InBackoffSince reports whether the key's delay, counted from eventTime
// (when the container finished), has not passed yet, and what is left.
func (b *Backoff) InBackoffSince(key string, eventTime time.Time) (bool, time.Duration) {
	return b.inBackoffAt(key, eventTime, b.now())
}

func (b *Backoff) inBackoffAt(key string, eventTime, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok || e.Expired(eventTime) {
		return false, 0
	}
	left := e.Delay() - now.Sub(eventTime)
	return left > 0, max(left, 0)
}

// InBackoffSinceUpdate reports whether the key's delay, counted from its
// last failure, has not passed yet, and what is left (image pulls).
func (b *Backoff) InBackoffSinceUpdate(key string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.entries[key]
	if !ok {
		return false, 0
	}
	now := b.now()
	if e.Expired(now) {
		return false, 0
	}
	left := e.Delay() - now.Sub(e.Last())
	return left > 0, max(left, 0)
}

// Reset forgets the key.
func (b *Backoff) Reset(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.entries, key)
}

// GC forgets the keys whose last failure is older than the stable period, so
// that pods long gone do not keep entries.
func (b *Backoff) GC() {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	for k, e := range b.entries {
		if e.Expired(now) {
			delete(b.entries, k)
		}
	}
}
