package podruntime

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/env"
)

// fakeClock is a settable clock for backoffs.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

func newIntegration(t *testing.T) (*env.Env, *Runtime) {
	t.Helper()
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, img := e.CRI(t)
	return e, &Runtime{RT: rt, Img: img, Opts: Options{
		NodeName: e.NodeName, NodeIP: "127.0.0.1", RuntimeRequestTimeout: time.Minute,
		NodeMemoryCapacity: 8 << 30,
	}}
}

var podSeq int

func testPod(t *testing.T, r *Runtime, containers ...v1.Container) *v1.Pod {
	t.Helper()
	podSeq++
	uid := types.UID(fmt.Sprintf("podruntime-%d-%d", time.Now().UnixNano(), podSeq))
	name := strings.ToLower(fmt.Sprintf("prt-%s-%d", strings.ReplaceAll(t.Name(), "/", "-"), podSeq))
	if len(name) > 50 {
		name = name[:50]
	}
	grace := int64(5)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "podruntime-test", UID: uid, Labels: map[string]string{"app": "t"}},
		Spec: v1.PodSpec{Containers: containers, RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			NodeName: r.Opts.NodeName,
			// The runtime has no cluster DNS: ClusterFirst would fall back,
			// with MissingClusterDNS events.
			DNSPolicy: v1.DNSDefault},
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		zero := int64(0)
		if err := r.KillPod(ctx, pod.UID, pod.Name, pod.Namespace, &zero); err != nil {
			t.Errorf("cleanup: %v", err)
		}
		if err := r.RemovePodLogs(pod.UID, pod.Name, pod.Namespace); err != nil {
			t.Errorf("cleanup logs: %v", err)
		}
	})
	return pod
}

// countingCRI counts the listings made through it.
type countingCRI struct {
	runtimeapi.RuntimeServiceClient
	lists atomic.Int32
}

func (c *countingCRI) ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	c.lists.Add(1)
	return c.RuntimeServiceClient.ListPodSandbox(ctx, in, opts...)
}

func (c *countingCRI) ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	c.lists.Add(1)
	return c.RuntimeServiceClient.ListContainers(ctx, in, opts...)
}

func busybox(e *env.Env, name string, cmd ...string) v1.Container {
	return v1.Container{Name: name, Image: e.BusyboxImage, Command: cmd, ImagePullPolicy: v1.PullIfNotPresent,
		TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: v1.TerminationMessageReadFile}
}

// syncUntil syncs until cond holds on the result, feeding back the API status.
func syncUntil(t *testing.T, r *Runtime, pod *v1.Pod, b *Backoff, timeout time.Duration, what string, cond func(SyncResult) bool) SyncResult {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		res := r.SyncPod(context.Background(), pod, nil, b, nil)
		pod.Status = res.APIStatus
		if cond(res) {
			return res
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached after %s; err=%v status=%+v", what, timeout, res.Err, res.APIStatus)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func apiContainer(s v1.PodStatus, name string) v1.ContainerStatus {
	for _, cs := range append(append([]v1.ContainerStatus{}, s.InitContainerStatuses...), s.ContainerStatuses...) {
		if cs.Name == name {
			return cs
		}
	}
	return v1.ContainerStatus{}
}

func TestIntegrationRunsPod(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "main", "sh", "-c", "echo hello-from-podruntime; sleep 3600"))
	uids, err := r.PodUIDs(context.Background())
	if err != nil || uids[pod.UID] {
		t.Fatalf("the runtime's pods before the first pass: %v, %v; want no %s", uids, err, pod.UID)
	}
	// The first pass of a pod the runtime does not hold lists nothing: not
	// before, since the caller knows, nor after, since the pass knows what
	// it made.
	backoff := NewCrashLoopBackoff(0, nil)
	calls := &countingCRI{RuntimeServiceClient: r.RT}
	counted := *r
	counted.RT = calls
	first := counted.SyncNewPod(context.Background(), pod, nil, backoff, nil)
	pod.Status = first.APIStatus
	if n := calls.lists.Load(); n != 0 || !first.Settled || first.APIStatus.Phase != v1.PodRunning {
		t.Errorf("first pass: %d listings, settled %v, phase %s; want none, settled, Running", n, first.Settled, first.APIStatus.Phase)
	}
	res := syncUntil(t, r, pod, backoff, time.Minute, "Running", func(res SyncResult) bool {
		return res.APIStatus.Phase == v1.PodRunning
	})
	if res.Err != nil || first.Err != nil {
		t.Fatalf("sync: first pass %v, then %v", first.Err, res.Err)
	}
	if listed, err := r.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace); err != nil || len(listed.SandboxStatuses) != 1 || len(listed.ContainerStatuses) != 1 {
		t.Errorf("after the passes: %v; want one sandbox and one container (err %v)", listed, err)
	}
	if uids, err := r.PodUIDs(context.Background()); err != nil || !uids[pod.UID] {
		t.Errorf("the runtime's pods after the passes: %v, %v; want %s among them", uids, err, pod.UID)
	}
	ip := res.APIStatus.PodIP
	if !strings.HasPrefix(ip, "10.244.") {
		t.Errorf("pod IP %q not in 10.244.0.0/16", ip)
	}
	if c := findCond(res.APIStatus, v1.PodReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready condition: %+v", c)
	}
	cs := apiContainer(res.APIStatus, "main")
	if !strings.HasPrefix(cs.ContainerID, "containerd://") || cs.ImageID == "" || !cs.Ready {
		t.Errorf("container status %+v", cs)
	}
	logFile := filepath.Join("/var/log/pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID), "main", "0.log")
	waitFor(t, 20*time.Second, "log line in "+logFile, func() bool {
		b, _ := os.ReadFile(logFile)
		return strings.Contains(string(b), "hello-from-podruntime")
	})
	// A second pass has nothing to do.
	again := r.SyncPod(context.Background(), pod, nil, nil, nil)
	if again.Err != nil || apiContainer(again.APIStatus, "main").ContainerID != cs.ContainerID {
		t.Errorf("second sync changed the pod: err=%v %+v", again.Err, apiContainer(again.APIStatus, "main"))
	}
	// Settled lets the worker skip the passes PLEG's events of this one's
	// own calls would ask for.
	if !res.Settled || !again.Settled {
		t.Errorf("a running pod's passes are not settled: first %v, second %v", res.Settled, again.Settled)
	}
	if st := again.Status.States(); st[cs.ContainerID[len("containerd://"):]] != "CONTAINER_RUNNING" || len(st) != 2 {
		t.Errorf("observed states %v, want the sandbox and the running container", st)
	}
	pods, err := r.ListPods(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range pods {
		if p.UID == pod.UID && p.Name == pod.Name && p.Namespace == pod.Namespace && len(p.ContainerStatuses) == 1 {
			found = true
		}
	}
	if !found {
		t.Errorf("ListPods does not list %s", pod.UID)
	}
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func findCond(s v1.PodStatus, t v1.PodConditionType) *v1.PodCondition {
	for i := range s.Conditions {
		if s.Conditions[i].Type == t {
			return &s.Conditions[i]
		}
	}
	return nil
}

func TestIntegrationCrashLoop(t *testing.T) {
	e, r := newIntegration(t)
	clock := &fakeClock{t: time.Now()}
	b := NewCrashLoopBackoff(time.Minute, clock.Now)
	pod := testPod(t, r, busybox(e, "crash", "sh", "-c", "exit 1"))
	// First start, then wait for the exit.
	syncUntil(t, r, pod, b, time.Minute, "first run exited", func(res SyncResult) bool {
		cs := apiContainer(res.APIStatus, "crash")
		return cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil
	})
	// The exit is recorded as a crash on the restart: the restart happens at
	// once (no backoff yet), the next exit then waits 10 s.
	clock.Set(time.Now())
	res := syncUntil(t, r, pod, b, time.Minute, "CrashLoopBackOff", func(res SyncResult) bool {
		clock.Set(time.Now())
		cs := apiContainer(res.APIStatus, "crash")
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == ReasonCrashLoopBackOff
	})
	cs := apiContainer(res.APIStatus, "crash")
	if cs.RestartCount < 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 1 {
		t.Errorf("in backoff: %+v", cs)
	}
	// The backoff counts from the exit, which may come a little after the
	// test last set its clock: up to a second more than 10 s.
	if res.RetryAfter <= 0 || res.RetryAfter > 11*time.Second {
		t.Errorf("RetryAfter = %s, want (0, 10s] (+1s for the exit after the clock was set)", res.RetryAfter)
	}
	before := cs.RestartCount
	// Let the backoff expire on the clock: the next sync restarts.
	clock.Set(time.Now().Add(res.RetryAfter + time.Second))
	res = r.SyncPod(context.Background(), pod, nil, b, nil)
	pod.Status = res.APIStatus
	if got := apiContainer(res.APIStatus, "crash").RestartCount; got != int32(before)+1 {
		t.Errorf("after backoff: restartCount %d, want %d (err %v)", got, before+1, res.Err)
	}
}

func TestIntegrationInitContainers(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "app", "sleep", "3600"))
	pod.Spec.InitContainers = []v1.Container{
		busybox(e, "init1", "sh", "-c", "echo one"),
		busybox(e, "init2", "sh", "-c", "exit 3"),
	}
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	res := syncUntil(t, r, pod, nil, time.Minute, "Failed", func(res SyncResult) bool {
		return res.APIStatus.Phase == v1.PodFailed
	})
	i1, i2 := apiContainer(res.APIStatus, "init1"), apiContainer(res.APIStatus, "init2")
	if i1.State.Terminated == nil || i1.State.Terminated.ExitCode != 0 || i2.State.Terminated == nil || i2.State.Terminated.ExitCode != 3 {
		t.Errorf("init statuses: %+v / %+v", i1, i2)
	}
	if !i1.State.Terminated.FinishedAt.Time.Before(i2.State.Terminated.StartedAt.Time.Add(time.Millisecond)) {
		t.Errorf("init2 started before init1 finished")
	}
	if app := apiContainer(res.APIStatus, "app"); app.ContainerID != "" || app.State.Waiting == nil || app.State.Waiting.Reason != ReasonPodInitializing {
		t.Errorf("app container ran or is not PodInitializing: %+v", app)
	}
	if c := findCond(res.APIStatus, v1.PodInitialized); c == nil || c.Status != v1.ConditionFalse {
		t.Errorf("Initialized: %+v", c)
	}
}

func TestIntegrationKillPodGrace(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "stubborn", "sh", "-c", "trap '' TERM; sleep 3600"))
	syncUntil(t, r, pod, nil, time.Minute, "Running", func(res SyncResult) bool { return res.APIStatus.Phase == v1.PodRunning })
	time.Sleep(500 * time.Millisecond) // let sh install its trap
	// A first kill with a long grace period is cut short by a second one.
	ctx1, cancel1 := context.WithCancel(context.Background())
	long := int64(60)
	done := make(chan error, 1)
	go func() { done <- r.KillPod(ctx1, pod.UID, pod.Name, pod.Namespace, &long) }()
	time.Sleep(time.Second)
	cancel1()
	<-done
	grace := int64(3)
	start := time.Now()
	if err := r.KillPod(context.Background(), pod.UID, pod.Name, pod.Namespace, &grace); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	took := time.Since(start)
	if took < 2500*time.Millisecond || took > 15*time.Second {
		t.Errorf("KillPod took %s, want about the 3 s grace period", took)
	}
	sel := map[string]string{LabelPodUID: string(pod.UID)}
	sbs, err := r.RT.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil || len(sbs.Items) != 0 {
		t.Errorf("sandboxes left: %v %v", sbs, err)
	}
	cs, err := r.RT.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil || len(cs.Containers) != 0 {
		t.Errorf("containers left: %v %v", cs, err)
	}
}

func TestIntegrationSpecChangeRestartsOnlyThatContainer(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "a", "sleep", "3600"), busybox(e, "b", "sleep", "3600"))
	res := syncUntil(t, r, pod, nil, time.Minute, "Running", func(res SyncResult) bool { return res.APIStatus.Phase == v1.PodRunning })
	idA, idB := apiContainer(res.APIStatus, "a").ContainerID, apiContainer(res.APIStatus, "b").ContainerID
	pod.Spec.Containers[1].Command = []string{"sleep", "3601"}
	res = syncUntil(t, r, pod, nil, time.Minute, "b restarted", func(res SyncResult) bool {
		b := apiContainer(res.APIStatus, "b")
		return b.ContainerID != idB && b.State.Running != nil
	})
	if a := apiContainer(res.APIStatus, "a"); a.ContainerID != idA || a.RestartCount != 0 {
		t.Errorf("container a was touched: %+v", a)
	}
	if b := apiContainer(res.APIStatus, "b"); b.RestartCount != 1 {
		t.Errorf("container b restart count %d, want 1", b.RestartCount)
	}
}

func TestIntegrationImagePullErrors(t *testing.T) {
	e, r := newIntegration(t)
	never := busybox(e, "never", "true")
	never.Image = "docker.io/library/podruntime-absent:never"
	never.ImagePullPolicy = v1.PullNever
	pod := testPod(t, r, never)
	res := r.SyncPod(context.Background(), pod, nil, nil, nil)
	if w := apiContainer(res.APIStatus, "never").State.Waiting; w == nil || w.Reason != ReasonErrImageNeverPull || res.Err == nil {
		t.Errorf("Never: waiting %+v err %v", w, res.Err)
	}
	if res.Settled {
		t.Error("a pass whose container could not start is settled")
	}

	clock := &fakeClock{t: time.Now()}
	b := NewCrashLoopBackoff(0, clock.Now)
	missing := busybox(e, "missing", "true")
	missing.Image = "docker.io/library/podruntime-absent:v1"
	pod2 := testPod(t, r, missing)
	res = r.SyncPod(context.Background(), pod2, nil, b, nil)
	if w := apiContainer(res.APIStatus, "missing").State.Waiting; w == nil || w.Reason != ReasonErrImagePull {
		t.Fatalf("first pull: waiting %+v err %v", w, res.Err)
	}
	if res.RetryAfter != InitialImagePullBackoff {
		t.Errorf("RetryAfter = %s, want %s", res.RetryAfter, InitialImagePullBackoff)
	}
	res = r.SyncPod(context.Background(), pod2, nil, b, nil)
	if w := apiContainer(res.APIStatus, "missing").State.Waiting; w == nil || w.Reason != ReasonImagePullBackOff {
		t.Errorf("second pull: waiting %+v err %v", w, res.Err)
	}
	clock.Set(clock.Now().Add(11 * time.Second))
	res = r.SyncPod(context.Background(), pod2, nil, b, nil)
	if w := apiContainer(res.APIStatus, "missing").State.Waiting; w == nil || w.Reason != ReasonErrImagePull || res.RetryAfter != 2*InitialImagePullBackoff {
		t.Errorf("pull after backoff: waiting %+v retry %s", w, res.RetryAfter)
	}
}

// runtimeObjects lists the pod's containers and sandboxes in the runtime.
func runtimeObjects(t *testing.T, r *Runtime, uid types.UID) ([]*runtimeapi.Container, []*runtimeapi.PodSandbox) {
	t.Helper()
	sel := map[string]string{LabelPodUID: string(uid)}
	cs, err := r.RT.ListContainers(context.Background(), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	sbs, err := r.RT.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		t.Fatal(err)
	}
	return cs.Containers, sbs.Items
}

// TestIntegrationRestartsKeepThePreviousInstance: across restarts, exactly
// one dead instance stays, the newest, with its log (what `kubectl logs
// --previous` reads).
func TestIntegrationRestartsKeepThePreviousInstance(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "crash", "sh", "-c", "echo instance-$$; exit 1"))
	// No backoff: every sync after an exit restarts at once.
	syncUntil(t, r, pod, nil, time.Minute, "three restarts", func(res SyncResult) bool {
		return apiContainer(res.APIStatus, "crash").RestartCount >= 3
	})
	var newest *ContainerStatus
	waitFor(t, 30*time.Second, "the newest instance to exit", func() bool {
		st, err := r.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
		if err != nil {
			t.Fatal(err)
		}
		newest = st.FindContainer("crash")
		return newest.State == runtimeapi.ContainerState_CONTAINER_EXITED
	})
	// A sync in backoff starts nothing and keeps only the newest dead
	// instance.
	b := NewCrashLoopBackoff(time.Hour, nil)
	b.Next(ContainerBackoffKey(pod, &pod.Spec.Containers[0]), time.Now())
	res := r.SyncPod(context.Background(), pod, nil, b, nil)
	if res.Err != nil {
		t.Fatalf("sync in backoff: %v", res.Err)
	}
	containers, _ := runtimeObjects(t, r, pod.UID)
	if len(containers) != 1 || containers[0].Id != newest.ID {
		var ids []string
		for _, c := range containers {
			ids = append(ids, c.Id+" "+c.State.String())
		}
		t.Fatalf("instances after the sync: %v, want only the newest dead one %s", ids, newest.ID)
	}
	if b, err := os.ReadFile(newest.LogPath); err != nil || !strings.Contains(string(b), "instance-") {
		t.Errorf("log of the previous instance %s: %q, %v", newest.LogPath, b, err)
	}
	if got := apiContainer(res.APIStatus, "crash").RestartCount; got < 3 {
		t.Errorf("restart count %d after the older instances went, want at least 3", got)
	}
}

// TestIntegrationCompletedPodKeepsItsContainers: the kill of a pod that ran
// to completion stops its sandbox and removes nothing (its logs stay
// readable until container GC); a kill without the spec (the pod is gone)
// removes everything.
func TestIntegrationCompletedPodKeepsItsContainers(t *testing.T) {
	e, r := newIntegration(t)
	pod := testPod(t, r, busybox(e, "once", "sh", "-c", "echo ran-to-completion"))
	pod.Spec.RestartPolicy = v1.RestartPolicyNever
	res := syncUntil(t, r, pod, nil, time.Minute, "Succeeded", func(res SyncResult) bool {
		return res.APIStatus.Phase == v1.PodSucceeded
	})
	logPath := res.Status.FindContainer("once").LogPath
	grace := int64(2)
	if err := r.KillPodWithSpec(context.Background(), pod, &grace); err != nil {
		t.Fatalf("KillPodWithSpec: %v", err)
	}
	containers, sandboxes := runtimeObjects(t, r, pod.UID)
	if len(containers) != 1 || containers[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("containers after the kill of a completed pod: %v, want its one exited container", containers)
	}
	if len(sandboxes) != 1 || sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Errorf("sandboxes after the kill of a completed pod: %v, want one, stopped", sandboxes)
	}
	if b, err := os.ReadFile(logPath); err != nil || !strings.Contains(string(b), "ran-to-completion") {
		t.Errorf("log of the completed container %s: %q, %v", logPath, b, err)
	}

	if err := r.KillPod(context.Background(), pod.UID, pod.Name, pod.Namespace, &grace); err != nil {
		t.Fatalf("KillPod: %v", err)
	}
	if containers, sandboxes := runtimeObjects(t, r, pod.UID); len(containers)+len(sandboxes) != 0 {
		t.Errorf("after a kill without spec: %d containers and %d sandboxes left", len(containers), len(sandboxes))
	}
}
