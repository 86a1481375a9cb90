package lifecycle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/actorlet/actorlet/test/agent"
)

// TestPods is a pod's life as a whole: activeDeadlineSeconds, the statuses
// and conditions of a pod with an init container over its start, the
// grace period of a deletion, and sidecars (init containers with
// restartPolicy Always) at start, in a crash and at a pod's completion.
func TestPods(t *testing.T) {
	n := newLifeNode(t, "pods")

	t.Run("activeDeadlineSeconds at creation", func(t *testing.T) {
		t.Parallel()
		p := n.NewPod("deadline", nil, n.Sleeper("app"))
		five := int64(5)
		p.Spec.ActiveDeadlineSeconds = &five
		n.Create(t, p)
		pod := n.deadlineExceeded(t, "deadline", 5*time.Second)
		if pod.Status.StartTime == nil {
			t.Fatalf("no start time: %s", describe(pod, pod.CreationTimestamp.Time))
		}
	})

	t.Run("activeDeadlineSeconds lowered on a running pod", func(t *testing.T) {
		t.Parallel()
		n.Run(t, n.NewPod("deadline-update", nil, n.Sleeper("app")))
		// As the e2e spec "Pods should allow activeDeadlineSeconds to be
		// updated": a running pod without a deadline gets one.
		before := time.Now()
		n.updatePod(t, "deadline-update", func(p *v1.Pod) {
			five := int64(5)
			p.Spec.ActiveDeadlineSeconds = &five
		})
		pod := n.deadlineExceeded(t, "deadline-update", 0)
		if start := pod.Status.StartTime.Time; time.Since(start) < 5*time.Second {
			t.Errorf("failed %v after its start, before its deadline", time.Since(start))
		}
		t.Logf("failed %v after the update", time.Since(before).Round(time.Millisecond))
	})

	t.Run("an init container's statuses and conditions", func(t *testing.T) {
		t.Parallel()
		p := n.NewPod("init", nil, n.Sleeper("app"))
		p.Spec.InitContainers = []v1.Container{n.Busybox("setup", "sleep 3")}
		rec := n.record(t, "init")
		n.Create(t, p)
		n.Running(t, "init", 60*time.Second)
		n.checkInitTimeline(t, rec.stop())
	})

	t.Run("a deletion's grace period", func(t *testing.T) {
		t.Parallel()
		// A container that ignores SIGTERM lives until the grace period
		// ends: the deletion's, not the spec's, as upstream's pod workers.
		stubborn := n.Busybox("app", "trap '' TERM; while true; do sleep 0.2; done")
		cases := []struct {
			name      string
			spec      int64
			deletions []int64
			min, max  time.Duration
		}{
			{"grace-shorter", 30, []int64{3}, 2 * time.Second, 12 * time.Second},
			{"grace-longer", 1, []int64{6}, 5 * time.Second, 20 * time.Second},
			{"grace-shortened", 30, []int64{60, 2}, time.Second, 12 * time.Second},
		}
		var wg sync.WaitGroup
		for _, c := range cases {
			p := n.NewPod(c.name, nil, stubborn)
			p.Spec.TerminationGracePeriodSeconds = &c.spec
			n.Create(t, p)
		}
		for _, c := range cases {
			n.Running(t, c.name, 60*time.Second)
		}
		for _, c := range cases {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var last time.Time
				for i, g := range c.deletions {
					if i > 0 {
						time.Sleep(time.Second)
					}
					last = time.Now()
					err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), c.name, metav1.DeleteOptions{GracePeriodSeconds: &g})
					if err != nil {
						t.Errorf("%s: delete with grace period %d: %v", c.name, g, err)
						return
					}
				}
				if kubelet.Upstream && len(c.deletions) > 1 {
					// Upstream's pod workers cancel the kill in flight for
					// a shorter grace period, yet on this machine its pod
					// went only after the first grace period (62 s after
					// the first deletion); actorlet shortens it.
					c.max = time.Duration(c.deletions[0]+20) * time.Second
				}
				took := n.gone(t, c.name, c.max+30*time.Second).Sub(last)
				t.Logf("%s: spec %d s, deletions %v: gone %v after the last", c.name, c.spec, c.deletions, took.Round(time.Millisecond))
				if took < c.min || took > c.max {
					t.Errorf("%s: gone %v after the deletion, want between %v and %v", c.name, took, c.min, c.max)
				}
			}()
		}
		wg.Wait()
	})

	t.Run("sidecars start in order and restart on their own", func(t *testing.T) {
		t.Parallel()
		shared := []v1.Volume{{Name: "x", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
		mount := v1.VolumeMount{Name: "x", MountPath: "/x"}
		p := n.NewPod("sidecars", shared, n.Busybox("app", "echo app >> /x/order; exec sleep 3600", mount))
		// sc1 exits with 3 when /x/crash appears; the next init
		// container checks that sc1 runs.
		p.Spec.InitContainers = []v1.Container{
			n.sidecar(n.Busybox("sc1", "echo sc1 >> /x/order; while [ ! -f /x/crash ]; do sleep 0.1; done; rm /x/crash; exit 3", mount)),
			n.Busybox("check", "grep -q sc1 /x/order && echo check >> /x/order", mount),
			n.sidecar(n.Busybox("sc2", "echo sc2 >> /x/order; exec sleep 3600", mount)),
		}
		n.Run(t, p)
		n.Expect(t, "sidecars", "app", "cat /x/order | tr '\\n' ' '", "sc1 check sc2 app ")
		pod, _ := n.Get("sidecars")
		t.Logf("running: %s", describe(pod, pod.CreationTimestamp.Time))
		checkInitStates(t, pod, map[string]string{"sc1": "running", "check": "terminated", "sc2": "running"})

		n.Sh(t, "sidecars", "app", "touch /x/crash")
		var sc1 v1.ContainerStatus
		agent.Eventually(t, "sc1 restarted", 60*time.Second, func() error {
			cs, err := n.ContainerState("sidecars", "sc1")
			if err != nil {
				return err
			}
			if cs.RestartCount < 1 || cs.State.Running == nil {
				return fmt.Errorf("sc1: restarts %d, state %+v", cs.RestartCount, cs.State)
			}
			sc1 = *cs
			return nil
		})
		if last := sc1.LastTerminationState.Terminated; last == nil || last.ExitCode != 3 || last.Reason != "Error" {
			t.Errorf("sc1's last state: %+v, want terminated with exit code 3 (Error)", sc1.LastTerminationState)
		}
		n.EventuallySees(t, "sidecars", "app", "cat /x/order | tr '\\n' ' '", "sc1 check sc2 app sc1 ", 10*time.Second)
		pod, _ = n.Get("sidecars")
		t.Logf("after sc1's restart: %s", describe(pod, pod.CreationTimestamp.Time))
		if pod.Status.Phase != v1.PodRunning {
			t.Errorf("phase %s after a sidecar's restart, want Running", pod.Status.Phase)
		}
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.RestartCount != 0 || cs.State.Running == nil {
				t.Errorf("app container %s: restarts %d, state %+v: a sidecar's restart touches no app container", cs.Name, cs.RestartCount, cs.State)
			}
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodReady && c.Status != v1.ConditionTrue {
				t.Errorf("pod not Ready after the sidecar's restart: %+v", c)
			}
		}
	})

	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure} {
		name := "sidecar-" + strings.ToLower(string(policy))
		t.Run("a "+string(policy)+" pod with a sidecar completes", func(t *testing.T) {
			t.Parallel()
			p := n.NewPod(name, nil, n.Busybox("app", "sleep 2"))
			p.Spec.RestartPolicy = policy
			p.Spec.InitContainers = []v1.Container{n.sidecar(n.Sleeper("sc"))}
			n.Create(t, p)
			pod := n.phase(t, name, v1.PodSucceeded, 60*time.Second)
			t.Logf("completed: %s", describe(pod, pod.CreationTimestamp.Time))
			if cs := appStatus(pod, "app"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				t.Errorf("app: %+v, want terminated with 0", cs)
			}
			// The sidecar is stopped once the app completed, and is not
			// restarted.
			agent.Eventually(t, "the sidecar stopped", 30*time.Second, func() error {
				cs, err := n.ContainerState(name, "sc")
				if err != nil {
					return err
				}
				if cs.State.Terminated == nil {
					return fmt.Errorf("sc: %+v", cs.State)
				}
				return nil
			})
			pod, _ = n.Get(name)
			t.Logf("sidecar stopped: %s", describe(pod, pod.CreationTimestamp.Time))
			if pod.Status.Phase != v1.PodSucceeded {
				t.Errorf("phase %s, want Succeeded", pod.Status.Phase)
			}
			for _, c := range pod.Status.Conditions {
				switch c.Type {
				case v1.PodReady, v1.ContainersReady:
					if c.Status != v1.ConditionFalse || c.Reason != "PodCompleted" {
						t.Errorf("condition %s: %s (%s), want False (PodCompleted)", c.Type, c.Status, c.Reason)
					}
				}
			}
		})
	}
}

// sidecar makes c an init container that keeps running: restartPolicy
// Always.
func (n *lifeNode) sidecar(c v1.Container) v1.Container {
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// deadlineExceeded waits until the API shows the pod Failed for its
// active deadline, as upstream words it, with upstream's event, and its
// containers stopped; not before its start time plus atLeast.
func (n *lifeNode) deadlineExceeded(t *testing.T, name string, atLeast time.Duration) *v1.Pod {
	t.Helper()
	pod := n.phase(t, name, v1.PodFailed, 60*time.Second)
	t.Logf("failed: %s", describe(pod, pod.CreationTimestamp.Time))
	if pod.Status.Reason != "DeadlineExceeded" || pod.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Errorf("reason %q, message %q: want upstream's DeadlineExceeded", pod.Status.Reason, pod.Status.Message)
	}
	if pod.Status.StartTime != nil {
		if ran := time.Since(pod.Status.StartTime.Time); ran < atLeast {
			t.Errorf("failed %v after its start, before its deadline %v", ran, atLeast)
		}
	}
	ev := n.Event(t, name, "DeadlineExceeded", "Pod was active on the node longer than the specified deadline")
	if ev.Type != v1.EventTypeNormal {
		t.Errorf("event %s is %s, want Normal as upstream's", ev.Reason, ev.Type)
	}
	agent.Eventually(t, "its container stopped", 30*time.Second, func() error {
		cs, err := n.ContainerState(name, "app")
		if err != nil {
			return err
		}
		if cs.State.Terminated == nil {
			return fmt.Errorf("app: %+v", cs.State)
		}
		return nil
	})
	pod, _ = n.Get(name)
	t.Logf("stopped: %s", describe(pod, pod.CreationTimestamp.Time))
	if pod.Status.Phase != v1.PodFailed || pod.Status.Reason != "DeadlineExceeded" {
		t.Errorf("after the stop: phase %s, reason %q", pod.Status.Phase, pod.Status.Reason)
	}
	return pod
}

// phase waits until the API shows the pod in phase and returns it.
func (n *lifeNode) phase(t *testing.T, name string, phase v1.PodPhase, within time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, fmt.Sprintf("pod %s %s", name, phase), within, func() error {
		p, err := n.Get(name)
		if err != nil {
			return err
		}
		if p.Status.Phase != phase {
			return fmt.Errorf("phase %s: %s", p.Status.Phase, describe(p, p.CreationTimestamp.Time))
		}
		pod = p
		return nil
	})
	return pod
}

// gone waits until the pod is gone from the API and returns when it saw
// it gone.
func (n *lifeNode) gone(t *testing.T, name string, within time.Duration) time.Time {
	t.Helper()
	agent.Eventually(t, "pod "+name+" gone from the API", within, func() error {
		_, err := n.Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	return time.Now()
}

// updatePod changes the pod's spec through the API, retrying conflicts.
func (n *lifeNode) updatePod(t *testing.T, name string, change func(*v1.Pod)) {
	t.Helper()
	agent.Eventually(t, "update of "+name, 10*time.Second, func() error {
		p, err := n.Get(name)
		if err != nil {
			return err
		}
		change(p)
		_, err = n.Admin.CoreV1().Pods(n.NS).Update(context.Background(), p, metav1.UpdateOptions{})
		return err
	})
}

// recording is every version of a pod the API showed, from a watch.
type recording struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	pods   []*v1.Pod
}

// record watches the pod from before it is created. The watch starts at
// the resourceVersion of a list, and a RetryWatcher resumes it from the
// last version seen when the API server closes it, so a closed watch does
// not lose the pod's versions.
func (n *lifeNode) record(t *testing.T, name string) *recording {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	list, err := n.Admin.CoreV1().Pods(n.NS).List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		cancel()
		t.Fatalf("list pod %s: %v", name, err)
	}
	w, err := watchtools.NewRetryWatcherWithContext(ctx, list.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return n.Admin.CoreV1().Pods(n.NS).Watch(ctx, o)
		}})
	if err != nil {
		cancel()
		t.Fatalf("watch pod %s: %v", name, err)
	}
	r := &recording{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(r.done)
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				p, isPod := ev.Object.(*v1.Pod)
				if !isPod {
					t.Logf("watch of pod %s: %s %T %v", name, ev.Type, ev.Object, ev.Object)
					continue
				}
				r.mu.Lock()
				r.pods = append(r.pods, p)
				r.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { cancel(); <-r.done })
	return r
}

func (r *recording) stop() []*v1.Pod {
	r.cancel()
	<-r.done
	return r.pods
}

// checkInitTimeline checks what the API showed of a pod whose init
// container "setup" runs for a while before its app container "app" runs,
// as upstream's kubelet shows it: the app container waits as
// PodInitializing; Initialized, ContainersReady and Ready stay False with
// upstream's reasons and messages until the app runs; transition times
// change only with their condition's status; every condition carries the
// pod's generation.
func (n *lifeNode) checkInitTimeline(t *testing.T, pods []*v1.Pod) {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("the watch saw nothing")
	}
	t0 := pods[0].CreationTimestamp.Time
	sawInitRunning := false
	transitions := map[v1.PodConditionType]v1.PodCondition{}
	for _, p := range pods {
		t.Logf("%s", describe(p, t0))
		s := p.Status
		if len(s.Conditions) == 0 || s.ObservedGeneration == 0 {
			continue // as created: the node has not written it yet
		}
		if s.StartTime == nil {
			t.Errorf("phase %s without a start time", s.Phase)
		}
		for _, c := range s.Conditions {
			if c.ObservedGeneration != p.Generation {
				t.Errorf("condition %s: observedGeneration %d, pod's generation %d", c.Type, c.ObservedGeneration, p.Generation)
			}
			if old, ok := transitions[c.Type]; ok && old.Status == c.Status && !old.LastTransitionTime.Equal(&c.LastTransitionTime) {
				t.Errorf("condition %s stayed %s but its transition time moved from %v to %v", c.Type, c.Status, old.LastTransitionTime, c.LastTransitionTime)
			}
			transitions[c.Type] = c
		}
		setup := initStatus(p, "setup")
		app := appStatus(p, "app")
		if setup == nil || app == nil {
			t.Errorf("phase %s: container statuses missing: %s", s.Phase, describe(p, t0))
			continue
		}
		if setup.State.Running == nil {
			continue
		}
		sawInitRunning = true
		if s.Phase != v1.PodPending {
			t.Errorf("phase %s while the init container runs", s.Phase)
		}
		if w := app.State.Waiting; w == nil || w.Reason != "PodInitializing" {
			t.Errorf("app container while the init container runs: %+v, want waiting PodInitializing", app.State)
		}
		if app.Ready || app.Started == nil || *app.Started {
			t.Errorf("app container: ready %v, started %v, want false and false", app.Ready, ptrStr(app.Started))
		}
		if setup.Ready || setup.Started == nil || !*setup.Started {
			t.Errorf("init container: ready %v, started %v, want false and true", setup.Ready, ptrStr(setup.Started))
		}
		want := map[v1.PodConditionType][3]string{
			v1.PodReadyToStartContainers: {"True", "", ""},
			v1.PodInitialized:            {"False", "ContainersNotInitialized", "containers with incomplete status: [setup]"},
			v1.ContainersReady:           {"False", "ContainersNotReady", "containers with unready status: [app]"},
			v1.PodReady:                  {"False", "ContainersNotReady", "containers with unready status: [app]"},
			v1.PodScheduled:              {"True", "", ""},
		}
		checkConditions(t, p, want)
	}
	if !sawInitRunning {
		t.Errorf("the API never showed the init container running")
	}
	last := pods[len(pods)-1]
	checkConditions(t, last, map[v1.PodConditionType][3]string{
		v1.PodReadyToStartContainers: {"True", "", ""},
		v1.PodInitialized:            {"True", "", ""},
		v1.ContainersReady:           {"True", "", ""},
		v1.PodReady:                  {"True", "", ""},
		v1.PodScheduled:              {"True", "", ""},
	})
	setup := initStatus(last, "setup")
	if setup == nil || setup.State.Terminated == nil || setup.State.Terminated.ExitCode != 0 || setup.State.Terminated.Reason != "Completed" || !setup.Ready {
		t.Errorf("init container at the end: %+v", setup)
	} else if term := setup.State.Terminated; term.StartedAt.IsZero() || term.FinishedAt.Sub(term.StartedAt.Time) < 2*time.Second || term.ContainerID == "" {
		t.Errorf("init container's termination: %+v", term)
	}
	cond := func(ty v1.PodConditionType) time.Time {
		for _, c := range last.Status.Conditions {
			if c.Type == ty {
				return c.LastTransitionTime.Time
			}
		}
		return time.Time{}
	}
	if setup != nil && setup.State.Terminated != nil && cond(v1.PodInitialized).Before(setup.State.Terminated.FinishedAt.Time) {
		t.Errorf("Initialized became True at %v, before the init container finished at %v", cond(v1.PodInitialized), setup.State.Terminated.FinishedAt)
	}
	if cond(v1.PodReady).Before(cond(v1.PodInitialized)) {
		t.Errorf("Ready became True at %v, before Initialized at %v", cond(v1.PodReady), cond(v1.PodInitialized))
	}
}

// checkConditions compares the pod's conditions with want (type → status,
// reason, message).
func checkConditions(t *testing.T, p *v1.Pod, want map[v1.PodConditionType][3]string) {
	t.Helper()
	var got []string
	for _, c := range p.Status.Conditions {
		w, ok := want[c.Type]
		if !ok {
			continue
		}
		got = append(got, string(c.Type))
		if string(c.Status) != w[0] || c.Reason != w[1] || c.Message != w[2] {
			t.Errorf("phase %s: condition %s: %s %q %q, want %s %q %q", p.Status.Phase, c.Type, c.Status, c.Reason, c.Message, w[0], w[1], w[2])
		}
		if c.LastTransitionTime.IsZero() {
			t.Errorf("condition %s without a transition time", c.Type)
		}
	}
	for ty := range want {
		if !slices.Contains(got, string(ty)) {
			t.Errorf("phase %s: no condition %s", p.Status.Phase, ty)
		}
	}
}

// checkInitStates checks the state (waiting, running, terminated) of
// init containers.
func checkInitStates(t *testing.T, p *v1.Pod, want map[string]string) {
	t.Helper()
	for name, w := range want {
		cs := initStatus(p, name)
		if cs == nil {
			t.Errorf("no status of init container %s", name)
			continue
		}
		got := "waiting"
		switch {
		case cs.State.Running != nil:
			got = "running"
		case cs.State.Terminated != nil:
			got = "terminated"
		}
		if got != w {
			t.Errorf("init container %s: %s, want %s", name, got, w)
		}
	}
}

func initStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.InitContainerStatuses {
		if p.Status.InitContainerStatuses[i].Name == name {
			return &p.Status.InitContainerStatuses[i]
		}
	}
	return nil
}

func appStatus(p *v1.Pod, name string) *v1.ContainerStatus {
	for i := range p.Status.ContainerStatuses {
		if p.Status.ContainerStatuses[i].Name == name {
			return &p.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// describe is the pod's status on a few lines, times relative to t0, for
// the test's log.
func describe(pod *v1.Pod, t0 time.Time) string {
	var b strings.Builder
	s := pod.Status
	start := "nil"
	if s.StartTime != nil {
		start = rel(*s.StartTime, t0)
	}
	fmt.Fprintf(&b, "gen=%d phase=%s reason=%q message=%q start=%s observedGeneration=%d\n",
		pod.Generation, s.Phase, s.Reason, s.Message, start, s.ObservedGeneration)
	for _, c := range s.Conditions {
		fmt.Fprintf(&b, "  condition %s=%s reason=%q message=%q at=%s og=%d\n", c.Type, c.Status, c.Reason, c.Message, rel(c.LastTransitionTime, t0), c.ObservedGeneration)
	}
	for _, list := range []struct {
		kind string
		cs   []v1.ContainerStatus
	}{{"init", s.InitContainerStatuses}, {"app", s.ContainerStatuses}} {
		for _, c := range list.cs {
			fmt.Fprintf(&b, "  %s %s ready=%v started=%s restarts=%d id=%t imageID=%t state=%s last=%s volumeMounts=%d resources=%t user=%t\n",
				list.kind, c.Name, c.Ready, ptrStr(c.Started), c.RestartCount, c.ContainerID != "", c.ImageID != "",
				state(c.State, t0), state(c.LastTerminationState, t0), len(c.VolumeMounts), c.Resources != nil, c.User != nil)
		}
	}
	return b.String()
}

func rel(t metav1.Time, t0 time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return fmt.Sprintf("%+.0fs", t.Sub(t0).Seconds())
}

func ptrStr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

func state(s v1.ContainerState, t0 time.Time) string {
	switch {
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%q, %q)", s.Waiting.Reason, s.Waiting.Message)
	case s.Running != nil:
		return fmt.Sprintf("running(%s)", rel(s.Running.StartedAt, t0))
	case s.Terminated != nil:
		x := s.Terminated
		return fmt.Sprintf("terminated(%d, %q, %q, %s..%s, id=%t)", x.ExitCode, x.Reason, x.Message, rel(x.StartedAt, t0), rel(x.FinishedAt, t0), x.ContainerID != "")
	}
	return "none"
}
