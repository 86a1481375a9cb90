package podruntime

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

func TestReadyToStartCondition(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "a")
	ready := func() *runtimeapi.PodSandboxStatus {
		return sandbox("sb1", 0, runtimeapi.PodSandboxState_SANDBOX_READY, "10.244.0.2")
	}
	for _, tt := range []struct {
		name      string
		sandboxes func() []*runtimeapi.PodSandboxStatus
		message   string // "" : True
	}{
		{"ready", func() []*runtimeapi.PodSandboxStatus { return []*runtimeapi.PodSandboxStatus{ready()} }, ""},
		{"none", func() []*runtimeapi.PodSandboxStatus { return nil }, "no pod sandbox exists"},
		{"stopped", func() []*runtimeapi.PodSandboxStatus {
			return []*runtimeapi.PodSandboxStatus{sandbox("sb1", 0, runtimeapi.PodSandboxState_SANDBOX_NOTREADY, "")}
		}, "pod sandbox is not ready"},
		{"two ready", func() []*runtimeapi.PodSandboxStatus { return []*runtimeapi.PodSandboxStatus{ready(), ready()} },
			"multiple pod sandboxes are ready and need to be reconciled"},
		{"host network changed", func() []*runtimeapi.PodSandboxStatus {
			s := ready()
			s.Linux.Namespaces.Options.Network = runtimeapi.NamespaceMode_NODE
			return []*runtimeapi.PodSandboxStatus{s}
		}, "network namespace mode changed and sandbox needs to be recreated"},
		{"no IP", func() []*runtimeapi.PodSandboxStatus {
			s := ready()
			s.Network.Ip = ""
			return []*runtimeapi.PodSandboxStatus{s}
		}, "pod sandbox has no IP address"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := readyToStartCondition(pod, &PodStatus{SandboxStatuses: tt.sandboxes()})
			want := v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
			if tt.message != "" {
				want = v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: "PodSandboxNotReady", Message: tt.message}
			}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestGenerateAPIStatusInitStages is a pod with an init container, stage
// by stage, as upstream's kubelet shows it (test/lifecycle's TestPods
// compares them live).
func TestGenerateAPIStatusInitStages(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, []string{"i"}, "a")
	type cond struct{ status, reason, message string }
	type ctr struct {
		state          string // waiting reason, "running", or terminated reason
		ready, started bool
	}
	for _, tt := range []struct {
		name   string
		status *PodStatus
		phase  v1.PodPhase
		conds  []cond // PodReadyToStartContainers, Initialized, Ready, ContainersReady, PodScheduled
		ctrs   map[string]ctr
	}{
		{"no sandbox yet", &PodStatus{}, v1.PodPending, []cond{
			{"False", "PodSandboxNotReady", "no pod sandbox exists"},
			{"False", "ContainersNotInitialized", "containers with incomplete status: [i]"},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"True", "", ""},
		}, map[string]ctr{"i": {ReasonPodInitializing, false, false}, "a": {ReasonPodInitializing, false, false}}},
		{"init running", readyStatus(cstat(pod, "i", running, 0, 0)), v1.PodPending, []cond{
			{"True", "", ""},
			{"False", "ContainersNotInitialized", "containers with incomplete status: [i]"},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"True", "", ""},
		}, map[string]ctr{"i": {"running", false, true}, "a": {ReasonPodInitializing, false, false}}},
		{"init done", readyStatus(withReason(cstat(pod, "i", exited, 0, 0), "Completed")), v1.PodPending, []cond{
			{"True", "", ""},
			{"True", "", ""},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"False", "ContainersNotReady", "containers with unready status: [a]"},
			{"True", "", ""},
		}, map[string]ctr{"i": {"Completed", true, false}, "a": {ReasonPodInitializing, false, false}}},
		{"app running", readyStatus(cstat(pod, "a", running, 0, 0), withReason(cstat(pod, "i", exited, 0, 0), "Completed")), v1.PodRunning, []cond{
			{"True", "", ""}, {"True", "", ""}, {"True", "", ""}, {"True", "", ""}, {"True", "", ""},
		}, map[string]ctr{"i": {"Completed", true, false}, "a": {"running", true, true}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerateAPIStatus(pod, tt.status, nil, nil, nil, t0)
			if got.Phase != tt.phase {
				t.Errorf("phase %s, want %s", got.Phase, tt.phase)
			}
			order := []v1.PodConditionType{v1.PodReadyToStartContainers, v1.PodInitialized, v1.PodReady, v1.ContainersReady, v1.PodScheduled}
			if len(got.Conditions) != len(order) {
				t.Fatalf("conditions %+v", got.Conditions)
			}
			for i, c := range got.Conditions {
				w := tt.conds[i]
				if c.Type != order[i] || string(c.Status) != w.status || c.Reason != w.reason || c.Message != w.message {
					t.Errorf("condition %d: %s %s %q %q, want %s %s %q %q", i, c.Type, c.Status, c.Reason, c.Message, order[i], w.status, w.reason, w.message)
				}
			}
			for name, w := range tt.ctrs {
				cs := apiContainer(got, name)
				state := ""
				switch {
				case cs.State.Waiting != nil:
					state = cs.State.Waiting.Reason
				case cs.State.Running != nil:
					state = "running"
				case cs.State.Terminated != nil:
					state = cs.State.Terminated.Reason
				}
				if state != w.state || cs.Ready != w.ready || cs.Started == nil || *cs.Started != w.started {
					t.Errorf("%s: %s ready %v started %v, want %s %v %v", name, state, cs.Ready, cs.Started, w.state, w.ready, w.started)
				}
			}
		})
	}
	// Without init containers, a container not created yet is
	// ContainerCreating.
	plain := actionsPod(v1.RestartPolicyAlways, nil, "a")
	if cs := apiContainer(GenerateAPIStatus(plain, readyStatus(), nil, nil, nil, t0), "a"); cs.State.Waiting == nil || cs.State.Waiting.Reason != ReasonContainerCreating {
		t.Errorf("a not created yet: %+v", cs.State)
	}
}

// TestGenerateAPIStatusSidecarPhases is upstream's getPhase for pods with
// a sidecar (an init container with restartPolicy Always): it does not
// count for the pod's completion, only for its start.
func TestGenerateAPIStatusSidecarPhases(t *testing.T) {
	sidecar := func(policy v1.RestartPolicy) *v1.Pod {
		p := sidecarPod([]string{"s"}, "a")
		p.Spec.RestartPolicy = policy
		return p
	}
	withStartup := probed(sidecar(v1.RestartPolicyAlways), results.Startup, "s")
	crashed := func(p *v1.Pod) *PodStatus {
		return readyStatus(cstat(p, "a", running, 0, 0), withReason(cstat(p, "s", exited, 1, 0), "Error"))
	}
	for _, tt := range []struct {
		name    string
		pod     *v1.Pod
		status  func(*v1.Pod) *PodStatus
		waiting map[string]WaitingReason
		phase   v1.PodPhase
		ready   v1.ConditionStatus
	}{
		{"sidecar starting", sidecar(v1.RestartPolicyAlways), func(p *v1.Pod) *PodStatus { return readyStatus() }, nil, v1.PodPending, v1.ConditionFalse},
		{"sidecar running, its startup probe pending", withStartup, func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "s", running, 0, 0)) }, nil, v1.PodPending, v1.ConditionFalse},
		{"sidecar and app running", sidecar(v1.RestartPolicyAlways), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "s", running, 0, 0))
		}, nil, v1.PodRunning, v1.ConditionTrue},
		{"sidecar crashed, backing off: still running, not ready", sidecar(v1.RestartPolicyNever), crashed,
			map[string]WaitingReason{"s": {ReasonCrashLoopBackOff, "back-off"}}, v1.PodRunning, v1.ConditionFalse},
		{"Never: app done, sidecar still running", sidecar(v1.RestartPolicyNever), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"), cstat(p, "s", running, 0, 0))
		}, nil, v1.PodRunning, v1.ConditionFalse},
		{"Never: app done, sidecar stopped", sidecar(v1.RestartPolicyNever), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"), withReason(cstat(p, "s", exited, 137, 0), "Error"))
		}, nil, v1.PodSucceeded, v1.ConditionFalse},
		{"Never: app failed, sidecar stopped", sidecar(v1.RestartPolicyNever), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 2, 0), "Error"), withReason(cstat(p, "s", exited, 137, 0), "Error"))
		}, nil, v1.PodFailed, v1.ConditionFalse},
		{"OnFailure: app done, sidecar stopped", sidecar(v1.RestartPolicyOnFailure), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"), withReason(cstat(p, "s", exited, 137, 0), "Error"))
		}, nil, v1.PodSucceeded, v1.ConditionFalse},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerateAPIStatus(tt.pod, tt.status(tt.pod), tt.waiting, nil, nil, t0)
			if got.Phase != tt.phase {
				t.Errorf("phase %s, want %s", got.Phase, tt.phase)
			}
			if c := findCond(got, v1.PodReady); c.Status != tt.ready {
				t.Errorf("Ready %+v, want %s", c, tt.ready)
			}
		})
	}
}

// TestGenerateAPIStatusSpecDetails: the volume mounts of every container,
// and the resources of those that have an instance, as upstream's
// (RecursiveReadOnlyMounts and InPlacePodVerticalScaling, both GA).
func TestGenerateAPIStatusSpecDetails(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "a", "b")
	pod.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}, {Name: "conf", MountPath: "/etc/app", ReadOnly: true}}
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
	}
	got := GenerateAPIStatus(pod, readyStatus(cstat(pod, "a", running, 0, 0)), nil, nil, nil, t0)
	a, b := apiContainer(got, "a"), apiContainer(got, "b")
	disabled := v1.RecursiveReadOnlyDisabled
	wantMounts := []v1.VolumeMountStatus{{Name: "data", MountPath: "/data"}, {Name: "conf", MountPath: "/etc/app", ReadOnly: true, RecursiveReadOnly: &disabled}}
	if !reflect.DeepEqual(a.VolumeMounts, wantMounts) {
		t.Errorf("a's volume mounts %+v, want %+v", a.VolumeMounts, wantMounts)
	}
	if a.Resources == nil || !reflect.DeepEqual(*a.Resources, pod.Spec.Containers[0].Resources) || !reflect.DeepEqual(a.AllocatedResources, pod.Spec.Containers[0].Resources.Requests) {
		t.Errorf("a's resources %+v, allocated %+v", a.Resources, a.AllocatedResources)
	}
	if b.Resources != nil || b.AllocatedResources != nil || b.VolumeMounts != nil {
		t.Errorf("b, not created: resources %+v, allocated %+v, mounts %+v", b.Resources, b.AllocatedResources, b.VolumeMounts)
	}
}
