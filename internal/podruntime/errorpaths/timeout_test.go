package errorpaths

import (
	"context"
	"testing"
	"time"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// requestTimeout is the RuntimeRequestTimeout of the timeout tests: short,
// since each waits it out once.
const requestTimeout = 100 * time.Millisecond

// TestSyncTimeouts makes one CRI call of a pass never answer: the
// RuntimeRequestTimeout ends it, the pass reports DeadlineExceeded and the
// container's waiting reason, and the next pass runs the pod.
func TestSyncTimeouts(t *testing.T) {
	for _, tc := range []struct {
		method  string
		running bool // the pod runs before the pass: SyncPod, not SyncNewPod
		err     string
		waiting string
	}{
		{method: "RunPodSandbox", err: "create sandbox of pod default/web", waiting: podruntime.ReasonContainerCreating},
		{method: "ImageStatus", err: "inspect image", waiting: podruntime.ReasonErrImageInspect},
		{method: "CreateContainer", err: "create container app", waiting: podruntime.ReasonCreateContainerError},
		{method: "StartContainer", err: "start container app", waiting: podruntime.ReasonRunContainerError},
		{method: "ListPodSandbox", running: true, err: "list sandboxes of pod default/web (uid-web)"},
		{method: "ListContainers", running: true, err: "list containers of pod default/web (uid-web)"},
		{method: "ContainerStatus", running: true, err: "status of container container-2 (app) of pod default/web"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := newFixture(t, requestTimeout)
			pod, sync := f.nextPass(t, tc.running)
			f.cri.Inject(tc.method, 1, fakecri.Fault{Block: true})

			start := time.Now()
			res := sync(context.Background(), pod, nil)
			if took := time.Since(start); took > 10*requestTimeout {
				t.Errorf("the pass took %v with a request timeout of %v", took, requestTimeout)
			}
			wantErr(t, res.Err, tc.err, "DeadlineExceeded")
			if tc.waiting != "" {
				if reason, _ := containerState(t, res.APIStatus); reason != tc.waiting {
					t.Errorf("container waits with %q, want %q", reason, tc.waiting)
				}
			}

			res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
			wantErr(t, res.Err)
			if reason, _ := containerState(t, res.APIStatus); reason != "Running" {
				t.Errorf("after recovery the container is %q, want Running", reason)
			}
		})
	}
}

// TestPullIsNotBoundedByTheRequestTimeout: an image pull takes as long as
// it takes (RuntimeRequestTimeout does not apply); cancelling the pass's
// context, as the pod's deletion does, aborts it without ErrImagePull or a
// pull backoff.
func TestPullIsNotBoundedByTheRequestTimeout(t *testing.T) {
	f := newFixture(t, requestTimeout)
	pod := newPod()
	pod.Spec.Containers[0].Image = "registry.test/slow:1"
	ctx, cancel := context.WithCancel(context.Background())
	f.cri.Inject("PullImage", 1, fakecri.Fault{Hook: func(*fakecri.Runtime) { time.AfterFunc(3*requestTimeout, cancel) }, Block: true})

	start := time.Now()
	res := f.rt.SyncNewPod(ctx, pod, nil, nil, nil)
	if took := time.Since(start); took < 3*requestTimeout {
		t.Errorf("the pull ended after %v, before the pass was cancelled", took)
	}
	wantErr(t, res.Err, `pull image "registry.test/slow:1" for pod default/web aborted`, "context canceled")
	if in, _ := f.rt.Opts.PullBackoff.InBackoffSinceUpdate(podruntime.ImagePullBackoffKey(pod, "registry.test/slow:1")); in {
		t.Error("an aborted pull put the image in backoff")
	}
	for _, e := range f.takeEvents() {
		if e == "" || e[:7] == "Warning" {
			t.Errorf("event %q for an aborted pull", e)
		}
	}
}

// TestEachCallHasItsOwnTimeout makes two consecutive CRI calls of a pass
// slow, each within RuntimeRequestTimeout but not both together: the pass
// succeeds, since the timeout bounds each call (Options, and upstream's
// remote runtime client), not the calls of one step together.
func TestEachCallHasItsOwnTimeout(t *testing.T) {
	slow := fakecri.Fault{Delay: requestTimeout * 6 / 10}
	for _, tc := range []struct {
		name    string
		methods []string
		running bool // the pod runs before the pass: SyncPod, not SyncNewPod
	}{
		{name: "sandbox creation", methods: []string{"RunPodSandbox", "PodSandboxStatus"}},
		{name: "container creation", methods: []string{"CreateContainer", "StartContainer"}},
		{name: "listing", methods: []string{"ListPodSandbox", "ListContainers"}, running: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, requestTimeout)
			pod, sync := f.nextPass(t, tc.running)
			for _, m := range tc.methods {
				f.cri.Inject(m, 1, slow)
			}
			res := sync(context.Background(), pod, nil)
			wantErr(t, res.Err)
			if reason, _ := containerState(t, res.APIStatus); reason != "Running" {
				t.Errorf("container is %q, want Running", reason)
			}
		})
	}
}

// TestListPodsCallsHaveTheirOwnTimeout is TestEachCallHasItsOwnTimeout for
// the listing of every pod.
func TestListPodsCallsHaveTheirOwnTimeout(t *testing.T) {
	f := newFixture(t, requestTimeout)
	f.running(t)
	for _, m := range []string{"ListPodSandbox", "ListContainers"} {
		f.cri.Inject(m, 1, fakecri.Fault{Delay: requestTimeout * 6 / 10})
	}
	pods, err := f.rt.ListPods(context.Background())
	wantErr(t, err)
	if len(pods) != 1 {
		t.Errorf("ListPods found %d pods, want 1", len(pods))
	}
}

// TestCreateCallsOutliveTheCancelledPass cancels the pass while one of
// its creating calls runs: the call is not cancelled (a runtime left with
// half a container may never delete it), it makes what it makes, and the
// pass starts nothing after it, leaving what was made to the pod's kill.
func TestCreateCallsOutliveTheCancelledPass(t *testing.T) {
	for _, tc := range []struct {
		method string
		after  string // the next creating call, which must not be made
		state  string // the container's state in the runtime after the pass; "" none
		err    bool   // the pass reports its cancellation: it left something undone
	}{
		{method: "RunPodSandbox", after: "CreateContainer", err: true},
		{method: "CreateContainer", after: "StartContainer", state: "CONTAINER_CREATED", err: true},
		{method: "StartContainer", state: "CONTAINER_RUNNING"},
	} {
		t.Run(tc.method, func(t *testing.T) {
			f := newFixture(t, requestTimeout)
			pod := newPod()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			f.cri.Inject(tc.method, 1, fakecri.Fault{Hook: func(*fakecri.Runtime) { cancel() }, Delay: requestTimeout / 2})

			res := f.rt.SyncNewPod(ctx, pod, nil, nil, nil)
			if tc.err {
				wantErr(t, res.Err, "context canceled")
			}
			if tc.after != "" && f.cri.Calls(tc.after) != 0 {
				t.Errorf("%s was called after the pass was cancelled", tc.after)
			}
			if n := len(f.cri.Sandboxes()); n != 1 {
				t.Errorf("%d sandboxes in the runtime, want the one made", n)
			}
			var states []string
			for _, c := range f.cri.Containers() {
				states = append(states, c.State.String())
			}
			if want := []string{tc.state}; tc.state == "" && len(states) != 0 || tc.state != "" && (len(states) != 1 || states[0] != want[0]) {
				t.Errorf("containers in the runtime %v, want %q", states, tc.state)
			}
		})
	}
}
