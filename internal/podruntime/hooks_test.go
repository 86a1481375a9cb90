package podruntime

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/testutil"
)

func TestTerminationOrder(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	sidecar := func(name string) v1.Container { return v1.Container{Name: name, RestartPolicy: &always} }
	plain := func(name string) v1.Container { return v1.Container{Name: name} }
	for _, tc := range []struct {
		name    string
		inits   []v1.Container
		regular []v1.Container
		running []string
		// want maps each container to those it waits for (the running
		// ones only: the others' channels are closed).
		want map[string][]string
		none bool
	}{{
		name: "no sidecar: no order", inits: []v1.Container{plain("i")}, regular: []v1.Container{plain("a")},
		running: []string{"a"}, none: true,
	}, {
		name:  "sidecars wait for the regular containers and the sidecars after them",
		inits: []v1.Container{sidecar("s1"), plain("i"), sidecar("s2")}, regular: []v1.Container{plain("a"), plain("b")},
		running: []string{"a", "b", "s1", "s2"},
		want:    map[string][]string{"a": nil, "b": nil, "s1": {"a", "b", "s2"}, "s2": {"a", "b"}},
	}, {
		name:  "a sidecar that does not run holds nothing",
		inits: []v1.Container{sidecar("s1"), sidecar("s2")}, regular: []v1.Container{plain("a")},
		running: []string{"a", "s1"},
		want:    map[string][]string{"a": nil, "s1": {"a"}},
	}, {
		name:  "only sidecars run",
		inits: []v1.Container{sidecar("s1"), sidecar("s2")}, regular: []v1.Container{plain("a")},
		running: []string{"s1", "s2"},
		want:    map[string][]string{"s1": {"s2"}, "s2": nil},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{InitContainers: tc.inits, Containers: tc.regular}}
			o := newTerminationOrder(pod, tc.running)
			if tc.none {
				if o != nil {
					t.Fatalf("order %+v, want none", o)
				}
				return
			}
			names := map[chan struct{}]string{}
			for n, ch := range o.stopped {
				names[ch] = n
			}
			for _, n := range tc.running {
				var got []string
				for _, ch := range o.after[n] {
					select {
					case <-ch: // closed: not running, nothing to wait for
					default:
						got = append(got, names[ch])
					}
				}
				if !slices.Equal(got, tc.want[n]) {
					t.Errorf("%s waits for %v, want %v", n, got, tc.want[n])
				}
			}
		})
	}
}

func TestWaitForTurn(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "s", RestartPolicy: &always}},
		Containers:     []v1.Container{{Name: "a"}},
	}}
	// The main container stops after a second and a half: the sidecar
	// waited one whole second.
	o := newTerminationOrder(pod, []string{"a", "s"})
	go func() { time.Sleep(1500 * time.Millisecond); o.terminated("a") }()
	if got := o.waitForTurn(context.Background(), "s", 10); got != 1 {
		t.Errorf("waited %ds, want 1", got)
	}
	// A main container that never stops holds the sidecar for its grace
	// period only.
	o = newTerminationOrder(pod, []string{"a", "s"})
	if got := o.waitForTurn(context.Background(), "s", 1); got != 1 {
		t.Errorf("waited %ds, want 1", got)
	}
	// No grace period: no wait.
	start := time.Now()
	if got := o.waitForTurn(context.Background(), "s", 0); got != 0 || time.Since(start) > 100*time.Millisecond {
		t.Errorf("waited %ds (%s), want none", got, time.Since(start))
	}
}

// stopRecorder is the fake runtime, recording each StopContainer as it
// returns, with its container's name and timeout; stopDelay makes the stop
// of a container take that long, as a process that exits some time after
// SIGTERM.
type stopRecorder struct {
	*fakecri.Runtime
	mu        sync.Mutex
	stops     []stopCall
	stopDelay map[string]time.Duration
}

type stopCall struct {
	name    string
	timeout int64
	at      time.Time
}

func (s *stopRecorder) StopContainer(ctx context.Context, in *runtimeapi.StopContainerRequest, opts ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	st, err := s.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: in.ContainerId})
	if err != nil {
		return nil, err
	}
	name := st.Status.Metadata.Name
	time.Sleep(s.stopDelay[name])
	resp, err := s.Runtime.StopContainer(ctx, in, opts...)
	s.mu.Lock()
	s.stops = append(s.stops, stopCall{name, in.Timeout, time.Now()})
	s.mu.Unlock()
	return resp, err
}

// timeouts maps each stopped container to its stop's timeout.
func (s *stopRecorder) timeouts() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int64{}
	for _, c := range s.stops {
		out[c.name] = c.timeout
	}
	return out
}

func (s *stopRecorder) order() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, c := range s.stops {
		out = append(out, c.name)
	}
	return out
}

// fakeHooks runs each hook as its handler's sleep action, in seconds as
// tenths of a second below a whole one (so that sleep 2 takes 1.9 s)
// unless fail names the container, recording the calls.
type fakeHooks struct {
	mu    sync.Mutex
	calls []string // "container podIP id"
	fail  map[string]bool
}

func (h *fakeHooks) Run(ctx context.Context, pod *v1.Pod, podIP, id string, c *v1.Container, handler *v1.LifecycleHandler) (string, error) {
	h.mu.Lock()
	h.calls = append(h.calls, fmt.Sprintf("%s %s %s", c.Name, podIP, id))
	fail := h.fail[c.Name]
	h.mu.Unlock()
	if fail {
		return "hook output", errors.New("exit code 1")
	}
	if handler.Sleep != nil {
		select {
		case <-time.After(time.Duration(handler.Sleep.Seconds)*time.Second - 100*time.Millisecond):
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "", nil
}

func (h *fakeHooks) called() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.calls)
}

type hookFixture struct {
	cri    *stopRecorder
	rt     *Runtime
	hooks  *fakeHooks
	events *record.FakeRecorder
}

func newHookFixture(t *testing.T) *hookFixture {
	f := &hookFixture{
		cri:    &stopRecorder{Runtime: fakecri.New(), stopDelay: map[string]time.Duration{}},
		hooks:  &fakeHooks{fail: map[string]bool{}},
		events: record.NewFakeRecorder(100),
	}
	f.cri.AddImage("registry.test/app:1")
	f.rt = &Runtime{RT: f.cri, Img: f.cri.Runtime, Opts: Options{
		PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: "192.0.2.1", NodeMemoryCapacity: 8 << 30,
		RuntimeRequestTimeout: 10 * time.Second, Recorder: f.events, Hooks: f.hooks,
	}}
	return f
}

func (f *hookFixture) takeEvents() []string { return testutil.Events(f.events) }

func hookPod(grace int64, inits []v1.Container, containers ...v1.Container) *v1.Pod {
	for _, cs := range [][]v1.Container{inits, containers} {
		for i := range cs {
			cs[i].Image, cs[i].ImagePullPolicy = "registry.test/app:1", v1.PullIfNotPresent
		}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node", RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			InitContainers: inits, Containers: containers},
	}
}

func sleepHook(seconds int64) *v1.LifecycleHandler {
	return &v1.LifecycleHandler{Sleep: &v1.SleepAction{Seconds: seconds}}
}

// run syncs the pod until every container runs.
func (f *hookFixture) run(t *testing.T, pod *v1.Pod) {
	t.Helper()
	for range 5 {
		res := f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
		if res.Err != nil {
			t.Fatalf("sync: %v", res.Err)
		}
		if res.Settled {
			f.takeEvents()
			return
		}
	}
	t.Fatal("the pod never settled")
}

// TestPreStopGrace kills pods whose containers have preStop hooks: each
// StopContainer gets the grace period the hook left, at least 2 s, as
// upstream's killContainer.
func TestPreStopGrace(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace int64
		hook  *v1.LifecycleHandler
		want  int64 // StopContainer's timeout
		hooks bool  // the hook ran
	}{
		{"no hook", 5, nil, 5, false},
		{"a hook that takes a whole second", 5, sleepHook(2), 4, true},
		{"a hook that takes longer than the grace period", 1, sleepHook(5), 2, true},
		{"no grace period: no hook", 0, sleepHook(1), 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHookFixture(t)
			c := v1.Container{Name: "app"}
			if tc.hook != nil {
				c.Lifecycle = &v1.Lifecycle{PreStop: tc.hook}
			}
			pod := hookPod(tc.grace, nil, c)
			f.run(t, pod)
			start := time.Now()
			if err := f.rt.KillPodWithSpec(context.Background(), pod, nil); err != nil {
				t.Fatal(err)
			}
			if got := f.cri.timeouts()["app"]; got != tc.want {
				t.Errorf("StopContainer timeout %d, want %d", got, tc.want)
			}
			if ran := len(f.hooks.called()) > 0; ran != tc.hooks {
				t.Errorf("hook ran: %v, want %v", ran, tc.hooks)
			}
			if limit := time.Duration(tc.grace)*time.Second + time.Second; time.Since(start) > limit {
				t.Errorf("kill took %s, longer than the grace period", time.Since(start))
			}
		})
	}
}

// TestPreStopOrphan kills a pod without its spec: the preStop hook
// recorded on the container runs all the same, as upstream's.
func TestPreStopOrphan(t *testing.T) {
	f := newHookFixture(t)
	pod := hookPod(3, nil, v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PreStop: sleepHook(2)}})
	f.run(t, pod)
	if err := f.rt.KillPod(context.Background(), pod.UID, pod.Name, pod.Namespace, nil); err != nil {
		t.Fatal(err)
	}
	if got := f.hooks.called(); len(got) != 1 || !strings.HasPrefix(got[0], "app ") {
		t.Errorf("hooks %v, want app's", got)
	}
	if got := f.cri.timeouts()["app"]; got != 2 {
		t.Errorf("StopContainer timeout %d, want 2", got)
	}
}

// TestPreStopFailure records FailedPreStopHook and stops the container.
func TestPreStopFailure(t *testing.T) {
	f := newHookFixture(t)
	f.hooks.fail["app"] = true
	pod := hookPod(3, nil, v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PreStop: sleepHook(1)}})
	f.run(t, pod)
	if err := f.rt.KillPodWithSpec(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	events := strings.Join(f.takeEvents(), "\n")
	if !strings.Contains(events, "Warning FailedPreStopHook PreStopHook failed") {
		t.Errorf("events:\n%s", events)
	}
	if got := f.cri.timeouts()["app"]; got != 3 {
		t.Errorf("StopContainer timeout %d, want 3", got)
	}
}

// TestSidecarStopOrder kills a pod with two sidecars: the regular
// containers stop first, then the sidecars in reverse order, each with the
// grace period left after its wait.
func TestSidecarStopOrder(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	f := newHookFixture(t)
	pod := hookPod(10,
		[]v1.Container{{Name: "s1", RestartPolicy: &always}, {Name: "s2", RestartPolicy: &always}},
		v1.Container{Name: "a", Lifecycle: &v1.Lifecycle{PreStop: sleepHook(2)}}, v1.Container{Name: "b"})
	f.run(t, pod)
	// s2 stops slowly: s1 waits for it.
	f.cri.stopDelay["s2"] = 600 * time.Millisecond
	if err := f.rt.KillPodWithSpec(context.Background(), pod, nil); err != nil {
		t.Fatal(err)
	}
	order := f.cri.order()
	if len(order) != 4 || !slices.Contains(order[:2], "a") || !slices.Contains(order[:2], "b") || order[2] != "s2" || order[3] != "s1" {
		t.Errorf("stop order %v, want a and b, then s2, then s1", order)
	}
	// a's hook took a whole second; s2 waited a whole second for a, s1
	// two for a and s2.
	want := map[string]int64{"a": 9, "b": 10, "s2": 9, "s1": 8}
	if got := f.cri.timeouts(); !maps.Equal(got, want) {
		t.Errorf("timeouts %v, want %v", got, want)
	}
}

// TestPostStart runs the postStart hook after the start: its success
// leaves the container running, its failure kills it as upstream, and a
// Runtime without hooks refuses it.
func TestPostStart(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fail    bool
		noHooks bool
		want    string // the container's API state
		events  []string
	}{
		{name: "succeeds", want: "Running", events: []string{"Normal Started Container started"}},
		{name: "fails", fail: true, want: "Waiting PostStartHookError hook output", events: []string{
			"Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook"}},
		{name: "no hook runner", noHooks: true, want: "Waiting PostStartHookError ", events: []string{
			"Warning FailedPostStartHook PostStartHook failed", "Normal Killing FailedPostStartHook"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newHookFixture(t)
			f.hooks.fail["app"] = tc.fail
			if tc.noHooks {
				f.rt.Opts.Hooks = nil
			}
			pod := hookPod(3, nil, v1.Container{Name: "app", Lifecycle: &v1.Lifecycle{PostStart: sleepHook(1)}})
			res := f.rt.SyncNewPod(context.Background(), pod, nil, nil, nil)
			if (res.Err != nil) != (tc.fail || tc.noHooks) {
				t.Errorf("sync error %v", res.Err)
			}
			if len(res.APIStatus.ContainerStatuses) != 1 {
				t.Fatalf("statuses %+v", res.APIStatus.ContainerStatuses)
			}
			st := res.APIStatus.ContainerStatuses[0].State
			got := "?"
			switch {
			case st.Running != nil:
				got = "Running"
			case st.Waiting != nil:
				got = "Waiting " + st.Waiting.Reason + " " + st.Waiting.Message
			case st.Terminated != nil:
				got = "Terminated"
			}
			if got != tc.want {
				t.Errorf("state %q, want %q", got, tc.want)
			}
			events := f.takeEvents()
			for _, e := range tc.events {
				if !slices.Contains(events, e) {
					t.Errorf("no event %q in %q", e, events)
				}
			}
			if !tc.noHooks {
				calls := f.hooks.called()
				if len(calls) != 1 || !strings.HasPrefix(calls[0], "app ") || strings.HasSuffix(calls[0], " ") {
					t.Errorf("hook calls %q, want app's with its container ID", calls)
				}
			}
			if tc.fail || tc.noHooks {
				for _, c := range f.cri.Containers() {
					if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
						t.Errorf("container %s is %s, want exited", c.Metadata.Name, c.State)
					}
				}
			}
		})
	}
}
