package configsource

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// apiSource watches the pods bound to this node, as upstream's
// NewSourceApiserver: after the initial list, and after every change, it
// sends the complete set. It is used by one goroutine only.
//
// An informer (not a bare reflector with an undelta store, as upstream) is
// used for its transform hook; change notifications only mark the set
// dirty, so that a burst of changes (the initial list, a relist after a
// long outage) gives one set rather than one per pod. While the API server
// is unreachable the reflector retries by itself with backoff and nothing
// is sent: the last set stands.
type apiSource struct {
	kube kubernetes.Interface
	node string
	send func(*messages.SourceScanned)
	log  zerolog.Logger
	// seen keeps, per UID, when the pod was first seen, as upstream's
	// config.seen annotation: stable across updates of the pod.
	seen map[types.UID]string
	// sent keeps the copies of the last set, by UID: a pod whose
	// resourceVersion has not changed is sent as the same copy. Every set
	// follows a change of one pod or a few, and copying every pod of the
	// node for each made the source's cost grow with the square of the
	// pods being started.
	sent map[types.UID]*v1.Pod
}

func newAPISource(kube kubernetes.Interface, node string, send func(*messages.SourceScanned), log zerolog.Logger) *apiSource {
	return &apiSource{kube: kube, node: node, send: send, log: log, seen: map[types.UID]string{}, sent: map[types.UID]*v1.Pod{}}
}

// run watches until ctx is cancelled, and returns once the informer's
// goroutines are gone.
func (s *apiSource) run(ctx context.Context) {
	dirty := make(chan struct{}, 1)
	mark := func() {
		select {
		case dirty <- struct{}{}:
		default:
		}
	}
	store, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: s.listWatch(),
		ObjectType:    &v1.Pod{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { mark() },
			UpdateFunc: func(any, any) { mark() },
			DeleteFunc: func(any) { mark() },
		},
		Transform: dropManagedFields,
	})
	var informer sync.WaitGroup
	informer.Go(func() { ctrl.RunWithContext(ctx) })
	defer informer.Wait()

	s.log.Info().Str("node", s.node).Msg("watching the API server for the pods bound to this node")
	if !cache.WaitForCacheSync(ctx.Done(), ctrl.HasSynced) {
		return
	}
	// The first set goes even empty: it tells the pod-manager that the
	// source is ready, so that pods deleted while actorlet was down are
	// taken for orphans and torn down.
	for {
		// Taken before listing: a change after this point marks the set
		// dirty again, so none is missed.
		select {
		case <-dirty:
		default:
		}
		s.send(s.set(store.List()))
		select {
		case <-ctx.Done():
			return
		case <-dirty:
		}
	}
}

// listWatch lists and watches the pods bound to this node. It goes through
// the typed client (not its RESTClient) so that the clientset's content type
// (protobuf) and the fake clientset of the unit tests both apply; like
// client-go's generated informers, it tells the reflector whether the client
// can stream the initial list (WatchList), which the fake cannot.
func (s *apiSource) listWatch() cache.ListerWatcher {
	selector := fields.OneTermEqualSelector("spec.nodeName", s.node).String()
	pods := s.kube.CoreV1().Pods(metav1.NamespaceAll)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = selector
			return pods.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = selector
			return pods.Watch(ctx, o)
		},
	}, s.kube)
}

// dropManagedFields keeps the informer's cache small: managedFields often
// outweigh the rest of a pod, and the node never reads them.
func dropManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// set builds the complete set from the informer's cache: copies, since the
// cache's objects are shared and the message is handed over, annotated
// with the source and first-seen time as upstream's pod config does. A copy
// once sent is never changed (its receivers only read it), so a pod
// unchanged since the last set is sent as the same copy.
func (s *apiSource) set(objs []any) *messages.SourceScanned {
	now := time.Now().Format(time.RFC3339Nano)
	seen := make(map[types.UID]string, len(objs))
	sent := make(map[types.UID]*v1.Pod, len(objs))
	pods := make([]*v1.Pod, 0, len(objs))
	for _, o := range objs {
		cached := o.(*v1.Pod)
		first, ok := s.seen[cached.UID]
		if !ok {
			first = now
		}
		seen[cached.UID] = first
		pod := s.sent[cached.UID]
		if pod == nil || pod.ResourceVersion != cached.ResourceVersion || cached.ResourceVersion == "" {
			pod = cached.DeepCopy()
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[manifest.ConfigSourceAnnotation] = messages.SourceAPI
			pod.Annotations[manifest.ConfigSeenAnnotation] = first
		}
		sent[cached.UID] = pod
		pods = append(pods, pod)
	}
	// Pods gone from the node are forgotten, so that neither map grows.
	s.seen, s.sent = seen, sent
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	return &messages.SourceScanned{Source: messages.SourceAPI, Pods: pods}
}

// apiListed hands the API server's set to the pod-manager. Unlike the
// file and URL sources, there is nothing to deduplicate: every set follows
// a change of some pod (its resourceVersion at least).
func (a *Actor) apiListed(ctx actor.Context, m *messages.SourceScanned) {
	a.log.Debug().Int("pods", len(m.Pods)).Msg("pods bound to this node changed")
	a.send(ctx, messages.SourceAPI, m.Pods)
}
