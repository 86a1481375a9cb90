package podruntime

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/probe/results"
)

// A pod past its activeDeadlineSeconds, in upstream's words (its
// activeDeadlineHandler): the pod's reason and message, and the reason of
// the Normal event recorded about it.
const (
	ReasonDeadlineExceeded  = "DeadlineExceeded"
	MessageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// activeDeadlineLeft is how long the pod may still be active by its
// spec.activeDeadlineSeconds, counted from its status's start time, as
// upstream's activeDeadlineHandler counts it; zero or less when the pod is
// past its deadline. ok is false when nothing limits it: no deadline, or
// no start time yet.
func activeDeadlineLeft(pod *v1.Pod, start *metav1.Time, now time.Time) (left time.Duration, ok bool) {
	if pod.Spec.ActiveDeadlineSeconds == nil || start == nil || start.IsZero() {
		return 0, false
	}
	allowed := time.Duration(*pod.Spec.ActiveDeadlineSeconds) * time.Second
	return allowed - now.Sub(start.Time), true
}

// pastActiveDeadline reports whether a pass of the pod at now comes after
// its active deadline: its start time is the one of the status last
// reported (a pod never reported starts now).
func pastActiveDeadline(pod *v1.Pod, now time.Time) bool {
	left, ok := activeDeadlineLeft(pod, pod.Status.StartTime, now)
	return ok && left <= 0
}

// applyActiveDeadline ends the status of a pod past its active deadline as
// upstream's generateAPIPodStatus does for a pod sync handler that asks to
// evict it: Failed, with the deadline's reason and message. It reports
// whether it did.
func applyActiveDeadline(pod *v1.Pod, status *v1.PodStatus, now time.Time) bool {
	left, ok := activeDeadlineLeft(pod, status.StartTime, now)
	if !ok || left > 0 {
		return false
	}
	status.Phase, status.Reason, status.Message = v1.PodFailed, ReasonDeadlineExceeded, MessageDeadlineExceeded
	return true
}

// deadlineRetry is the RetryAfter of a pass whose own was retry: the
// worker must come back when the pod's active deadline passes, as
// upstream's sync loop syncs a pod whose deadline passed (its
// ShouldSync). A failed pass without a backoff of its own keeps the
// worker's retry after errors, which comes sooner than most deadlines;
// the next pass computes the deadline again.
func deadlineRetry(pod *v1.Pod, api *v1.PodStatus, retry time.Duration, failed bool, now time.Time) time.Duration {
	if api.Phase == v1.PodFailed || api.Phase == v1.PodSucceeded || (failed && retry == 0) {
		return retry
	}
	left, ok := activeDeadlineLeft(pod, api.StartTime, now)
	if !ok {
		return retry
	}
	// A timer may fire a little early: the pass it wakes must find the
	// deadline passed.
	left = max(left, 0) + deadlineSlack
	if retry == 0 || left < retry {
		return left
	}
	return retry
}

// deadlineSlack is added to the wait for a deadline, so that the pass it
// wakes is past it whatever the timers' and clocks' rounding.
const deadlineSlack = 10 * time.Millisecond

// syncPastDeadline is the pass of a pod past its active deadline: nothing
// starts, its containers and sandbox are stopped with its grace period, as
// upstream's pod worker terminates a pod whose sync found it Failed, and
// the status, Failed, shows them stopped. The worker then terminates the
// pod, whose kill finds nothing left to stop and keeps its dead containers,
// as for any pod that ran to completion.
func (r *Runtime) syncPastDeadline(ctx context.Context, pod *v1.Pod, probes results.Pod, status *PodStatus, now time.Time) SyncResult {
	r.deadlineEvent(pod)
	if err := r.stopPod(ctx, pod, status, podGracePeriod(pod)); err != nil {
		return r.result(ctx, pod, nil, status, nil, probes, 0, fmt.Errorf("stop pod %s/%s past its active deadline: %w", pod.Namespace, pod.Name, err), now)
	}
	return r.result(ctx, pod, nil, status, nil, probes, 0, nil, now)
}

// deadlineEvent records upstream's Normal event about a pod past its
// active deadline, once: the pass that finds it so ends the pod.
func (r *Runtime) deadlineEvent(pod *v1.Pod) {
	if pod.Status.Reason != ReasonDeadlineExceeded {
		r.podEvent(pod, v1.EventTypeNormal, events.DeadlineExceeded, MessageDeadlineExceeded)
	}
}
