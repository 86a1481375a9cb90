package podmanager

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// fakeRuntime records what the pod-manager's workers ask of the runtime;
// the pod-manager's merging, admission and orphan logic is what is tested.
type fakeRuntime struct {
	mu      sync.Mutex
	synced  map[types.UID]int
	killed  map[types.UID]string // grace as text, "recorded" for nil
	running []*podruntime.PodStatus
	// firstPass records, per pod, whether its first pass was SyncNewPod.
	firstPass map[types.UID]string
	// listFailures is how many of the next ListPods fail, as a runtime
	// whose ListPodSandbox fails.
	listFailures int
}

func (f *fakeRuntime) SyncPod(ctx context.Context, pod *v1.Pod, _ map[string]volume.Mounted, b *podruntime.Backoff, _ results.Pod) podruntime.SyncResult {
	return f.sync(pod, "listed")
}

func (f *fakeRuntime) ObservePod(ctx context.Context, pod *v1.Pod, _ bool) podruntime.SyncResult {
	return podruntime.SyncResult{}
}

func (f *fakeRuntime) SyncNewPod(ctx context.Context, pod *v1.Pod, _ map[string]volume.Mounted, b *podruntime.Backoff, _ results.Pod) podruntime.SyncResult {
	return f.sync(pod, "new")
}

func (f *fakeRuntime) sync(pod *v1.Pod, how string) podruntime.SyncResult {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.firstPass[pod.UID]; !ok {
		f.firstPass[pod.UID] = how
	}
	f.synced[pod.UID]++
	if strings.HasPrefix(string(pod.UID), "done") {
		return podruntime.SyncResult{APIStatus: v1.PodStatus{Phase: v1.PodSucceeded}}
	}
	return podruntime.SyncResult{APIStatus: v1.PodStatus{Phase: v1.PodRunning}}
}

func (f *fakeRuntime) Kill(_ context.Context, k podruntime.Kill) error {
	if k.Stopped != nil {
		k.Stopped(nil)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	uid := k.UID
	if k.Pod != nil {
		uid = k.Pod.UID
	}
	f.killed[uid] = "recorded"
	if k.GracePeriod != nil {
		f.killed[uid] = fmt.Sprint(*k.GracePeriod)
	}
	return nil
}

func (f *fakeRuntime) ListPods(context.Context) ([]*podruntime.PodStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listFailures > 0 {
		f.listFailures--
		return nil, fmt.Errorf("list sandboxes: rpc error: code = Unavailable desc = connection refused")
	}
	return f.running, nil
}

// PodUIDs fails: the tests that need the pod-manager's listing of the
// runtime send its answer themselves, in order with their pods.
func (f *fakeRuntime) PodUIDs(context.Context) (map[types.UID]bool, error) {
	return nil, fmt.Errorf("no listing in this test")
}

func (f *fakeRuntime) firstPasses() map[types.UID]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[types.UID]string{}
	for k, v := range f.firstPass {
		out[k] = v
	}
	return out
}

func (f *fakeRuntime) state() (synced map[types.UID]int, killed map[types.UID]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	synced, killed = map[types.UID]int{}, map[types.UID]string{}
	for k, v := range f.synced {
		synced[k] = v
	}
	for k, v := range f.killed {
		killed[k] = v
	}
	return synced, killed
}

// reports collects what the pod-manager tells the status-reporter.
type reports struct {
	mu       sync.Mutex
	finished []string
	// phases are the phases of the statuses reported, in order.
	phases []v1.PodPhase
	// mirrorChecks are the static pods whose mirror was to be checked.
	mirrorChecks []types.UID
}

func (r *reports) Receive(ctx actor.Context) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch m := ctx.Message().(type) {
	case *messages.PodFinished:
		r.finished = append(r.finished, fmt.Sprintf("%s removed=%v", m.Pod.UID, m.Removed))
	case *messages.PodStatusReport:
		r.phases = append(r.phases, m.Status.Phase)
	case *messages.CheckMirrorPod:
		r.mirrorChecks = append(r.mirrorChecks, m.UID)
	}
}

func testPod(uid string, cpu string) *v1.Pod {
	grace := int64(30)
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p-" + uid, Namespace: "default", UID: types.UID(uid)},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: &grace, Containers: []v1.Container{{Name: "c", Image: "busybox"}}}}
	if cpu != "" {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	}
	return p
}

type harness struct {
	t       *testing.T
	system  *supervision.System
	rt      *fakeRuntime
	reports *reports
	pm      *actor.PID
}

func newHarness(t *testing.T, maxPods int, running ...*podruntime.PodStatus) *harness {
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	h := &harness{t: t, system: system, rt: &fakeRuntime{synced: map[types.UID]int{}, killed: map[types.UID]string{}, running: running, firstPass: map[types.UID]string{}}, reports: &reports{}}
	sr, err := system.Root.SpawnNamed(system.Registry.Props("status-reporter", func() actor.Actor { return h.reports }, nil), "sr")
	if err != nil {
		t.Fatal(err)
	}
	h.pm, err = system.Root.SpawnNamed(system.Registry.Props(Kind, New(Params{
		Registry: system.Registry, Runtime: h.rt, Sources: []string{messages.SourceFile, messages.SourceAPI},
		MaxPods: maxPods, Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
		StatusReporter: sr, Log: zerolog.Nop(),
	}), WorkerStrategy(system.Registry)), "pm")
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *harness) send(source string, pods ...*v1.Pod) {
	supervision.TellFromOutside(h.system.ActorSystem, h.pm, &messages.PodUpdate{Source: source, Pods: pods})
}

func (h *harness) eventually(what string, check func(synced map[types.UID]int, killed map[types.UID]string) error) {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	var err error
	for time.Now().Before(deadline) {
		if err = check(h.rt.state()); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("%s: %v", what, err)
}

func (h *harness) list() []v1.Pod {
	res, err := h.system.Root.RequestFuture(h.pm, &messages.ListPods{}, 5*time.Second).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	return res.(*messages.PodList).Pods
}

func TestSetStartsAndRemoves(t *testing.T) {
	h := newHarness(t, 10)
	a, b := testPod("a", ""), testPod("b", "")
	h.send(messages.SourceFile, a, b)
	h.eventually("both pods synced", func(s map[types.UID]int, _ map[types.UID]string) error {
		if s["a"] == 0 || s["b"] == 0 {
			return fmt.Errorf("synced %v", s)
		}
		return nil
	})
	h.send(messages.SourceFile, a)
	h.eventually("b killed with its own grace period", func(_ map[types.UID]int, k map[types.UID]string) error {
		if k["b"] != "30" || k["a"] != "" {
			return fmt.Errorf("killed %v", k)
		}
		return nil
	})
	h.eventually("b reported finished and removed", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if strings.Join(h.reports.finished, ",") != "b removed=true" {
			return fmt.Errorf("finished %v", h.reports.finished)
		}
		return nil
	})
	if pods := h.list(); len(pods) != 1 || pods[0].UID != "a" || pods[0].Status.Phase != v1.PodRunning {
		t.Errorf("/pods lists %+v", pods)
	}
}

// TestFirstPassOfANewPodDoesNotList: only a pod of the API server that the
// runtime did not hold when the pod-manager started, and that it has not
// run, starts without listing the runtime.
func TestFirstPassOfANewPodDoesNotList(t *testing.T) {
	h := newHarness(t, 10)
	before := testPod("before-listing", "")
	h.send(messages.SourceAPI, before)
	supervision.TellFromOutside(h.system.ActorSystem, h.pm, &messages.RuntimePodsListed{UIDs: map[types.UID]bool{"in-runtime": true}})
	deleted := testPod("deleted", "")
	deleted.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	h.send(messages.SourceAPI, before, testPod("new", ""), testPod("in-runtime", ""), deleted)
	h.send(messages.SourceFile, testPod("static", ""))
	want := map[types.UID]string{
		"before-listing": "listed", // the runtime not listed yet
		"new":            "new",
		"in-runtime":     "listed",
		"static":         "listed", // a static pod's UID comes back with its manifest
	}
	h.eventually("every pod's first pass", func(map[types.UID]int, map[types.UID]string) error {
		got := h.rt.firstPasses()
		for uid, how := range want {
			if got[uid] != how {
				return fmt.Errorf("first passes %v, want %v", got, want)
			}
		}
		return nil
	})
	if how, ok := h.rt.firstPasses()["deleted"]; ok {
		t.Errorf("a pod deleted before it ran was synced (%s), want it only terminated", how)
	}
}

// A worker tells its phase before its first sync observed anything; that
// must not reach the status-reporter, whose write would blank the API
// pod's phase.
func TestOnlyObservedStatusesAreReported(t *testing.T) {
	h := newHarness(t, 10)
	h.send(messages.SourceAPI, testPod("a", ""))
	h.eventually("synced and reported", func(synced map[types.UID]int, _ map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if synced["a"] == 0 || len(h.reports.phases) == 0 {
			return fmt.Errorf("synced %v, reported %v", synced, h.reports.phases)
		}
		return nil
	})
	h.reports.mu.Lock()
	defer h.reports.mu.Unlock()
	if len(h.reports.phases) != 1 || h.reports.phases[0] != v1.PodRunning {
		t.Errorf("reported phases %q, want only Running", h.reports.phases)
	}
}

func TestDeletionTimestampTerminatesWithItsGrace(t *testing.T) {
	h := newHarness(t, 10)
	p := testPod("d", "")
	h.send(messages.SourceAPI, p)
	h.eventually("synced", func(s map[types.UID]int, _ map[types.UID]string) error {
		if s["d"] == 0 {
			return fmt.Errorf("not synced")
		}
		return nil
	})
	deleting := p.DeepCopy()
	now := metav1.Now()
	grace := int64(5)
	deleting.DeletionTimestamp, deleting.DeletionGracePeriodSeconds = &now, &grace
	h.send(messages.SourceAPI, deleting)
	h.eventually("killed with the deletion's grace period", func(_ map[types.UID]int, k map[types.UID]string) error {
		if k["d"] != "5" {
			return fmt.Errorf("killed %v", k)
		}
		return nil
	})
	// Reported gone once, when stopped, though the worker's end follows.
	h.eventually("reported removed", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if len(h.reports.finished) == 0 {
			return fmt.Errorf("not reported")
		}
		return nil
	})
	if pods := h.list(); len(pods) != 0 {
		t.Errorf("/pods still lists %d pods", len(pods))
	}
	h.reports.mu.Lock()
	defer h.reports.mu.Unlock()
	if got := strings.Join(h.reports.finished, ","); got != "d removed=true" {
		t.Errorf("finished reports %q, want one removal", got)
	}
}

func TestAdmissionRejects(t *testing.T) {
	h := newHarness(t, 2)
	h.send(messages.SourceAPI, testPod("a", "1500m"), testPod("b", "1"), testPod("c", ""), testPod("d", ""))
	h.eventually("a and c admitted", func(s map[types.UID]int, _ map[types.UID]string) error {
		if s["a"] == 0 || s["c"] == 0 {
			return fmt.Errorf("synced %v", s)
		}
		return nil
	})
	reasons := map[types.UID]string{}
	for _, p := range h.list() {
		reasons[p.UID] = string(p.Status.Phase) + "/" + p.Status.Reason
	}
	want := map[types.UID]string{"a": "Running/", "b": "Failed/OutOfcpu", "c": "Running/", "d": "Failed/OutOfpods"}
	if fmt.Sprint(reasons) != fmt.Sprint(want) {
		t.Errorf("pods %v, want %v", reasons, want)
	}
	// Reported finished, so that their Failed phase reaches the API.
	h.eventually("rejected pods reported finished", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if got := strings.Join(h.reports.finished, ","); got != "b removed=false,d removed=false" {
			return fmt.Errorf("finished %q", got)
		}
		return nil
	})
}

func TestOrphansAreTerminatedOnceAllSourcesReported(t *testing.T) {
	orphan := &podruntime.PodStatus{UID: "orphan", Name: "gone", Namespace: "default"}
	wanted := &podruntime.PodStatus{UID: "a", Name: "p-a", Namespace: "default"}
	h := newHarness(t, 10, orphan, wanted)
	h.send(messages.SourceFile, testPod("a", ""))
	time.Sleep(200 * time.Millisecond)
	if _, killed := h.rt.state(); len(killed) != 0 {
		t.Fatalf("killed %v before every source reported", killed)
	}
	h.send(messages.SourceAPI)
	h.eventually("the orphan is killed with its recorded grace period, the wanted pod is not", func(_ map[types.UID]int, k map[types.UID]string) error {
		keys := make([]string, 0, len(k))
		for uid, g := range k {
			keys = append(keys, string(uid)+"="+g)
		}
		sort.Strings(keys)
		if strings.Join(keys, ",") != "orphan=recorded" {
			return fmt.Errorf("killed %v", keys)
		}
		return nil
	})
}

// TestFailedRuntimeListingIsRetried: when listing the runtime's pods fails
// once every source has reported (a restart while the runtime is busy),
// the pod-manager tries again until it succeeds, and until then its pod
// list does not say it is complete, so that the volume-manager takes the
// directories of a still-running orphan for no gone pod's. Then the orphan
// is terminated as any other.
func TestFailedRuntimeListingIsRetried(t *testing.T) {
	orphan := &podruntime.PodStatus{UID: "orphan", Name: "gone", Namespace: "default"}
	h := newHarness(t, 10, orphan)
	h.rt.mu.Lock()
	h.rt.listFailures = 2
	h.rt.mu.Unlock()
	h.send(messages.SourceFile)
	h.send(messages.SourceAPI)
	complete := func() (bool, []types.UID) {
		res, err := h.system.Root.RequestFuture(h.pm, &messages.ListPods{}, 5*time.Second).Result()
		if err != nil {
			t.Fatal(err)
		}
		l := res.(*messages.PodList)
		return l.SourcesReady, l.Active
	}
	// The first retry comes after orphanSearchBackoff's first delay: look
	// before it.
	time.Sleep(orphanSearchBackoff.Initial / 2)
	if ready, active := complete(); ready || len(active) != 0 {
		t.Fatalf("after a failed listing: SourcesReady %v, Active %v; want an incomplete list", ready, active)
	}
	if _, killed := h.rt.state(); len(killed) != 0 {
		t.Fatalf("killed %v before the runtime was listed", killed)
	}
	// Two failures: retried after the first and second delays; slack 3x.
	deadline := time.Now().Add(3 * (orphanSearchBackoff.After(1) + orphanSearchBackoff.After(2)))
	for {
		ready, active := complete()
		_, killed := h.rt.state()
		if ready && len(active) <= 1 && killed["orphan"] == "recorded" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the listing was not retried: SourcesReady %v, Active %v, killed %v", ready, active, killed)
		}
		time.Sleep(50 * time.Millisecond)
	}
	h.rt.mu.Lock()
	defer h.rt.mu.Unlock()
	if h.rt.listFailures != 0 {
		t.Errorf("%d failures left: not retried until it succeeded", h.rt.listFailures)
	}
}

func TestCompletedPodIsTerminatedAndNotStartedAgain(t *testing.T) {
	h := newHarness(t, 10)
	p := testPod("done1", "")
	h.send(messages.SourceAPI, p)
	h.eventually("the completed pod's sandbox is killed", func(_ map[types.UID]int, k map[types.UID]string) error {
		if k["done1"] != "30" {
			return fmt.Errorf("killed %v", k)
		}
		return nil
	})
	h.eventually("reported finished, not removed", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if strings.Join(h.reports.finished, ",") != "done1 removed=false" {
			return fmt.Errorf("finished %v", h.reports.finished)
		}
		return nil
	})
	synced, _ := h.rt.state()
	h.send(messages.SourceAPI, p)
	time.Sleep(200 * time.Millisecond)
	if again, _ := h.rt.state(); again["done1"] != synced["done1"] {
		t.Errorf("the completed pod was synced again: %d → %d", synced["done1"], again["done1"])
	}
	if pods := h.list(); len(pods) != 1 || pods[0].Status.Phase != v1.PodSucceeded {
		t.Errorf("/pods lists %+v", pods)
	}
	// Its deletion completes at once: nothing runs.
	deleting := p.DeepCopy()
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	h.send(messages.SourceAPI, deleting)
	h.eventually("reported removed", func(map[types.UID]int, map[types.UID]string) error {
		h.reports.mu.Lock()
		defer h.reports.mu.Unlock()
		if strings.Join(h.reports.finished, ",") != "done1 removed=false,done1 removed=true" {
			return fmt.Errorf("finished %v", h.reports.finished)
		}
		return nil
	})
}

func TestOnlyALiveRuntimePodIsTakenForAnOrphan(t *testing.T) {
	h := newHarness(t, 10)
	h.send(messages.SourceFile)
	h.send(messages.SourceAPI)
	h.list() // the pod-manager has taken both updates: sources are ready
	event := func(uid types.UID, typ messages.PodLifecycleEventType) {
		supervision.TellFromOutside(h.system.ActorSystem, h.pm, &messages.PodLifecycleEvents{Events: []messages.PodLifecycleEvent{
			{PodUID: uid, PodName: "p-" + string(uid), PodNamespace: "default", Type: typ, ID: "x"}}})
	}
	// The remains of a finished pod going (GC) are not a pod to terminate.
	event("remains", messages.SandboxRemoved)
	event("remains", messages.ContainerRemoved)
	event("remains", messages.ContainerDied)
	// A container starting that no source wants is.
	event("live", messages.ContainerStarted)
	h.eventually("only the live orphan is killed", func(_ map[types.UID]int, k map[types.UID]string) error {
		if len(k) != 1 || k["live"] == "" {
			return fmt.Errorf("killed %v", k)
		}
		return nil
	})
}
