package podruntime

import (
	"context"
	"reflect"
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

// withEphemeral adds ephemeral containers named names to pod.
func withEphemeral(pod *v1.Pod, names ...string) *v1.Pod {
	for _, n := range names {
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n, Image: "img"}})
	}
	return pod
}

// ecstat is an instance of the ephemeral container name in sandbox sb1.
func ecstat(name string, state runtimeapi.ContainerState, exit int32) *ContainerStatus {
	return &ContainerStatus{ID: name + "-id", Name: name, State: state, ExitCode: exit, SandboxID: "sb1",
		StartedAt: t0.Add(-time.Minute), FinishedAt: t0.Add(-time.Second)}
}

func TestComputePodActionsEphemeral(t *testing.T) {
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	created := runtimeapi.ContainerState_CONTAINER_CREATED
	tests := []struct {
		name   string
		pod    *v1.Pod
		status func(pod *v1.Pod) *PodStatus
		want   PodActions
	}{
		{"new ephemeral container in a running pod: start it", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) },
			PodActions{SandboxID: "sb1", EphemeralContainersToStart: []int{0}}},
		{"only those never created", withEphemeral(actionsPod(always, nil, "a"), "d1", "d2", "d3"),
			func(p *v1.Pod) *PodStatus { return readyStatus(ecstat("d2", running, 0), cstat(p, "a", running, 0, 0)) },
			PodActions{SandboxID: "sb1", EphemeralContainersToStart: []int{0, 2}}},
		{"running: nothing to do", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(ecstat("debug", running, 0), cstat(p, "a", running, 0, 0))
			},
			PodActions{SandboxID: "sb1"}},
		{"exited with Always: never restarted", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(ecstat("debug", exited, 1), cstat(p, "a", running, 0, 0))
			},
			PodActions{SandboxID: "sb1"}},
		{"created but not started: not retried", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(ecstat("debug", created, 0), cstat(p, "a", running, 0, 0))
			},
			PodActions{SandboxID: "sb1"}},
		{"during initialization", withEphemeral(actionsPod(always, []string{"i1", "i2"}, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i1", running, 0, 0)) },
			PodActions{SandboxID: "sb1", EphemeralContainersToStart: []int{0}}},
		{"with the next init container", withEphemeral(actionsPod(always, []string{"i1", "i2"}, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i1", exited, 0, 0)) },
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}, EphemeralContainersToStart: []int{0}}},
		{"new sandbox: not with it", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				s := readyStatus(cstat(p, "a", exited, 0, 0))
				s.SandboxStatuses[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
				return s
			},
			PodActions{KillPod: true, CreateSandbox: true, SandboxID: "sb1", Attempt: 1, ContainersToStart: []int{0}}},
		{"pod done: killed, not started", withEphemeral(actionsPod(never, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", exited, 0, 0)) },
			PodActions{KillPod: true, SandboxID: "sb1"}},
		{"a running ephemeral container does not keep a finished pod", withEphemeral(actionsPod(never, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(ecstat("debug", running, 0), cstat(p, "a", exited, 0, 0))
			},
			PodActions{KillPod: true, SandboxID: "sb1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputePodActions(tt.pod, tt.status(tt.pod), NewCrashLoopBackoff(0, func() time.Time { return t0 }), nil, t0)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if got.none() != reflect.DeepEqual(tt.want, PodActions{SandboxID: "sb1"}) {
				t.Errorf("none() = %v for %+v", got.none(), got)
			}
		})
	}
}

func TestEphemeralContainerStatuses(t *testing.T) {
	always := v1.RestartPolicyAlways
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  func(p *v1.Pod) *PodStatus
		waiting map[string]WaitingReason
		want    []v1.ContainerStatus
		phase   v1.PodPhase
	}{
		{"none", actionsPod(always, nil, "a"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) }, nil, nil, v1.PodRunning},
		{"not created yet", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) }, nil,
			[]v1.ContainerStatus{{Name: "debug", Image: "img", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonContainerCreating}}}},
			v1.PodRunning},
		{"not created yet, pod with init containers", withEphemeral(actionsPod(always, []string{"i"}, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i", running, 0, 0)) }, nil,
			[]v1.ContainerStatus{{Name: "debug", Image: "img", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonPodInitializing}}}},
			v1.PodPending},
		{"running: neither ready nor started, sorted by name", withEphemeral(actionsPod(always, nil, "a"), "zz", "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(ecstat("zz", running, 0), ecstat("debug", running, 0), cstat(p, "a", running, 0, 0))
			}, nil,
			[]v1.ContainerStatus{
				{Name: "debug", ContainerID: "containerd://debug-id", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Minute))}}},
				{Name: "zz", ContainerID: "containerd://zz-id", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(-time.Minute))}}},
			}, v1.PodRunning},
		{"exited stays terminated, whatever the restart policy", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus {
				return readyStatus(withReason(ecstat("debug", exited, 3), "Error"), cstat(p, "a", running, 0, 0))
			}, nil,
			[]v1.ContainerStatus{{Name: "debug", ContainerID: "containerd://debug-id", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
				ExitCode: 3, Reason: "Error", StartedAt: metav1.NewTime(t0.Add(-time.Minute)), FinishedAt: metav1.NewTime(t0.Add(-time.Second)),
				ContainerID: "containerd://debug-id"}}}},
			v1.PodRunning},
		{"failed to start: the pass's reason", withEphemeral(actionsPod(always, nil, "a"), "debug"),
			func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) },
			map[string]WaitingReason{"debug": {ReasonCreateContainerConfigError, "unable to find target container x"}},
			[]v1.ContainerStatus{{Name: "debug", Image: "img", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{
				Reason: ReasonCreateContainerConfigError, Message: "unable to find target container x"}}}},
			v1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := GenerateAPIStatus(tt.pod, tt.status(tt.pod), tt.waiting, nil, nil, t0)
			if !reflect.DeepEqual(api.EphemeralContainerStatuses, tt.want) {
				t.Errorf("ephemeral statuses\n got  %+v\n want %+v", api.EphemeralContainerStatuses, tt.want)
			}
			if api.Phase != tt.phase {
				t.Errorf("phase %s, want %s", api.Phase, tt.phase)
			}
			for _, cs := range append(api.ContainerStatuses, api.InitContainerStatuses...) {
				if ephemeralContainer(tt.pod, cs.Name) != nil {
					t.Errorf("ephemeral container %s among the others' statuses", cs.Name)
				}
			}
		})
	}
}

func TestEphemeralTarget(t *testing.T) {
	target := func(pod *v1.Pod, to string) *v1.Pod {
		pod.Spec.EphemeralContainers[0].TargetContainerName = to
		return pod
	}
	share := func(pod *v1.Pod) *v1.Pod { yes := true; pod.Spec.ShareProcessNamespace = &yes; return pod }
	hostPID := func(pod *v1.Pod) *v1.Pod { pod.Spec.HostPID = true; return pod }
	tests := []struct {
		name    string
		pod     *v1.Pod
		wantPID runtimeapi.NamespaceMode
		wantID  string
		wantErr string
	}{
		{"no target: a namespace of its own", withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"),
			runtimeapi.NamespaceMode_CONTAINER, "", ""},
		{"target: its current instance", target(withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"), "b"),
			runtimeapi.NamespaceMode_TARGET, "b-new", ""},
		{"shared process namespace wins", share(target(withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"), "b")),
			runtimeapi.NamespaceMode_POD, "", ""},
		{"host's namespace wins", hostPID(target(withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"), "b")),
			runtimeapi.NamespaceMode_NODE, "", ""},
		{"unknown target: upstream's error", target(withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"), "c"),
			0, "", "unable to find target container c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := readyStatus(&ContainerStatus{ID: "b-new", Name: "b", State: running}, &ContainerStatus{ID: "b-old", Name: "b", State: exited},
				&ContainerStatus{ID: "a-id", Name: "a", State: running})
			c := (*v1.Container)(&tt.pod.Spec.EphemeralContainers[0].EphemeralContainerCommon)
			id, err := ephemeralTarget(tt.pod, c, status)
			if testutil.WantErrText(t, err, tt.wantErr) {
				return
			}
			sc, err := containerSecurityContext(tt.pod, c, Options{})
			if err != nil {
				t.Fatal(err)
			}
			cfg := &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: sc}}
			targetPIDNamespace(cfg, id)
			ns := cfg.Linux.SecurityContext.NamespaceOptions
			if ns.Pid != tt.wantPID || ns.TargetId != tt.wantID {
				t.Errorf("pid namespace %s target %q, want %s %q", ns.Pid, ns.TargetId, tt.wantPID, tt.wantID)
			}
		})
	}
	// A regular container is never an ephemeral one's target.
	pod := target(withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), "debug"), "b")
	if id, err := ephemeralTarget(pod, &pod.Spec.Containers[0], readyStatus()); id != "" || err != nil {
		t.Errorf("regular container: %q %v", id, err)
	}
}

// createRecorder is the fake runtime, remembering each container's
// configuration.
type createRecorder struct {
	*fakecri.Runtime
	mu      sync.Mutex
	configs map[string]*runtimeapi.ContainerConfig
}

func (r *createRecorder) CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, opts ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	resp, err := r.Runtime.CreateContainer(ctx, in, opts...)
	if err == nil {
		r.mu.Lock()
		r.configs[in.Config.Metadata.Name] = in.Config
		r.mu.Unlock()
	}
	return resp, err
}

// TestSyncPodEphemeral runs a pod on the fake runtime, adds ephemeral
// containers to it and follows them through sync passes: started once,
// in the target's process namespace, with their events' field path, and
// never again after they exited.
func TestSyncPodEphemeral(t *testing.T) {
	const image = "registry.test/app:1"
	cri := &createRecorder{Runtime: fakecri.New(), configs: map[string]*runtimeapi.ContainerConfig{}}
	cri.AddImage(image)
	events := record.NewFakeRecorder(100)
	rt := &Runtime{RT: cri, Img: cri, Opts: Options{PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: "192.0.2.1",
		NodeMemoryCapacity: 8 << 30, RuntimeRequestTimeout: 10 * time.Second, Recorder: events}}
	grace := int64(1)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{NodeName: "node", RestartPolicy: v1.RestartPolicyAlways, TerminationGracePeriodSeconds: &grace,
			Containers: []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent}}}}
	ctx := context.Background()
	res := rt.SyncNewPod(ctx, pod, nil, nil, nil)
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	appID := res.Status.FindContainer("app").ID
	testutil.Events(events)

	pod = pod.DeepCopy()
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug", Image: image, ImagePullPolicy: v1.PullIfNotPresent,
			Command: []string{"sh"}, Stdin: true, TTY: true}, TargetContainerName: "app"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "lost", Image: image, ImagePullPolicy: v1.PullIfNotPresent},
			TargetContainerName: "nosuch"},
	}
	res = rt.SyncPod(ctx, pod, nil, nil, nil)
	if res.Err == nil || !strings.Contains(res.Err.Error(), "unable to find target container nosuch") {
		t.Errorf("sync error %v, want the lost target's", res.Err)
	}
	cfg := cri.configs["debug"]
	if cfg == nil {
		t.Fatal("debug not created")
	}
	if ns := cfg.Linux.SecurityContext.NamespaceOptions; ns.Pid != runtimeapi.NamespaceMode_TARGET || ns.TargetId != appID {
		t.Errorf("debug's pid namespace %s %q, want TARGET %q", ns.Pid, ns.TargetId, appID)
	}
	if !cfg.Stdin || !cfg.Tty || cfg.Labels[LabelContainerName] != "debug" || cfg.Annotations[AnnotationContainerRestartCount] != "0" {
		t.Errorf("debug's config: stdin %v tty %v labels %v annotations %v", cfg.Stdin, cfg.Tty, cfg.Labels, cfg.Annotations)
	}
	evs := testutil.Events(events)
	for _, want := range []string{"Normal Created Container created", "Normal Started Container started",
		"Warning Failed Error: unable to find target container nosuch"} {
		if !slices.Contains(evs, want) {
			t.Errorf("no event %q in %q", want, evs)
		}
	}
	byName := map[string]v1.ContainerStatus{}
	for _, s := range res.APIStatus.EphemeralContainerStatuses {
		byName[s.Name] = s
	}
	if s := byName["debug"]; s.State.Running == nil {
		t.Errorf("debug: %+v", s.State)
	}
	if s := byName["lost"]; s.State.Waiting == nil || s.State.Waiting.Reason != ReasonCreateContainerConfigError {
		t.Errorf("lost: %+v", s.State)
	}

	// Once it exited, debug stays terminated through passes.
	if !cri.Exit(res.Status.FindContainer("debug").ID, 0) {
		t.Fatal("debug not running")
	}
	pod.Spec.EphemeralContainers = pod.Spec.EphemeralContainers[:1]
	for range 2 {
		res = rt.SyncPod(ctx, pod, nil, NewCrashLoopBackoff(0, nil), nil)
		if res.Err != nil {
			t.Fatal(res.Err)
		}
		if s := res.APIStatus.EphemeralContainerStatuses; len(s) != 1 || s[0].State.Terminated == nil || s[0].RestartCount != 0 {
			t.Fatalf("after exit: %+v", s)
		}
		if !res.Settled {
			t.Errorf("pass not settled with an exited ephemeral container")
		}
	}
	n := 0
	for _, c := range cri.Containers() {
		if c.Labels[LabelContainerName] == "debug" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d instances of debug, want 1", n)
	}
}

// TestAnyPrivilegedEphemeral: a privileged ephemeral container makes the
// pod's next sandbox privileged, as upstream's HasPrivilegedContainer.
func TestAnyPrivilegedEphemeral(t *testing.T) {
	pod := withEphemeral(actionsPod(v1.RestartPolicyAlways, nil, "a"), "debug")
	if anyPrivileged(pod) {
		t.Fatal("privileged without a privileged container")
	}
	yes := true
	pod.Spec.EphemeralContainers[0].SecurityContext = &v1.SecurityContext{Privileged: &yes}
	if !anyPrivileged(pod) {
		t.Error("a privileged ephemeral container does not count")
	}
}
