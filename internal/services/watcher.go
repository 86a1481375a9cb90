package services

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// Watcher keeps the cluster's Services through an informer on every
// namespace, as upstream's kubelet: a pod of any namespace may start on the
// node, and its variables must be there when its container is created, so
// the node cannot wait for a watch of that namespace to list. It implements
// podruntime.Services.
type Watcher struct {
	store cache.Store
	ctrl  cache.Controller
}

// New returns a Watcher that lists and watches Services through client
// once Run is called.
func New(client kubernetes.Interface) *Watcher {
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: listWatch(client),
		ObjectType:    &v1.Service{},
		Handler:       cache.ResourceEventHandlerFuncs{},
		Transform:     strip,
		// As upstream's shared informers: a watch that lives long, since
		// re-establishing it costs the API server a list of every Service.
		MinWatchTimeout: 30 * time.Minute,
	})
	return &Watcher{store: store, ctrl: ctrl}
}

// Run lists and watches until ctx is done, and returns once the informer's
// goroutines are gone. It is called once.
func (w *Watcher) Run(ctx context.Context) {
	w.ctrl.RunWithContext(ctx)
}

// HasSynced reports whether the Services were listed at least once.
func (w *Watcher) HasSynced() bool {
	return w.ctrl.HasSynced()
}

// List returns every Service the watch holds (with a cluster IP). They are
// the cache's own, stripped to what the variables read: callers must not
// change them.
func (w *Watcher) List() []*v1.Service {
	objs := w.store.List()
	out := make([]*v1.Service, 0, len(objs))
	for _, o := range objs {
		if s, ok := o.(*v1.Service); ok {
			out = append(out, s)
		}
	}
	return out
}

// listWatch lists and watches the Services of every namespace except the
// headless ones, with upstream's field selector (spec.clusterIP!=None):
// they give no variables (issue kubernetes#122394). It goes through the
// typed client, so that the clientset's content type and the fake
// clientset of the unit tests both apply, and tells the reflector whether
// the client can stream the initial list (WatchList), as client-go's
// generated informers do.
func listWatch(client kubernetes.Interface) cache.ListerWatcher {
	selector := fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone).String()
	svcs := client.CoreV1().Services(metav1.NamespaceAll)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return svcs.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return svcs.Watch(ctx, o)
		},
	}, client)
}

// strip keeps of a Service only what EnvFor and FromServices read: its
// name, namespace and resourceVersion, its cluster IP, and its ports'
// names, numbers and protocols. Upstream keeps whole objects; the node
// keeps every Service of the cluster for its whole life, and annotations
// (a last-applied-configuration is a copy of the object), managedFields,
// selectors, labels and status are most of a Service's size and never
// read here. It builds a new object, so it is idempotent, as a transform
// must be; anything but a Service (a tombstone) passes through.
func strip(obj any) (any, error) {
	s, ok := obj.(*v1.Service)
	if !ok {
		return obj, nil
	}
	out := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            s.Name,
			Namespace:       s.Namespace,
			ResourceVersion: s.ResourceVersion,
		},
		Spec: v1.ServiceSpec{ClusterIP: s.Spec.ClusterIP},
	}
	if len(s.Spec.Ports) > 0 {
		out.Spec.Ports = make([]v1.ServicePort, len(s.Spec.Ports))
		for i, p := range s.Spec.Ports {
			out.Spec.Ports[i] = v1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port}
		}
	}
	return out, nil
}
