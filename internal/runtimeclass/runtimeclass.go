// Package runtimeclass resolves a pod's runtimeClassName to the runtime
// handler its sandbox is created with, as upstream's runtimeclass.Manager:
// the RuntimeClass objects (node.k8s.io/v1) are kept by one informer, and a
// lookup reads the informer's cache, so that a sandbox creation never waits
// for the API server.
package runtimeclass

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	nodev1listers "k8s.io/client-go/listers/node/v1"
	"k8s.io/client-go/tools/cache"
)

// syncWait bounds how long a lookup waits for the informer's first list:
// a pod that arrives as the node starts is not refused for a class the
// cache has not seen yet. After it, the cache answers as it stands, as
// upstream's does from the start.
const syncWait = 10 * time.Second

// Manager keeps the cluster's RuntimeClasses and resolves names to
// handlers. It implements podruntime.RuntimeClasses.
type Manager struct {
	factory  informers.SharedInformerFactory
	informer cache.SharedIndexInformer
	lister   nodev1listers.RuntimeClassLister
}

// New returns a Manager that lists and watches RuntimeClasses through
// client (the node's RBAC allows get, list and watch of them) once Start is
// called. As upstream's, it does not resync.
func New(client kubernetes.Interface) *Manager {
	factory := informers.NewSharedInformerFactory(client, 0)
	rc := factory.Node().V1().RuntimeClasses()
	return &Manager{factory: factory, informer: rc.Informer(), lister: rc.Lister()}
}

// Start lists and watches RuntimeClasses until ctx is done.
func (m *Manager) Start(ctx context.Context) {
	m.factory.Start(ctx.Done())
}

// HasSynced reports whether the RuntimeClasses were listed at least once.
func (m *Manager) HasSynced() bool { return m.informer.HasSynced() }

// LookupRuntimeHandler returns the handler of the RuntimeClass named name,
// "" for none (nil or empty: the runtime's default handler). A class that
// does not exist is the API's NotFound error, whose text upstream's
// FailedCreatePodSandBox event quotes (runtimeclass.node.k8s.io "NAME" not
// found); any other failure is upstream's "failed to lookup RuntimeClass".
// Before the first list it waits for it, up to syncWait or ctx's end.
func (m *Manager) LookupRuntimeHandler(ctx context.Context, name *string) (string, error) {
	if name == nil || *name == "" {
		return "", nil
	}
	if !m.informer.HasSynced() {
		wctx, cancel := context.WithTimeout(ctx, syncWait)
		cache.WaitForCacheSync(wctx.Done(), m.informer.HasSynced)
		cancel()
	}
	return Handler(m.lister, *name)
}

// Handler is upstream's lookup of the RuntimeClass name in lister.
func Handler(lister nodev1listers.RuntimeClassLister, name string) (string, error) {
	rc, err := lister.Get(name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "", err
		}
		return "", fmt.Errorf("failed to lookup RuntimeClass %s: %w", name, err)
	}
	return rc.Handler, nil
}
