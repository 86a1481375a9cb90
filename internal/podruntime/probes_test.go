package podruntime

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

// probed gives the named containers of pod a liveness, readiness or
// startup probe.
func probed(pod *v1.Pod, kind results.Kind, names ...string) *v1.Pod {
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			for _, n := range names {
				if cs[i].Name != n {
					continue
				}
				p := &v1.Probe{}
				switch kind {
				case results.Liveness:
					cs[i].LivenessProbe = p
				case results.Readiness:
					cs[i].ReadinessProbe = p
				case results.Startup:
					cs[i].StartupProbe = p
				}
			}
		}
	}
	return pod
}

func sidecarPod(inits []string, apps ...string) *v1.Pod {
	p := actionsPod(v1.RestartPolicyAlways, inits, apps...)
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers[0].RestartPolicy = &always
	return p
}

func TestComputePodActionsProbes(t *testing.T) {
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	graced := probed(actionsPod(always, nil, "a"), results.Liveness, "a")
	graced.Spec.Containers[0].LivenessProbe.TerminationGracePeriodSeconds = ptrTo(int64(3))
	tests := []struct {
		name   string
		pod    *v1.Pod
		status func(*v1.Pod) *PodStatus
		probes results.Pod
		want   PodActions
	}{
		{"liveness failure kills and restarts", probed(actionsPod(always, nil, "a", "b"), results.Liveness, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "b", running, 0, 0))
		}, results.Pod{"a-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "a-id", Name: "a", Message: "Container a failed liveness probe, will be restarted"}}}},
		{"liveness failure with the probe's grace period", graced, func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, results.Pod{"a-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "a-id", Name: "a", GracePeriod: ptrTo(int64(3)), Message: "Container a failed liveness probe, will be restarted"}}}},
		{"liveness failure in a Never pod only kills", probed(actionsPod(never, nil, "a", "b"), results.Liveness, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "b", running, 0, 0))
		}, results.Pod{"a-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1", ContainersToKill: []ContainerToKill{{ID: "a-id", Name: "a", Message: "Container a failed liveness probe"}}}},
		{"startup failure kills and restarts", probed(actionsPod(always, nil, "a"), results.Startup, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, results.Pod{"a-id": {Startup: results.Failure}},
			PodActions{SandboxID: "sb1", ContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "a-id", Name: "a", Message: "Container a failed startup probe, will be restarted"}}}},
		{"a failure of another instance kills nothing", probed(actionsPod(always, nil, "a"), results.Liveness, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, results.Pod{"old-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1"}},
		{"a result without a probe kills nothing", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, results.Pod{"a-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1"}},
		{"a sidecar waits for its startup probe", probed(sidecarPod([]string{"side", "init"}, "app"), results.Startup, "side"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "side", running, 0, 0))
		}, nil,
			PodActions{SandboxID: "sb1"}},
		{"a started sidecar lets the next init container start", probed(sidecarPod([]string{"side", "init"}, "app"), results.Startup, "side"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "side", running, 0, 0))
		}, results.Pod{"side-id": {Startup: results.Success}},
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}}},
		{"a sidecar failing its startup probe restarts", probed(sidecarPod([]string{"side", "init"}, "app"), results.Startup, "side"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "side", running, 0, 0))
		}, results.Pod{"side-id": {Startup: results.Failure}},
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "side-id", Name: "side", Message: "Init container side failed startup probe"}}}},
		{"a sidecar failing its liveness probe restarts", probed(sidecarPod([]string{"side"}, "app"), results.Liveness, "side"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "app", running, 0, 0), cstat(p, "side", running, 0, 0))
		}, results.Pod{"side-id": {Liveness: results.Failure}},
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "side-id", Name: "side", Message: "Init container side failed liveness probe"}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ComputePodActions(tt.pod, tt.status(tt.pod), nil, tt.probes, t0)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestGenerateAPIStatusProbes(t *testing.T) {
	base := func(kind results.Kind) *v1.Pod {
		return probed(actionsPod(v1.RestartPolicyAlways, nil, "a"), kind, "a")
	}
	gated := actionsPod(v1.RestartPolicyAlways, nil, "a")
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/ready"}}
	tests := []struct {
		name          string
		pod           *v1.Pod
		probes        results.Pod
		previous      []v1.PodCondition
		started, read bool
		podReady      v1.ConditionStatus
		reason        string
	}{
		{"no probes: started and ready", actionsPod(v1.RestartPolicyAlways, nil, "a"), nil, nil, true, true, v1.ConditionTrue, ""},
		{"readiness not yet known", base(results.Readiness), nil, nil, true, false, v1.ConditionFalse, reasonContainersNotReady},
		{"readiness failed", base(results.Readiness), results.Pod{"a-id": {Readiness: results.Failure}}, nil, true, false, v1.ConditionFalse, reasonContainersNotReady},
		{"readiness succeeded", base(results.Readiness), results.Pod{"a-id": {Readiness: results.Success}}, nil, true, true, v1.ConditionTrue, ""},
		{"startup pending: neither started nor ready", base(results.Startup), nil, nil, false, false, v1.ConditionFalse, reasonContainersNotReady},
		{"startup succeeded", base(results.Startup), results.Pod{"a-id": {Startup: results.Success}}, nil, true, true, v1.ConditionTrue, ""},
		{"a readiness gate without its condition", gated, nil, nil, true, true, v1.ConditionFalse, reasonReadinessGatesNotReady},
		{"a readiness gate False", gated, nil, []v1.PodCondition{{Type: "example.com/ready", Status: v1.ConditionFalse}}, true, true, v1.ConditionFalse, reasonReadinessGatesNotReady},
		{"a readiness gate True", gated, nil, []v1.PodCondition{{Type: "example.com/ready", Status: v1.ConditionTrue}}, true, true, v1.ConditionTrue, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := readyStatus(cstat(tt.pod, "a", running, 0, 0))
			got := GenerateAPIStatus(tt.pod, status, nil, tt.probes, &v1.PodStatus{Conditions: tt.previous}, t0)
			cs := got.ContainerStatuses[0]
			if *cs.Started != tt.started || cs.Ready != tt.read {
				t.Errorf("started %v ready %v, want %v %v", *cs.Started, cs.Ready, tt.started, tt.read)
			}
			for _, c := range got.Conditions {
				if c.Type == v1.PodReady && (c.Status != tt.podReady || c.Reason != tt.reason) {
					t.Errorf("Ready = %s (%s: %s), want %s (%s)", c.Status, c.Reason, c.Message, tt.podReady, tt.reason)
				}
			}
		})
	}
}

// TestApplyReadiness runs readiness results over a reported status, as
// upstream's status manager's SetContainerReadiness: the container's ready
// flag and the pod's Ready and ContainersReady follow, other containers
// and conditions stay as they were.
func TestApplyReadiness(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0.Add(time.Minute)
	yes, no := true, false
	cs := func(name, id string, ready bool, started *bool, running bool) v1.ContainerStatus {
		s := v1.ContainerStatus{Name: name, ContainerID: "containerd://" + id, Ready: ready, Started: started}
		if running {
			s.State.Running = &v1.ContainerStateRunning{}
		} else {
			s.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 0}
		}
		return s
	}
	cond := func(typ v1.PodConditionType, ok bool, at time.Time, reason, msg string) v1.PodCondition {
		c := v1.PodCondition{Type: typ, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(at), Reason: reason, Message: msg}
		if !ok {
			c.Status = v1.ConditionFalse
		}
		return c
	}
	readyConds := []v1.PodCondition{
		{Type: v1.PodInitialized, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(t0)},
		cond(v1.PodReady, true, t0, "", ""), cond(v1.ContainersReady, true, t0, "", ""),
	}
	status := func(conds []v1.PodCondition, containers ...v1.ContainerStatus) v1.PodStatus {
		return v1.PodStatus{Phase: v1.PodRunning, Conditions: conds, ContainerStatuses: containers}
	}
	pod := probed(actionsPod(v1.RestartPolicyAlways, nil, "a", "b"), results.Readiness, "a")
	sidecar := probed(sidecarPod([]string{"side"}, "app"), results.Readiness, "side")
	gated := probed(actionsPod(v1.RestartPolicyAlways, nil, "a"), results.Readiness, "a")
	gated.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	notReady := "containers with unready status: [a]"

	tests := []struct {
		name    string
		pod     *v1.Pod
		status  v1.PodStatus
		probes  results.Pod
		want    v1.PodStatus
		changed bool
	}{
		{"a readiness failure makes the container and the pod not ready", pod,
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Failure}},
			status([]v1.PodCondition{readyConds[0],
				cond(v1.PodReady, false, now, reasonContainersNotReady, notReady), cond(v1.ContainersReady, false, now, reasonContainersNotReady, notReady)},
				cs("a", "a-id", false, &yes, true), cs("b", "b-id", true, &yes, true)), true},
		{"a readiness success makes them ready again", pod,
			status([]v1.PodCondition{readyConds[0],
				cond(v1.PodReady, false, t0, reasonContainersNotReady, notReady), cond(v1.ContainersReady, false, t0, reasonContainersNotReady, notReady)},
				cs("a", "a-id", false, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Success}},
			status([]v1.PodCondition{readyConds[0], cond(v1.PodReady, true, now, "", ""), cond(v1.ContainersReady, true, now, "", "")},
				cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)), true},
		{"a result that agrees changes nothing", pod,
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Success}},
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)), false},
		{"no verdict leaves the container as it was", pod,
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Liveness: results.Failure}},
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)), false},
		{"a result of another instance changes nothing", pod,
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"old-id": {Readiness: results.Failure}},
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)), false},
		{"a container without a readiness probe is left alone", pod,
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"b-id": {Readiness: results.Failure}},
			status(readyConds, cs("a", "a-id", true, &yes, true), cs("b", "b-id", true, &yes, true)), false},
		{"a container that stopped is left alone", pod,
			status(readyConds, cs("a", "a-id", false, &no, false), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Success}},
			status(readyConds, cs("a", "a-id", false, &no, false), cs("b", "b-id", true, &yes, true)), false},
		{"a container not started is left alone", pod,
			status(readyConds, cs("a", "a-id", false, &no, true), cs("b", "b-id", true, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Success}},
			status(readyConds, cs("a", "a-id", false, &no, true), cs("b", "b-id", true, &yes, true)), false},
		{"a sidecar's readiness counts", sidecar,
			v1.PodStatus{Phase: v1.PodRunning, Conditions: readyConds,
				InitContainerStatuses: []v1.ContainerStatus{cs("side", "s-id", true, &yes, true)}, ContainerStatuses: []v1.ContainerStatus{cs("app", "app-id", true, &yes, true)}},
			results.Pod{"s-id": {Readiness: results.Failure}},
			v1.PodStatus{Phase: v1.PodRunning,
				Conditions: []v1.PodCondition{readyConds[0],
					cond(v1.PodReady, false, now, reasonContainersNotReady, "containers with unready status: [side]"),
					cond(v1.ContainersReady, false, now, reasonContainersNotReady, "containers with unready status: [side]")},
				InitContainerStatuses: []v1.ContainerStatus{cs("side", "s-id", false, &yes, true)}, ContainerStatuses: []v1.ContainerStatus{cs("app", "app-id", true, &yes, true)}}, true},
		{"readiness gates still hold Ready", gated,
			status([]v1.PodCondition{readyConds[0],
				cond(v1.PodReady, false, t0, reasonContainersNotReady, notReady), cond(v1.ContainersReady, false, t0, reasonContainersNotReady, notReady)},
				cs("a", "a-id", false, &yes, true)),
			results.Pod{"a-id": {Readiness: results.Success}},
			status([]v1.PodCondition{readyConds[0],
				cond(v1.PodReady, false, t0, reasonReadinessGatesNotReady, `corresponding condition of pod readiness gate "example.com/gate" does not exist.`),
				cond(v1.ContainersReady, true, now, "", "")},
				cs("a", "a-id", true, &yes, true)), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.status.DeepCopy()
			got, changed := ApplyReadiness(tt.pod, tt.status, tt.probes, now)
			if changed != tt.changed {
				t.Errorf("changed %v, want %v", changed, tt.changed)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("status:\n got %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(*before, tt.status) {
				t.Errorf("the status given was changed")
			}
		})
	}
}
