package podruntime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const (
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
)

func actionsPod(policy v1.RestartPolicy, inits []string, apps ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"}, Spec: v1.PodSpec{RestartPolicy: policy}}
	for _, n := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, v1.Container{Name: n, Image: "img"})
	}
	for _, n := range apps {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n, Image: "img"})
	}
	return pod
}

func sandbox(id string, attempt uint32, state runtimeapi.PodSandboxState, ip string) *runtimeapi.PodSandboxStatus {
	return &runtimeapi.PodSandboxStatus{Id: id, State: state, Metadata: &runtimeapi.PodSandboxMetadata{Attempt: attempt},
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Linux:   &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_POD}}}}
}

// cstat is a container instance of the given spec container in sandbox sb.
func cstat(pod *v1.Pod, name string, state runtimeapi.ContainerState, exit int32, restarts int) *ContainerStatus {
	var spec *v1.Container
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Name == name {
				spec = &cs[i]
			}
		}
	}
	return &ContainerStatus{ID: name + "-id", Name: name, State: state, ExitCode: exit, Hash: HashContainer(spec),
		RestartCount: restarts, SandboxID: "sb1", FinishedAt: t0.Add(-time.Second), StartedAt: t0.Add(-time.Minute)}
}

func readyStatus(cs ...*ContainerStatus) *PodStatus {
	return &PodStatus{SandboxStatuses: []*runtimeapi.PodSandboxStatus{sandbox("sb1", 0, runtimeapi.PodSandboxState_SANDBOX_READY, "10.244.0.2")},
		ContainerStatuses: cs, IPs: []string{"10.244.0.2"}}
}

func TestComputePodActions(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	tests := []actionsCase{
		{"fresh pod", actionsPod(always, nil, "a", "b"), func(*v1.Pod) *PodStatus { return &PodStatus{} }, nil,
			PodActions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0, 1}}},
		{"fresh pod with init containers starts the first", actionsPod(always, []string{"i1", "i2"}, "a"), func(*v1.Pod) *PodStatus { return &PodStatus{} }, nil,
			PodActions{KillPod: true, CreateSandbox: true, InitContainersToStart: []int{0}}},
		{"running pod, nothing to do", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) }, nil,
			PodActions{SandboxID: "sb1"}},
		{"sandbox not ready: recreate with attempt+1", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus {
			s := readyStatus(cstat(p, "a", exited, 0, 0))
			s.SandboxStatuses = []*runtimeapi.PodSandboxStatus{sandbox("sb1", 3, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "")}
			return s
		}, nil, PodActions{KillPod: true, CreateSandbox: true, SandboxID: "sb1", Attempt: 4, ContainersToStart: []int{0}}},
		{"sandbox without IP: recreate", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus {
			s := readyStatus(cstat(p, "a", running, 0, 0))
			s.SandboxStatuses[0].Network.Ip = ""
			return s
		}, nil, PodActions{KillPod: true, CreateSandbox: true, SandboxID: "sb1", Attempt: 1, ContainersToStart: []int{0}}},
		{"dead sandbox of finished Never pod: not recreated", actionsPod(never, nil, "a"), func(p *v1.Pod) *PodStatus {
			s := readyStatus(cstat(p, "a", exited, 0, 0))
			s.SandboxStatuses = []*runtimeapi.PodSandboxStatus{sandbox("sb1", 0, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "")}
			return s
		}, nil, PodActions{KillPod: true, SandboxID: "sb1", Attempt: 1}},
		{"dead sandbox, OnFailure: succeeded container not restarted", actionsPod(onFailure, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			s := readyStatus(cstat(p, "a", exited, 0, 0), cstat(p, "b", exited, 1, 0))
			s.SandboxStatuses[0].State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
			return s
		}, nil, PodActions{KillPod: true, CreateSandbox: true, SandboxID: "sb1", Attempt: 1, ContainersToStart: []int{1}}},
		{"exited, Always: restart", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", exited, 0, 0)) }, nil,
			PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{"exited 0, OnFailure: pod done", actionsPod(onFailure, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", exited, 0, 0)) }, nil,
			PodActions{KillPod: true, SandboxID: "sb1"}},
		{"exited 1, OnFailure: restart", actionsPod(onFailure, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", exited, 1, 0)) }, nil,
			PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{"exited 1, Never: pod done", actionsPod(never, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", exited, 1, 0)) }, nil,
			PodActions{KillPod: true, SandboxID: "sb1"}},
		{"exited, Never, other running: keep", actionsPod(never, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", exited, 1, 0), cstat(p, "b", running, 0, 0))
		}, nil, PodActions{SandboxID: "sb1"}},
		{"init 1 done: start init 2", actionsPod(always, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i1", exited, 0, 0)) }, nil,
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}}},
		{"init running: wait", actionsPod(always, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i1", running, 0, 0)) }, nil,
			PodActions{SandboxID: "sb1"}},
		{"inits done: start apps", actionsPod(always, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "i2", exited, 0, 0), cstat(p, "i1", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{"init failed, Never: pod fails", actionsPod(never, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "i2", exited, 1, 0), cstat(p, "i1", exited, 0, 0))
		}, nil, PodActions{KillPod: true, SandboxID: "sb1"}},
		{"init failed, Always: restart it", actionsPod(always, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "i2", exited, 1, 0), cstat(p, "i1", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}}},
		{"initialized pod with app running ignores removed inits", actionsPod(always, []string{"i1"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, nil, PodActions{SandboxID: "sb1"}},
		{"hash change restarts only that container", actionsPod(always, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "b", running, 0, 0))
		}, func(p *v1.Pod) { p.Spec.Containers[1].Image = "img:2" },
			PodActions{SandboxID: "sb1", ContainersToStart: []int{1}, ContainersToKill: []ContainerToKill{{ID: "b-id", Name: "b", Message: "Container b definition changed, will be restarted"}}}},
		{"deleted pod: exited container not restarted", actionsPod(always, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", exited, 1, 0), cstat(p, "b", running, 0, 0))
		}, func(p *v1.Pod) { now := metav1.NewTime(t0); p.DeletionTimestamp = &now },
			PodActions{SandboxID: "sb1"}},
	}
	runActions(t, tests)
}

func TestComputePodActionsBackoff(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "a", "b")
	now := t0
	b := NewCrashLoopBackoff(0, func() time.Time { return now })
	status := readyStatus(cstat(pod, "a", exited, 1, 2), cstat(pod, "b", exited, 1, 0))
	status.ContainerStatuses[0].FinishedAt = t0.Add(-4 * time.Second)
	// a crashed twice before: its delay is 20 s, 4 s of which passed.
	b.Next(ContainerBackoffKey(pod, &pod.Spec.Containers[0]), t0.Add(-time.Minute))
	b.Next(ContainerBackoffKey(pod, &pod.Spec.Containers[0]), t0.Add(-30*time.Second))
	got := ComputePodActions(pod, status, b, nil, now)
	want := PodActions{SandboxID: "sb1", ContainersToStart: []int{1}, BackingOff: []BackingOff{{Name: "a", Remaining: 16 * time.Second,
		Message: "back-off 20s restarting failed container=a pod=p_ns(u)"}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %+v\nwant %+v", got, want)
	}
	// Once the delay passed, a is started again.
	now = t0.Add(17 * time.Second)
	if got := ComputePodActions(pod, status, b, nil, now); !reflect.DeepEqual(got.ContainersToStart, []int{0, 1}) || got.BackingOff != nil {
		t.Errorf("after delay: %+v", got)
	}
	// A new image is a new backoff.
	pod.Spec.Containers[0].Image = "img:2"
	if got := ComputePodActions(pod, status, b, nil, t0); got.BackingOff != nil {
		t.Errorf("image change still backing off: %+v", got)
	}
}

// actionsCase is one case of ComputePodActions: pod with the status that
// status builds from it, then changed by edit (nil: unchanged), must give
// want at t0.
type actionsCase struct {
	name   string
	pod    *v1.Pod
	status func(pod *v1.Pod) *PodStatus
	edit   func(pod *v1.Pod)
	want   PodActions
}

// runActions runs the cases of ComputePodActions, one subtest each.
func runActions(t *testing.T, tests []actionsCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := tt.status(tt.pod)
			if tt.edit != nil {
				tt.edit(tt.pod)
			}
			got := ComputePodActions(tt.pod, status, nil, nil, t0)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
