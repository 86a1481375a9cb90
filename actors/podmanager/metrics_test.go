package podmanager

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

func sourcedPod(uid, source string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid,
		Annotations: map[string]string{manifest.ConfigSourceAnnotation: source}}}
}

func TestRecordPodCounts(t *testing.T) {
	a := &Actor{m: &Machine{
		pods: map[types.UID]*PodState{
			"file-running": {Pod: sourcedPod("file-running", messages.SourceFile)},
			"api-running":  {Pod: sourcedPod("api-running", messages.SourceAPI)},
			"api-deleting": {Phase: Terminating, Pod: sourcedPod("api-deleting", messages.SourceAPI), Terminate: &messages.TerminatePod{}},
			"http-done":    {Phase: Finished, Pod: sourcedPod("http-done", messages.SourceHTTP)},
			"orphan":       {Phase: Orphaned, Terminate: &messages.TerminatePod{}},
		},
		rejected: map[types.UID]*v1.Pod{"api-rejected": sourcedPod("api-rejected", messages.SourceAPI)},
	}}
	a.recordPodCounts()
	for _, c := range []struct {
		name, static string
		want         float64
	}{
		{"kubelet_desired_pods", metrics.StaticTrue, 2},  // file-running, http-done
		{"kubelet_desired_pods", metrics.StaticFalse, 3}, // api-running, api-deleting, api-rejected
		{"kubelet_active_pods", metrics.StaticTrue, 1},   // file-running
		{"kubelet_active_pods", metrics.StaticFalse, 2},  // api-running, api-deleting (still being stopped)
	} {
		vec := metrics.DesiredPods
		if c.name == "kubelet_active_pods" {
			vec = metrics.ActivePods
		}
		var m dto.Metric
		if err := vec.WithLabelValues(c.static).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetGauge().GetValue(); got != c.want {
			t.Errorf("%s{static=%q} = %v, want %v", c.name, c.static, got, c.want)
		}
	}
}
