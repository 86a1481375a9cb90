package pleg

import (
	"reflect"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

func TestRunningCounts(t *testing.T) {
	labels := func(uid string) map[string]string {
		if uid == "" {
			return nil
		}
		return map[string]string{labelPodUID: uid}
	}
	sandbox := func(uid string, s runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Labels: labels(uid), State: s}
	}
	container := func(uid string, s runtimeapi.ContainerState) *runtimeapi.Container {
		return &runtimeapi.Container{Labels: labels(uid), State: s}
	}
	const (
		ready    = runtimeapi.PodSandboxState_SANDBOX_READY
		notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
		running  = runtimeapi.ContainerState_CONTAINER_RUNNING
		exited   = runtimeapi.ContainerState_CONTAINER_EXITED
		created  = runtimeapi.ContainerState_CONTAINER_CREATED
		unknown  = runtimeapi.ContainerState_CONTAINER_UNKNOWN
	)
	for _, tc := range []struct {
		name           string
		relisted       messages.Relisted
		wantPods       int
		wantContainers map[string]int
	}{
		{"nothing", messages.Relisted{}, 0, map[string]int{"created": 0, "running": 0, "exited": 0, "unknown": 0}},
		{"pods with ready sandboxes, one with an old one too",
			messages.Relisted{
				Sandboxes: []*runtimeapi.PodSandbox{sandbox("u1", ready), sandbox("u1", notReady), sandbox("u2", ready), sandbox("u3", notReady)},
				Containers: []*runtimeapi.Container{container("u1", running), container("u1", exited), container("u2", running),
					container("u3", created), container("u3", unknown)},
			},
			2, map[string]int{"created": 1, "running": 2, "exited": 1, "unknown": 1}},
		{"objects without a pod UID are not the kubelet's",
			messages.Relisted{
				Sandboxes:  []*runtimeapi.PodSandbox{sandbox("", ready)},
				Containers: []*runtimeapi.Container{container("", running)},
			},
			0, map[string]int{"created": 0, "running": 0, "exited": 0, "unknown": 0}},
	} {
		pods, containers := runningCounts(&tc.relisted)
		if pods != tc.wantPods || !reflect.DeepEqual(containers, tc.wantContainers) {
			t.Errorf("%s: runningCounts = %d, %v; want %d, %v", tc.name, pods, containers, tc.wantPods, tc.wantContainers)
		}
	}
}

func TestRecordRelist(t *testing.T) {
	at := time.Date(2026, 11, 30, 12, 0, 0, 500_000_000, time.UTC)
	recordRelist(&messages.Relisted{At: at, Sandboxes: []*runtimeapi.PodSandbox{
		{Labels: map[string]string{labelPodUID: "u1"}, State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	for _, c := range []struct {
		name string
		m    prometheus.Metric
		want float64
	}{
		// Whole seconds, as upstream's.
		{"kubelet_pleg_last_seen_seconds", metrics.PLEGLastSeen, float64(at.Unix())},
		{"kubelet_running_pods", metrics.RunningPods, 1},
		{`kubelet_running_containers{container_state="running"}`, metrics.RunningContainers.WithLabelValues("running"), 0},
	} {
		var m dto.Metric
		if err := c.m.Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != c.want {
			t.Errorf("%s = %v, want %v", c.name, got, c.want)
		}
	}
}
