package podworker

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/metrics"
)

var seen = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func startedPod(annotations map[string]string, containers ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: annotations}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: c})
	}
	return p
}

func podStatus(phase v1.PodPhase, running ...string) *v1.PodStatus {
	s := &v1.PodStatus{Phase: phase}
	for _, c := range running {
		s.ContainerStatuses = append(s.ContainerStatuses, v1.ContainerStatus{Name: c, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}})
	}
	return s
}

func TestPodStartDuration(t *testing.T) {
	seenAt := map[string]string{manifest.ConfigSeenAnnotation: seen.Format(time.RFC3339Nano)}
	now := seen.Add(7 * time.Second)
	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *v1.PodStatus
		want   time.Duration
		ok     bool
	}{
		{"all containers running", startedPod(seenAt, "a", "b"), podStatus(v1.PodRunning, "a", "b"), 7 * time.Second, true},
		{"one container not running yet", startedPod(seenAt, "a", "b"), podStatus(v1.PodRunning, "a"), 0, false},
		{"pending", startedPod(seenAt, "a"), podStatus(v1.PodPending), 0, false},
		{"no config.seen annotation", startedPod(nil, "a"), podStatus(v1.PodRunning, "a"), 0, false},
		{"an orphan has no pod", nil, podStatus(v1.PodRunning, "a"), 0, false},
	} {
		d, ok := podStartDuration(tc.pod, tc.status, now)
		if d != tc.want || ok != tc.ok {
			t.Errorf("%s: podStartDuration = %v, %v; want %v, %v", tc.name, d, ok, tc.want, tc.ok)
		}
	}
}

func histogramCount(t *testing.T, h prometheus.Metric) uint64 {
	t.Helper()
	var m dto.Metric
	if err := h.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestPodStartObservedOnce checks that a pod's start is measured once,
// however many syncs find it running and however often its worker restarts.
func TestPodStartObservedOnce(t *testing.T) {
	p, hist := Params{UID: "u1"}, &history{}
	pod := startedPod(map[string]string{manifest.ConfigSeenAnnotation: time.Now().Format(time.RFC3339Nano)}, "a")
	before := histogramCount(t, metrics.PodStartDuration)
	(&Actor{p: p, hist: hist, state: State{Pod: pod}}).observePodStart(podStatus(v1.PodPending))
	if got := histogramCount(t, metrics.PodStartDuration) - before; got != 0 {
		t.Fatalf("a pending pod was observed %d times", got)
	}
	for range 2 { // a second incarnation of the worker
		a := &Actor{p: p, hist: hist, state: State{Pod: pod}}
		a.observePodStart(podStatus(v1.PodRunning, "a"))
		a.observePodStart(podStatus(v1.PodRunning, "a"))
	}
	if got := histogramCount(t, metrics.PodStartDuration) - before; got != 1 {
		t.Errorf("kubelet_pod_start_duration_seconds observed %d times, want 1", got)
	}
}

func TestSyncOperation(t *testing.T) {
	p, hist := Params{UID: "u1"}, &history{}
	a := &Actor{p: p, hist: hist}
	for _, tc := range []struct {
		name        string
		restart     bool
		specChanged bool
		want        string
	}{
		{"the first sync", false, false, metrics.OperationCreate},
		{"a sync after a runtime event", false, false, metrics.OperationSync},
		{"the sync after a spec change", false, true, metrics.OperationUpdate},
		{"the next one", false, false, metrics.OperationSync},
		{"the first sync of a restarted worker", true, false, metrics.OperationSync},
	} {
		if tc.restart {
			a = &Actor{p: p, hist: hist}
		}
		a.specChanged = tc.specChanged
		if got := a.syncOperation(); got != tc.want {
			t.Errorf("%s: syncOperation = %q, want %q", tc.name, got, tc.want)
		}
	}
}
