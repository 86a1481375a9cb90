package errorpaths

import (
	"context"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/actorlet/actorlet/internal/metrics"
)

// TestUserNamespacesRefused checks that a runtime without user namespaces
// (fakecri reports no handler, as containerd 1.6) refuses a pod with
// hostUsers: false at each pass, with upstream's reason and event, creates
// nothing of it, and counts the attempt and its failure as upstream's
// started_user_namespaced_pods metrics.
func TestUserNamespacesRefused(t *testing.T) {
	f := newFixture(t, 0)
	pod := newPod()
	hostUsers := false
	pod.Spec.HostUsers = &hostUsers
	const reason = "can't set `spec.hostUsers: false`, runtime does not support user namespaces"
	started, failed := value(t, metrics.StartedUserNamespacedPods), value(t, metrics.StartedUserNamespacedPodsErrors)
	for pass := 1; pass <= 2; pass++ {
		res := f.rt.SyncNewPod(context.Background(), pod, nil, nil, nil)
		if res.Err == nil || res.Err.Error() != "pod default/web: "+reason {
			t.Fatalf("pass %d: error %v, want %q", pass, res.Err, reason)
		}
		if got := f.takeEvents(); len(got) != 1 || got[0] != "Warning FailedCreatePodSandBox Failed to create pod sandbox: "+reason {
			t.Errorf("pass %d: events %q", pass, got)
		}
		if n := f.cri.Calls("RunPodSandbox"); n != 0 {
			t.Errorf("pass %d: %d RunPodSandbox calls", pass, n)
		}
		if got := value(t, metrics.StartedUserNamespacedPods) - started; got != float64(pass) {
			t.Errorf("pass %d: started_user_namespaced_pods_total rose by %v", pass, got)
		}
		if got := value(t, metrics.StartedUserNamespacedPodsErrors) - failed; got != float64(pass) {
			t.Errorf("pass %d: started_user_namespaced_pods_errors_total rose by %v", pass, got)
		}
	}
}

func value(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
