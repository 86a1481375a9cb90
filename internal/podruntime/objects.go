package podruntime

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// Objects reads the ConfigMaps and Secrets a pod refers to outside its
// volumes, as the node: its containers' env and envFrom, and its image
// pull secrets. volume/apisource.Sources is the node's: a watch per object
// the node's pods reference. An object that does not exist is an error for
// which apierrors.IsNotFound holds.
type Objects interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
}

// Services are the cluster's Services as the node last saw them, for the
// service environment variables of containers (upstream's service lister).
type Services interface {
	// HasSynced reports whether the Services were listed at least once:
	// until then a pod from the API server gets no container, as upstream,
	// since its KUBERNETES_SERVICE_HOST would be missing.
	HasSynced() bool
	// List returns every Service of the cluster. The objects are the
	// cache's own: callers must not change them.
	List() []*v1.Service
}
