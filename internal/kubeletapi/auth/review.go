package auth

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
)

// reviewBackoff is upstream's DefaultAuthWebhookRetryBackoff: a review that
// fails transiently is tried 5 times over about 4 seconds.
var reviewBackoff = wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}

// reviewTimeout bounds one review with its retries, as upstream's token
// cache bounds a lookup: a hung API server must not hold requests forever.
const reviewTimeout = 30 * time.Second

// cacheSize bounds each cache, as upstream's webhook authorizer's LRU.
const cacheSize = 8192

// withRetry calls call until it succeeds, fails for good, or backoff runs
// out, as upstream's webhook.WithExponentialBackoff with DefaultShouldRetry.
func withRetry(ctx context.Context, backoff wait.Backoff, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, backoff, func(ctx context.Context) (bool, error) {
		last = call(ctx)
		switch {
		case last == nil:
			return true, nil
		case transient(last):
			return false, nil
		default:
			return false, last
		}
	})
	if last != nil {
		return last
	}
	return err
}

// transient is upstream's DefaultShouldRetry.
func transient(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, retry := apierrors.SuggestsClientDelay(err)
	return retry
}
