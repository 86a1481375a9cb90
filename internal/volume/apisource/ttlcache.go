package apisource

import (
	"context"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// The values of configMapAndSecretChangeDetectionStrategy.
const (
	// StrategyWatch keeps a watch per referenced object (the default).
	StrategyWatch = "Watch"
	// StrategyCache reads each object with a GET at most once per
	// cacheTTL, and again when a pod that references it registers.
	StrategyCache = "Cache"
	// StrategyGet reads each object with a GET every time.
	StrategyGet = "Get"
)

// cacheTTL is upstream's default TTL of its cache-based manager.
const cacheTTL = time.Minute

// ttlCache is upstream's cache-based object store (pkg/kubelet/util/manager)
// without the Node's TTL annotation: an object read with a GET is reused for
// cacheTTL; a registration empties the object's entry so that a new pod
// sees it fresh; an error that is not NotFound keeps what was read before.
type ttlCache struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	items map[objectKey]*cachedObject
}

type cachedObject struct {
	obj  runtime.Object
	err  error
	read time.Time
}

func newTTLCache(clk clock.PassiveClock) *ttlCache {
	return &ttlCache{clock: clk, items: map[objectKey]*cachedObject{}}
}

// invalidate makes the next get read the object again.
func (c *ttlCache) invalidate(key objectKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.items, key)
}

// get returns the object from the cache while fresh, else reads it with
// read and keeps the answer.
func (c *ttlCache) get(ctx context.Context, key objectKey, read func(context.Context) (runtime.Object, error)) (runtime.Object, error) {
	c.mu.Lock()
	item := c.items[key]
	c.mu.Unlock()
	now := c.clock.Now()
	if item != nil && item.err == nil && now.Before(item.read.Add(cacheTTL)) {
		return item.obj, nil
	}
	obj, err := read(ctx)
	if err != nil && !apierrors.IsNotFound(err) {
		if item == nil || item.obj == nil {
			return nil, err
		}
		return item.obj, nil
	}
	c.mu.Lock()
	c.items[key] = &cachedObject{obj: obj, err: err, read: now}
	c.mu.Unlock()
	return obj, err
}
