// Package retry holds actorlet's one backoff: the delay before trying again
// something that keeps failing. The supervision strategy (actor restarts),
// podruntime's per-key backoffs (container restarts, image pulls) and the
// status-reporter (API writes) all double and cap their delays with it.
package retry

import "time"

// Backoff is the delay before the next try of one thing that keeps failing:
// Initial after the first failure, doubled by each further failure in a
// row, never more than Max. A failure more than Stable after the previous
// one counts as the first again (upstream's flowcontrol.Backoff); with
// Stable 0 only Reset starts over.
//
// Backoff reads no clock: the caller gives the time of each failure, so
// that tests and callers with a clock of their own decide what now is. It
// is not safe for concurrent use.
type Backoff struct {
	Initial, Max, Stable time.Duration

	failures int
	last     time.Time
}

// After is the delay after n failures in a row: Initial doubled n-1 times,
// capped at Max. n below 1 counts as 1.
func (b Backoff) After(n int) time.Duration {
	d := b.Initial
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Fail records a failure that happened at at, noted at now, and returns the
// delay before the next try. Whether it starts over is decided by at (a
// container's finish time, say), while now is remembered as the time of
// this failure, as upstream's crash-loop backoff does.
func (b *Backoff) Fail(at, now time.Time) time.Duration {
	if b.Expired(at) {
		b.failures = 0
	}
	b.failures++
	b.last = now
	return b.Delay()
}

// Expired reports whether a failure at t would count as the first again:
// none was recorded, or Stable is set and t comes more than Stable after
// the last one.
func (b *Backoff) Expired(t time.Time) bool {
	return b.failures == 0 || (b.Stable > 0 && t.Sub(b.last) > b.Stable)
}

// Delay is the delay after the failures recorded so far; 0 with none.
func (b *Backoff) Delay() time.Duration {
	if b.failures == 0 {
		return 0
	}
	return b.After(b.failures)
}

// Last is when the last failure was noted (the now given to Fail).
func (b *Backoff) Last() time.Time { return b.last }

// Reset forgets the failures: the next one counts as the first.
func (b *Backoff) Reset() { b.failures, b.last = 0, time.Time{} }
