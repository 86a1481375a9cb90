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
		if seen, ok := firstSeen(a.state.Pod); ok {
			metrics.PodWorkerStartDuration.Observe(time.Since(seen).Seconds())
		}
		if a.state.Pod != nil {
			metrics.ContainersPerPod.Observe(float64(len(a.state.Pod.Spec.Containers)))
		}
		a.observeNoClaims(metrics.DRAPrepare)
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
	now := time.Now()
	if d, ok := podStartDuration(a.state.Pod, status, now); ok && !a.hist.startObserved.Swap(true) {
		metrics.PodStartDuration.Observe(d.Seconds())
		if a.state.Pod.CreationTimestamp.IsZero() {
			return
		}
		total, sli := podStartSLI(a.state.Pod, status, metrics.TakePodImagePulls(a.state.Pod.UID), now)
		metrics.PodStartTotalDuration.WithLabelValues().Observe(total.Seconds())
		metrics.PodStartSLIDuration.WithLabelValues().Observe(sli.Seconds())
		metrics.ObserveFirstNetworkPodStart(a.state.Pod.Spec.HostNetwork, sli)
	}
}

// podStartSLI is upstream's pod start durations of a pod that status shows
// started at now: total from its creation, and the SLI's, without the time
// its image pulls took (pulling) and its init containers ran.
func podStartSLI(pod *v1.Pod, status *v1.PodStatus, pulling time.Duration, now time.Time) (total, sli time.Duration) {
	total = now.Sub(pod.CreationTimestamp.Time)
	sli = total - pulling
	for _, cs := range status.InitContainerStatuses {
		if t := cs.State.Terminated; t != nil && !t.StartedAt.IsZero() {
			sli -= t.FinishedAt.Sub(t.StartedAt.Time)
		}
	}
	return total, max(sli, 0)
}

// podStartDuration is the time from the kubelet's first sight of pod (its
// config.seen annotation, as upstream's pod startup latency) to now, when
// status shows the pod running with every one of its containers running.
// A pod without the annotation is not measured.
func podStartDuration(pod *v1.Pod, status *v1.PodStatus, now time.Time) (time.Duration, bool) {
	if pod == nil || status.Phase != v1.PodRunning {
		return 0, false
	}
	seen, ok := firstSeen(pod)
	if !ok {
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

// firstSeen is when the kubelet first saw pod: its config.seen annotation.
func firstSeen(pod *v1.Pod) (time.Time, bool) {
	if pod == nil {
		return time.Time{}, false
	}
	seen, err := time.Parse(time.RFC3339Nano, pod.Annotations[manifest.ConfigSeenAnnotation])
	return seen, err == nil
}

// observeNoClaims records, for a pod without ResourceClaims, the DRA
// operation (metrics.DRAPrepare or DRAUnprepare) that upstream's DRA
// manager does for every pod, at once when there is nothing to prepare,
// so that dra_operations_duration_seconds counts the pods as upstream's.
// The dra-manager times those of a pod with claims.
func (a *Actor) observeNoClaims(operation string) {
	if a.state.claimsAsked || HasClaims(a.state.Pod) {
		return
	}
	metrics.DRAOperationsDuration.WithLabelValues(operation, "false").Observe(0)
}
