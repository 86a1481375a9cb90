package statusreporter

import (
	"context"
	"maps"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// The pod-manager's admission decides against the Node's labels, taints,
// allocatable resources and features: the status-reporter, which reads the Node on
// every status update, hands them over whenever they change, and on
// request (RefreshNode), and on every version its watch of the Node sees
// (labels and taints others set reach admission at once, as upstream's
// node informer has them). Until the Node is registered, it hands over the
// Node it would register (--node-labels, registerWithTaints), as
// upstream's getNodeAnyWay falls back to its initial node.

// refreshNode answers a RefreshNode: with the Node read afresh from the
// API server once registered, else with the Node built from the
// configuration.
func (a *Actor) refreshNode(ctx actor.Context) {
	if a.p.PodManager == nil {
		return
	}
	if a.p.Kube == nil || a.node == nil {
		a.sendNode(ctx, a.spec.initialNode(), false)
		return
	}
	kube, name := a.p.Kube, a.p.NodeName
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, callTimeout)
		defer cancel()
		node, err := kube.CoreV1().Nodes().Get(c, name, metav1.GetOptions{})
		return &messages.NodeRead{Node: node, Err: err}
	})
}

// nodeRead forwards the Node read for a RefreshNode; when the read failed,
// the Node last known stands in, so that the pods waiting on it are
// decided.
func (a *Actor) nodeRead(ctx actor.Context, m *messages.NodeRead) {
	node := m.Node
	if m.Err != nil {
		a.log.Warn().Err(m.Err).Msg("reading the node for admission failed: using the node last known")
		node = a.node
	}
	a.sendNode(ctx, node, true)
}

// nodeChanged hands the Node over when what admission needs of it changed
// since it was last handed over.
func (a *Actor) nodeChanged(ctx actor.Context, node *v1.Node) {
	if node == nil || (a.sentFromAPI && sameForAdmission(a.sentNode, node)) {
		return
	}
	a.sendNode(ctx, node, true)
}

func (a *Actor) sendNode(ctx actor.Context, node *v1.Node, fromAPI bool) {
	if a.p.PodManager == nil || node == nil {
		return
	}
	a.sentNode, a.sentFromAPI = node, fromAPI
	supervision.Tell(ctx, a.p.PodManager, &messages.NodeChanged{Node: node.DeepCopy(), FromAPI: fromAPI})
}

// sameForAdmission tells Nodes alike in what admission reads: name,
// labels, taints, allocatable resources and the runtime's features
// (supplementalGroupsPolicy: Strict is admitted only once they say so).
func sameForAdmission(a, b *v1.Node) bool {
	return a.Name == b.Name && maps.Equal(a.Labels, b.Labels) &&
		apiequality.Semantic.DeepEqual(a.Spec.Taints, b.Spec.Taints) &&
		apiequality.Semantic.DeepEqual(a.Status.Allocatable, b.Status.Allocatable) &&
		apiequality.Semantic.DeepEqual(a.Status.Features, b.Status.Features)
}

// watchNode watches this node's Node, as upstream's node informer, and
// hands every version seen to the actor as NodeWatched, until stopWatch.
func (a *Actor) watchNode(ctx actor.Context) {
	if a.p.Kube == nil || a.p.PodManager == nil || a.stopWatch != nil {
		return
	}
	c, cancel := context.WithCancel(a.Context())
	a.stopWatch = cancel
	system, self, kube := ctx.ActorSystem(), ctx.Self(), a.p.Kube
	nodes := kube.CoreV1().Nodes()
	selector := fields.OneTermEqualSelector("metadata.name", a.p.NodeName).String()
	send := func(obj any) {
		if node, ok := obj.(*v1.Node); ok {
			supervision.TellFromOutside(system, self, &messages.NodeWatched{Node: node})
		}
	}
	_, ctrl := cache.NewInformerWithOptions(cache.InformerOptions{
		// As client-go's generated informers, the reflector is told
		// whether the client can stream the initial list (WatchList).
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.FieldSelector = selector
				return nodes.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
				o.FieldSelector = selector
				return nodes.Watch(ctx, o)
			},
		}, kube),
		ObjectType: &v1.Node{},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc:    send,
			UpdateFunc: func(_, obj any) { send(obj) },
		},
	})
	go ctrl.RunWithContext(c)
}

// stopWatching ends the watch of the Node.
func (a *Actor) stopWatching() {
	if a.stopWatch != nil {
		a.stopWatch()
		a.stopWatch = nil
	}
}

// nodeWatched hands a version of the Node the watch saw over, once the
// Node is registered (before, the Node of the configuration stands).
func (a *Actor) nodeWatched(ctx actor.Context, m *messages.NodeWatched) {
	if a.node == nil {
		return
	}
	a.nodeChanged(ctx, m.Node)
}
