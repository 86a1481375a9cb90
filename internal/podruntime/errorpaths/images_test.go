package errorpaths

import (
	"context"
	"testing"
	"time"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// TestFailedPullBacksOff fails an image pull: the pass reports
// ErrImagePull and asks to be retried when the pull backoff expires; a
// pass before then reports ImagePullBackOff without pulling, and the pass
// after it pulls and runs the pod, as upstream's image manager.
func TestFailedPullBacksOff(t *testing.T) {
	const img = "registry.test/new:1"
	f := newFixture(t, 10*time.Second)
	pod := newPod()
	pod.Spec.Containers[0].Image = img
	f.cri.Inject("PullImage", 1, fakecri.Fault{Err: unknown("429 Too Many Requests")})

	passes := []struct {
		name   string
		step   time.Duration // the clock moves this much before the pass
		pulls  int           // PullImage calls so far
		err    []string
		state  string
		retry  bool
		events []string
	}{{
		name: "pull fails", pulls: 1,
		err:   []string{`pull image "registry.test/new:1" for container app of pod default/web`, "429 Too Many Requests"},
		state: podruntime.ReasonErrImagePull, retry: true,
		events: []string{`Normal Pulling Pulling image "registry.test/new:1"`, `Warning Failed Failed to pull image "registry.test/new:1": rpc error: code = Unknown desc = 429 Too Many Requests`, "Warning Failed Error: ErrImagePull"},
	}, {
		name: "in backoff", step: time.Second, pulls: 1,
		err:   []string{`Back-off pulling image "registry.test/new:1"`},
		state: podruntime.ReasonImagePullBackOff, retry: true,
		events: []string{`Normal BackOff Back-off pulling image "registry.test/new:1"`, "Warning Failed Error: ImagePullBackOff"},
	}, {
		name: "backoff expired", step: podruntime.InitialImagePullBackoff, pulls: 2,
		state:  "Running",
		events: []string{`Normal Pulling Pulling image "registry.test/new:1"`, `Normal Pulled Successfully pulled image "registry.test/new:1"`, "Normal Created", "Normal Started"},
	}}
	for i, p := range passes {
		f.clock.Step(p.step)
		sync := f.rt.SyncPod
		if i == 0 {
			sync = f.rt.SyncNewPod
		}
		res := sync(context.Background(), pod, nil, nil, nil)
		wantErr(t, res.Err, p.err...)
		if state, _ := containerState(t, res.APIStatus); state != p.state {
			t.Errorf("%s: container is %q, want %q", p.name, state, p.state)
		}
		if retry := res.RetryAfter > 0 && res.RetryAfter <= podruntime.InitialImagePullBackoff; retry != p.retry {
			t.Errorf("%s: RetryAfter %v, want one within the initial pull backoff: %v", p.name, res.RetryAfter, p.retry)
		}
		if n := f.cri.Calls("PullImage"); n != p.pulls {
			t.Errorf("%s: %d pulls, want %d", p.name, n, p.pulls)
		}
		wantEvents(t, f.takeEvents(), p.events)
	}
}
