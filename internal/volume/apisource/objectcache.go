package apisource

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
)

// kindAPI is how one kind of watched object is read.
type kindAPI struct {
	resource    schema.GroupResource
	newObject   func() runtime.Object
	isImmutable func(runtime.Object) bool
	get         func(ctx context.Context, namespace, name string) (runtime.Object, error)
	list        func(ctx context.Context, namespace string, opts metav1.ListOptions) (runtime.Object, error)
	watch       func(ctx context.Context, namespace string, opts metav1.ListOptions) (watch.Interface, error)
}

func kindAPIs(c kubernetes.Interface) map[string]*kindAPI {
	return map[string]*kindAPI{
		KindConfigMap: newKindAPI("configmap", func() *v1.ConfigMap { return &v1.ConfigMap{} },
			func(cm *v1.ConfigMap) *bool { return cm.Immutable },
			func(ns string) typedClient[*v1.ConfigMap, *v1.ConfigMapList] { return c.CoreV1().ConfigMaps(ns) }),
		KindSecret: newKindAPI("secret", func() *v1.Secret { return &v1.Secret{} },
			func(s *v1.Secret) *bool { return s.Immutable },
			func(ns string) typedClient[*v1.Secret, *v1.SecretList] { return c.CoreV1().Secrets(ns) }),
	}
}

// typedClient is what a kind's typed client in a namespace offers.
type typedClient[T, L runtime.Object] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

func newKindAPI[T, L runtime.Object](resource string, newObject func() T, immutable func(T) *bool, client func(namespace string) typedClient[T, L]) *kindAPI {
	return &kindAPI{
		resource:  v1.Resource(resource),
		newObject: func() runtime.Object { return newObject() },
		isImmutable: func(o runtime.Object) bool {
			t, ok := o.(T)
			return ok && ptr.Deref(immutable(t), false)
		},
		get: func(ctx context.Context, ns, name string) (runtime.Object, error) {
			return client(ns).Get(ctx, name, metav1.GetOptions{})
		},
		list: func(ctx context.Context, ns string, o metav1.ListOptions) (runtime.Object, error) {
			return client(ns).List(ctx, o)
		},
		watch: func(ctx context.Context, ns string, o metav1.ListOptions) (watch.Interface, error) {
			return client(ns).Watch(ctx, o)
		},
	}
}

// objectCache keeps one watch per object that registered pods reference,
// as upstream's watch-based manager (pkg/kubelet/util/manager).
type objectCache struct {
	ctx      context.Context // stops every watch when done
	client   kubernetes.Interface
	kinds    map[string]*kindAPI
	onChange func(kind, namespace, name string)

	mu    sync.Mutex
	items map[objectKey]*watchedObject
}

func newObjectCache(ctx context.Context, client kubernetes.Interface, onChange func(kind, namespace, name string)) *objectCache {
	if onChange == nil {
		onChange = func(string, string, string) {}
	}
	return &objectCache{ctx: ctx, client: client, kinds: kindAPIs(client), onChange: onChange, items: map[objectKey]*watchedObject{}}
}

// addReference counts pod's reference to the object, and starts the
// object's watch on the first one. It does not wait for the API server:
// the first get does.
func (c *objectCache) addReference(key objectKey, pod types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.items[key]
	if !ok {
		item = c.startWatch(key)
		c.items[key] = item
	}
	item.pods[pod] = struct{}{}
}

// deleteReference drops pod's reference, and stops the object's watch
// after the last one.
func (c *objectCache) deleteReference(key objectKey, pod types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.items[key]
	if !ok {
		return
	}
	delete(item.pods, pod)
	if len(item.pods) == 0 {
		item.stop()
		delete(c.items, key)
	}
}

// watching reports the objects watched now, for tests.
func (c *objectCache) watching() map[objectKey]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[objectKey]int, len(c.items))
	for k, item := range c.items {
		out[k] = len(item.pods)
	}
	return out
}

func (c *objectCache) startWatch(key objectKey) *watchedObject {
	api := c.kinds[key.kind]
	ctx, cancel := context.WithCancel(c.ctx)
	item := &watchedObject{key: key, api: api, pods: map[types.UID]struct{}{}, cancel: cancel, wake: make(chan struct{}), onChange: c.onChange}
	selector := fields.OneTermEqualSelector("metadata.name", key.name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			obj, err := api.list(ctx, key.namespace, o)
			if err != nil {
				item.listFailed(err)
			}
			return obj, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return api.watch(ctx, key.namespace, o)
		},
	}
	r := cache.NewReflectorWithOptions(cache.ToListWatcherWithWatchListSemantics(lw, c.client), api.newObject(), item,
		cache.ReflectorOptions{
			Name: fmt.Sprintf("%s %s/%s", key.kind, key.namespace, key.name),
			// As upstream: a longer watch than the default 5 min, so that
			// a node with many referenced objects does not re-establish
			// its watches too often.
			MinWatchTimeout: 30 * time.Minute,
		})
	item.done = make(chan struct{})
	go func() {
		defer close(item.done)
		r.RunWithContext(ctx)
	}()
	return item
}

// get returns the object from its watch, waiting (within ctx) for the
// watch's first list. An object no registered pod references is read with
// a plain GET: upstream answers "object not registered" there, but a pod
// being set up before its registration (or after its last reference went)
// still gets its object.
func (c *objectCache) get(ctx context.Context, kind, namespace, name string) (runtime.Object, error) {
	key := objectKey{kind, namespace, name}
	c.mu.Lock()
	item := c.items[key]
	c.mu.Unlock()
	if item != nil {
		obj, err := item.get(ctx)
		if !errors.Is(err, errStopped) {
			return obj, err
		}
	}
	api := c.kinds[kind]
	obj, err := api.get(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		// As a watch answers: "configmap \"x\" not found", the resource in
		// the singular, where the API server's own answer has the plural.
		return nil, apierrors.NewNotFound(api.resource, name)
	}
	return obj, err
}

// errStopped is a watch stopped before it listed: the object is read
// another way.
var errStopped = errors.New("watch stopped")

// watchedObject is one object's watch: the reflector's store (at most the
// one object, since the watch selects it by name) and what a get waits for.
type watchedObject struct {
	key      objectKey
	api      *kindAPI
	onChange func(kind, namespace, name string)
	cancel   context.CancelFunc
	done     chan struct{} // closed when the reflector returned

	// pods are the registered pods that reference the object; guarded by
	// objectCache.mu.
	pods map[types.UID]struct{}

	mu sync.Mutex
	// obj is the object as last listed or watched; nil when it does not
	// exist (once synced).
	obj runtime.Object
	// synced: a list succeeded; obj is the truth as of the watch.
	synced bool
	// err is the last list's error, while none has succeeded since.
	err error
	// stopped: no more updates come (no pod references it any more, or
	// it is immutable and was fetched).
	stopped, immutable bool
	// wake is closed and replaced whenever synced, err or stopped change.
	wake chan struct{}
}

func (w *watchedObject) get(ctx context.Context) (runtime.Object, error) {
	for {
		w.mu.Lock()
		synced, obj, err, stopped, wake := w.synced, w.obj, w.err, w.stopped, w.wake
		w.mu.Unlock()
		switch {
		case synced && obj == nil:
			return nil, apierrors.NewNotFound(w.api.resource, w.key.name)
		case synced:
			if w.api.isImmutable(obj) {
				// As upstream: an immutable object cannot change, so its
				// watch has nothing more to say.
				w.setImmutable()
			}
			return obj, nil
		case err != nil:
			return nil, err
		case stopped:
			return nil, errStopped
		}
		select {
		case <-wake:
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the watch of %s %s/%s: %w", w.key.kind, w.key.namespace, w.key.name, context.Cause(ctx))
		}
	}
}

func (w *watchedObject) setImmutable() {
	w.mu.Lock()
	first := !w.immutable
	w.immutable, w.stopped = true, true
	w.mu.Unlock()
	if first {
		w.cancel()
	}
}

// stop ends the watch; a get still waiting reads the object another way.
func (w *watchedObject) stop() {
	w.mu.Lock()
	w.stopped = true
	w.broadcastLocked()
	w.mu.Unlock()
	w.cancel()
}

func (w *watchedObject) broadcastLocked() {
	close(w.wake)
	w.wake = make(chan struct{})
}

func (w *watchedObject) listFailed(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.synced || w.stopped {
		// A relist after a dropped watch failed: the last state stands
		// until the reflector lists again, as an informer's would.
		return
	}
	w.err = err
	w.broadcastLocked()
}

// set records the object's new state (nil: gone) and reports a change:
// after the watch's first list, every add, update and delete is one; the
// first list is one only if a get may have answered with an error before.
func (w *watchedObject) set(obj runtime.Object, fromList bool) {
	w.mu.Lock()
	if w.immutable {
		w.mu.Unlock()
		return
	}
	changed := w.synced || w.err != nil
	if fromList && w.synced {
		changed = resourceVersion(w.obj) != resourceVersion(obj)
	}
	w.obj, w.synced, w.err = obj, true, nil
	w.broadcastLocked()
	w.mu.Unlock()
	if changed {
		w.onChange(w.key.kind, w.key.namespace, w.key.name)
	}
}

// resourceVersion is "" for an object that does not exist.
func resourceVersion(obj runtime.Object) string {
	if obj == nil {
		return ""
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return ""
	}
	return m.GetResourceVersion()
}

// The reflector's store (cache.ReflectorStore): the watch selects one
// object by name, so a list has at most one item and every event is about
// it. Each checks the name all the same, since it costs nothing.

func (w *watchedObject) Add(obj any) error {
	if o, ok := w.ours(obj); ok {
		w.set(o, false)
	}
	return nil
}

func (w *watchedObject) Update(obj any) error { return w.Add(obj) }

func (w *watchedObject) Delete(obj any) error {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	if _, ok := w.ours(obj); ok {
		w.set(nil, false)
	}
	return nil
}

func (w *watchedObject) Resync() error { return nil }

func (w *watchedObject) Replace(list []any, _ string) error {
	var obj runtime.Object
	for _, o := range list {
		if ours, ok := w.ours(o); ok {
			obj = ours
		}
	}
	w.set(obj, true)
	return nil
}

func (w *watchedObject) ours(obj any) (runtime.Object, bool) {
	o, ok := obj.(runtime.Object)
	if !ok {
		return nil, false
	}
	m, err := meta.Accessor(o)
	return o, err == nil && m.GetName() == w.key.name && m.GetNamespace() == w.key.namespace
}
