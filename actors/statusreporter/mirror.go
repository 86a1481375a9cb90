package statusreporter

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// ConfigMirrorAnnotation marks a mirror pod with the config hash of the
// static pod it mirrors (upstream's ConfigMirrorAnnotationKey).
const ConfigMirrorAnnotation = manifest.ConfigMirrorAnnotation

// mirrorPod is the mirror of a static pod, as upstream's CreateMirrorPod
// makes it: the static pod's metadata and spec, marked with its hash, owned
// by the Node as NodeRestriction requires. Server-set metadata (UID,
// resourceVersion, creation time) and the status are left to the API.
func mirrorPod(static *v1.Pod, nodeName string, nodeUID types.UID) *v1.Pod {
	m := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: static.Name, Namespace: static.Namespace,
			Labels: static.Labels, Annotations: map[string]string{},
		},
		Spec: *static.Spec.DeepCopy(),
	}
	for k, v := range static.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[ConfigMirrorAnnotation] = podHash(static)
	controller := true
	m.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID, Controller: &controller,
	}}
	m.Spec.NodeName = nodeName
	return m
}

// podHash is a static pod's config hash: its annotation, else its UID, as
// upstream's getPodHash.
func podHash(pod *v1.Pod) string { return manifest.ConfigHash(pod) }

// isMirrorOf tells whether an API pod is the current mirror of a static pod.
func isMirrorOf(mirror, static *v1.Pod) bool {
	h, ok := mirror.Annotations[ConfigMirrorAnnotation]
	return ok && h == podHash(static) && mirror.DeletionTimestamp == nil
}

// syncStaticPod keeps a static pod's mirror pod: deleted once the static pod
// is removed; otherwise created when missing, replaced when it mirrors
// another version or is being deleted, and given the static pod's status.
func syncStaticPod(ctx context.Context, kube kubernetes.Interface, w podWork) *messages.PodStatusSynced {
	res := &messages.PodStatusSynced{UID: w.uid, Version: w.version}
	pods := kube.CoreV1().Pods(w.pod.Namespace)
	// A list by name and node, not a get: the Node authorizer forbids
	// getting a pod that is not (yet) bound to this node.
	list, err := pods.List(ctx, metav1.ListOptions{FieldSelector: fields.AndSelectors(
		fields.OneTermEqualSelector("metadata.name", w.pod.Name), fields.OneTermEqualSelector("spec.nodeName", w.nodeName)).String()})
	if err != nil {
		res.Err = fmt.Errorf("list mirror pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
		return res
	}
	var mirror *v1.Pod
	if len(list.Items) > 0 {
		mirror = &list.Items[0]
	}
	if w.removed {
		if mirror != nil {
			res.Err = deletePod(ctx, kube, mirror)
		}
		res.Done = res.Err == nil
		return res
	}
	if mirror != nil && !isMirrorOf(mirror, w.pod) {
		if err := deletePod(ctx, kube, mirror); err != nil {
			res.Err = err
			return res
		}
		mirror = nil
	}
	if mirror == nil {
		if w.nodeUID == "" {
			res.Err = fmt.Errorf("create mirror pod %s/%s: %w", w.pod.Namespace, w.pod.Name, errNotRegistered)
			return res
		}
		var err error
		mirror, err = pods.Create(ctx, mirrorPod(w.pod, w.nodeName, w.nodeUID), metav1.CreateOptions{})
		if err != nil {
			res.Err = fmt.Errorf("create mirror pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
			return res
		}
	}
	if w.reported {
		if _, err := writeStatus(ctx, kube, mirror, w.status, !w.finished); err != nil {
			res.Err = err
		}
	}
	return res
}
