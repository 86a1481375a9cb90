package statusreporter

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// conflictRetries bounds the re-read-and-patch rounds of one write that
// keeps meeting a Conflict; the actor's backoff takes over after that.
const conflictRetries = 3

// kubeletConditions are the pod conditions the kubelet owns (upstream's
// PodConditionsByKubelet with the gated ones on by default): it replaces
// them. Every other condition (DisruptionTarget, those of other
// controllers) is kept as the API has it.
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled:              true,
	v1.PodReady:                  true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReadyToStartContainers: true,
	v1.PodResizePending:          true,
	v1.PodResizeInProgress:       true,
	v1.AllContainersRestarting:   true,
}

// podWork is a snapshot of a podEntry for one writer: writers never touch
// the actor's state.
type podWork struct {
	uid               types.UID
	version           uint64
	pod               *v1.Pod
	status            v1.PodStatus
	reported          bool
	finished, removed bool
	nodeName          string
	nodeUID           types.UID
	// base is the API pod the status patch is computed against, when the
	// actor knows a fresh one; nil: read it first.
	base *v1.Pod
}

// isStatic tells a static pod (file or http source) from an API pod; a pod
// without a source annotation is an API pod.
func isStatic(pod *v1.Pod) bool {
	switch pod.Annotations[manifest.ConfigSourceAnnotation] {
	case manifest.SourceFile, manifest.SourceHTTP:
		return true
	}
	return false
}

// mergePodStatus is upstream's mergePodStatus: the kubelet's status, with
// the conditions it does not own and the resource claim statuses kept from
// the API's, no terminal phase while containers could still run, and no
// Ready=True with a terminal phase.
func mergePodStatus(apiStatus, status v1.PodStatus, couldHaveRunningContainers bool) v1.PodStatus {
	merged := *status.DeepCopy()
	conds := make([]v1.PodCondition, 0, len(apiStatus.Conditions)+len(status.Conditions))
	for _, c := range apiStatus.Conditions {
		if !kubeletConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	for _, c := range status.Conditions {
		if kubeletConditions[c.Type] {
			conds = append(conds, c)
		}
	}
	merged.Conditions = conds
	merged.ResourceClaimStatuses = apiStatus.ResourceClaimStatuses
	merged.ExtendedResourceClaimStatus = apiStatus.ExtendedResourceClaimStatus
	merged.NodeAllocatableResourceClaimStatuses = apiStatus.NodeAllocatableResourceClaimStatuses
	// As upstream's status manager: the observed generation never goes
	// back (a status made before the last spec update was seen).
	merged.ObservedGeneration = max(merged.ObservedGeneration, apiStatus.ObservedGeneration)

	// DisruptionTarget is shared with the API's other writers: the
	// kubelet's (an eviction's) replaces the API's, as upstream, only as
	// the pod turns terminal with nothing of it running.
	if !terminal(apiStatus.Phase) && terminal(merged.Phase) && !couldHaveRunningContainers {
		for _, c := range status.Conditions {
			if c.Type != v1.DisruptionTarget {
				continue
			}
			i := slices.IndexFunc(merged.Conditions, func(o v1.PodCondition) bool { return o.Type == c.Type })
			if i < 0 {
				merged.Conditions = append(merged.Conditions, c)
			} else {
				merged.Conditions[i] = c
			}
		}
	}
	if !terminal(apiStatus.Phase) && terminal(merged.Phase) && couldHaveRunningContainers {
		merged.Phase, merged.Reason, merged.Message = apiStatus.Phase, apiStatus.Reason, apiStatus.Message
	}
	if terminal(merged.Phase) {
		reason := "PodCompleted"
		if merged.Phase == v1.PodFailed {
			reason = "PodFailed"
		}
		for i := range merged.Conditions {
			c := &merged.Conditions[i]
			if (c.Type == v1.PodReady || c.Type == v1.ContainersReady) && c.Status == v1.ConditionTrue {
				c.Status, c.Reason, c.Message = v1.ConditionFalse, reason, ""
				c.LastTransitionTime = metav1.Now()
			}
		}
	}
	return merged
}

func terminal(p v1.PodPhase) bool { return p == v1.PodSucceeded || p == v1.PodFailed }

// podStatusPatch is upstream's pod status patch: a strategic merge patch
// from the API's status to the new one, carrying the pod's UID so that the
// API server refuses it for another pod of the same name. unchanged is true
// when the patch would carry nothing but the UID.
func podStatusPatch(uid types.UID, apiStatus, status v1.PodStatus) (patch []byte, unchanged bool, err error) {
	oldData, err := json.Marshal(v1.Pod{Status: apiStatus})
	if err != nil {
		return nil, false, fmt.Errorf("marshal status of pod %s: %w", uid, err)
	}
	newData, err := json.Marshal(v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: status})
	if err != nil {
		return nil, false, fmt.Errorf("marshal status of pod %s: %w", uid, err)
	}
	patch, err = strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Pod{})
	if err != nil {
		return nil, false, fmt.Errorf("status patch of pod %s: %w", uid, err)
	}
	return patch, bytes.Equal(patch, fmt.Appendf(nil, `{"metadata":{"uid":%q}}`, uid)), nil
}

// writeStatus merges status into the API pod's and patches it when that
// changes anything, re-reading the pod on a Conflict. It returns the pod as
// the API has it after the write; nil when the pod is gone (not found, or
// replaced by another of the same name).
func writeStatus(ctx context.Context, kube kubernetes.Interface, apiPod *v1.Pod, status v1.PodStatus, couldHaveRunning bool) (*v1.Pod, error) {
	pods := kube.CoreV1().Pods(apiPod.Namespace)
	uid := apiPod.UID
	for try := 0; ; try++ {
		merged := mergePodStatus(apiPod.Status, status, couldHaveRunning)
		patch, unchanged, err := podStatusPatch(uid, apiPod.Status, merged)
		if err != nil || unchanged {
			return apiPod, err
		}
		updated, err := pods.Patch(ctx, apiPod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) || try >= conflictRetries {
			return nil, fmt.Errorf("patch status of pod %s/%s: %w", apiPod.Namespace, apiPod.Name, err)
		}
		apiPod, err = pods.Get(ctx, apiPod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && apiPod.UID != uid) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get pod %s/%s after a conflict: %w", apiPod.Namespace, apiPod.Name, err)
		}
	}
}

// deletePod deletes a pod for good: grace period 0, and only the pod with
// this UID, never a new one of the same name. A pod already gone is fine.
func deletePod(ctx context.Context, kube kubernetes.Interface, pod *v1.Pod) error {
	zero := int64(0)
	err := kube.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero, Preconditions: metav1.NewUIDPreconditions(string(pod.UID)),
	})
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("delete pod %s/%s (uid %s): %w", pod.Namespace, pod.Name, pod.UID, err)
}

// syncAPIPod writes an API pod's status, then deletes the pod once it is
// being deleted and its worker is done, as upstream's syncPod and
// canBeDeleted.
func syncAPIPod(ctx context.Context, kube kubernetes.Interface, w podWork) *messages.PodStatusSynced {
	res := &messages.PodStatusSynced{UID: w.uid, Version: w.version}
	// Upstream reads the pod before every status write; the API's answer
	// to our previous write, or the watch's copy before the first one, is
	// as good a base (the patch carries the UID as its precondition and
	// touches only what differs) at half the requests, which matters when
	// many pods start at once under the client's QPS limit.
	apiPod := w.base
	if apiPod == nil {
		var err error
		apiPod, err = kube.CoreV1().Pods(w.pod.Namespace).Get(ctx, w.pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) || (err == nil && apiPod.UID != w.uid) {
			res.Done = true
			return res
		}
		if err != nil {
			res.Err = fmt.Errorf("get pod %s/%s: %w", w.pod.Namespace, w.pod.Name, err)
			return res
		}
	}
	if w.reported {
		var err error
		apiPod, err = writeStatus(ctx, kube, apiPod, w.status, !w.finished)
		if apierrors.IsNotFound(err) || (w.removed && apierrors.IsForbidden(err)) {
			// Gone from the API; for a node, the Node authorizer answers
			// Forbidden for a pod that is no longer bound to it.
			res.Done = true
			return res
		}
		if err != nil || apiPod == nil {
			res.Err, res.Done = err, err == nil
			return res
		}
		res.APIPod = apiPod
	}
	if w.finished && (apiPod.DeletionTimestamp != nil || w.pod.DeletionTimestamp != nil) {
		res.Err = deletePod(ctx, kube, apiPod)
		res.Done = res.Err == nil
	}
	return res
}

// errNotRegistered delays writes that need the Node's UID until the node is
// registered.
var errNotRegistered = errors.New("node not registered yet")
