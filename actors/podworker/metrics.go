package podworker

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/metrics"
)

// syncOperation names a sync pass for kubelet_pod_worker_duration_seconds,
// as upstream's update types: the pod's first sync is a create, the one
// after a change of its spec an update, any other a sync. The first sync
// of a restarted worker adopts what exists: a sync.
func (a *Actor) syncOperation() string {
	specChanged := a.specChanged
	a.specChanged = false
	switch {
	case !a.hist.synced.Swap(true):
		return metrics.OperationCreate
	case specChanged:
		return metrics.OperationUpdate
	}
	return metrics.OperationSync
}

// observePodStart records the pod's start duration the first time a sync
// finds all its containers running, once per pod however often its worker
// restarts.
func (a *Actor) observePodStart(status *v1.PodStatus) {
	if a.hist.startObserved.Load() {
		return
	}
	if d, ok := podStartDuration(a.state.Pod, status, time.Now()); ok && !a.hist.startObserved.Swap(true) {
		metrics.PodStartDuration.Observe(d.Seconds())
	}
}

// podStartDuration is the time from the kubelet's first sight of pod (its
// config.seen annotation, as upstream's pod startup latency) to now, when
// status shows the pod running with every one of its containers running.
// A pod without the annotation is not measured.
func podStartDuration(pod *v1.Pod, status *v1.PodStatus, now time.Time) (time.Duration, bool) {
	if pod == nil || status.Phase != v1.PodRunning {
		return 0, false
	}
	seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[manifest.ConfigSeenAnnotation])
	if err != nil {
		return 0, false
	}
	running := make(map[string]bool, len(status.ContainerStatuses))
	for _, cs := range status.ContainerStatuses {
		running[cs.Name] = cs.State.Running != nil
	}
	for _, c := range pod.Spec.Containers {
		if !running[c.Name] {
			return 0, false
		}
	}
	return now.Sub(seen), true
}
