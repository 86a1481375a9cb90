package podruntime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func deadlinePod(seconds int64, startedAgo time.Duration) *v1.Pod {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "a")
	if seconds > 0 {
		pod.Spec.ActiveDeadlineSeconds = &seconds
	}
	if startedAgo >= 0 {
		start := metav1.NewTime(t0.Add(-startedAgo))
		pod.Status.StartTime = &start
	}
	return pod
}

func TestActiveDeadline(t *testing.T) {
	for _, tt := range []struct {
		name     string
		pod      *v1.Pod
		past     bool
		retry    time.Duration // of a pass that had none of its own
		failed   bool
		ownRetry time.Duration
	}{
		{name: "no deadline", pod: deadlinePod(0, time.Minute)},
		{name: "never started: the deadline counts from this pass", pod: deadlinePod(30, -1), retry: 30*time.Second + deadlineSlack},
		{name: "before the deadline: woken at it", pod: deadlinePod(30, 10*time.Second), retry: 20*time.Second + deadlineSlack},
		{name: "a sooner backoff comes first", pod: deadlinePod(30, 10*time.Second), ownRetry: 5 * time.Second, retry: 5 * time.Second},
		{name: "the deadline before a backoff", pod: deadlinePod(30, 28*time.Second), ownRetry: 5 * time.Second, retry: 2*time.Second + deadlineSlack},
		{name: "a failed pass keeps the worker's retry", pod: deadlinePod(30, 10*time.Second), failed: true},
		{name: "at the deadline: past it", pod: deadlinePod(30, 30*time.Second), past: true},
		{name: "long past it", pod: deadlinePod(5, time.Hour), past: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := pastActiveDeadline(tt.pod, t0); got != tt.past {
				t.Errorf("pastActiveDeadline = %v, want %v", got, tt.past)
			}
			api := GenerateAPIStatus(tt.pod, readyStatus(cstat(tt.pod, "a", running, 0, 0)), nil, nil, &tt.pod.Status, t0)
			if tt.past {
				if api.Phase != v1.PodFailed || api.Reason != ReasonDeadlineExceeded || api.Message != MessageDeadlineExceeded {
					t.Errorf("status past the deadline: %s %q %q", api.Phase, api.Reason, api.Message)
				}
				for _, ty := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
					if c := findCond(api, ty); c.Status != v1.ConditionFalse || c.Reason != reasonPodFailed {
						t.Errorf("%s past the deadline: %+v", ty, c)
					}
				}
			} else if api.Phase != v1.PodRunning || api.Reason != "" {
				t.Errorf("status before the deadline: %s %q", api.Phase, api.Reason)
			}
			if got := deadlineRetry(tt.pod, &api, tt.ownRetry, tt.failed, t0); got != tt.retry && !tt.past {
				t.Errorf("RetryAfter %v, want %v", got, tt.retry)
			} else if tt.past && got != tt.ownRetry {
				t.Errorf("RetryAfter of an ended pod %v, want %v", got, tt.ownRetry)
			}
		})
	}
}

func TestSettlePhase(t *testing.T) {
	for _, tt := range []struct {
		name            string
		pod             *v1.Pod
		computed        v1.PodPhase
		previous        v1.PodStatus
		phase           v1.PodPhase
		reason, message string
	}{
		{name: "a new phase without reason", pod: deadlinePod(0, 0), computed: v1.PodRunning,
			previous: v1.PodStatus{Phase: v1.PodPending, Reason: "R", Message: "m"}, phase: v1.PodRunning},
		{name: "the same phase keeps its reason", pod: deadlinePod(0, 0), computed: v1.PodRunning,
			previous: v1.PodStatus{Phase: v1.PodRunning, Reason: "R", Message: "m"}, phase: v1.PodRunning, reason: "R", message: "m"},
		{name: "a terminal phase is final, with its reason", pod: deadlinePod(0, 0), computed: v1.PodRunning,
			previous: v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "m"}, phase: v1.PodFailed, reason: "Evicted", message: "m"},
		{name: "past the deadline", pod: deadlinePod(5, time.Minute), computed: v1.PodSucceeded,
			previous: v1.PodStatus{Phase: v1.PodRunning}, phase: v1.PodFailed, reason: ReasonDeadlineExceeded, message: MessageDeadlineExceeded},
		{name: "a pod that ended is not failed by its deadline", pod: deadlinePod(5, time.Minute), computed: v1.PodSucceeded,
			previous: v1.PodStatus{Phase: v1.PodSucceeded}, phase: v1.PodSucceeded},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out := v1.PodStatus{Phase: tt.computed, StartTime: tt.pod.Status.StartTime}
			settlePhase(tt.pod, &out, &tt.previous, t0)
			if out.Phase != tt.phase || out.Reason != tt.reason || out.Message != tt.message {
				t.Errorf("got %s %q %q, want %s %q %q", out.Phase, out.Reason, out.Message, tt.phase, tt.reason, tt.message)
			}
		})
	}
}
