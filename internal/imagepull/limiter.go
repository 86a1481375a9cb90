package imagepull

import (
	"context"
	"errors"

	"k8s.io/client-go/util/flowcontrol"
)

// ErrQPSExceeded is upstream's error for a pull refused by
// registryPullQPS: the pull fails, and is retried after its back-off.
var ErrQPSExceeded = errors.New("pull QPS exceeded")

// Limiter bounds the node's image pulls as upstream's image manager
// does: serializeImagePulls lets one pull run at a time,
// maxParallelImagePulls that many (unset: any number), and when a pull's
// turn comes, registryPullQPS and registryBurst's token bucket refuses
// it rather than delay it. A nil Limiter bounds nothing. It is safe for
// concurrent use.
type Limiter struct {
	slots chan struct{} // nil: no bound
	qps   flowcontrol.RateLimiter
}

// NewLimiter makes the limiter of a validated configuration; qps 0 turns
// the token bucket off, as upstream.
func NewLimiter(serialize bool, maxParallel *int32, qps, burst int32) *Limiter {
	l := &Limiter{}
	switch {
	case serialize:
		l.slots = make(chan struct{}, 1)
	case maxParallel != nil && *maxParallel > 0:
		l.slots = make(chan struct{}, *maxParallel)
	}
	if qps > 0 {
		l.qps = flowcontrol.NewTokenBucketRateLimiter(float32(qps), int(burst))
	}
	return l
}

// Acquire waits for the pull's turn and takes a token from the bucket.
// The pull runs until release is called. It fails, having released its
// turn, when ctx ends first or with ErrQPSExceeded.
func (l *Limiter) Acquire(ctx context.Context) (release func(), err error) {
	if l == nil {
		return func() {}, nil
	}
	release = func() {}
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
			release = func() { <-l.slots }
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if l.qps != nil && !l.qps.TryAccept() {
		release()
		return nil, ErrQPSExceeded
	}
	return release, nil
}
