package podruntime

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func withReason(cs *ContainerStatus, reason string) *ContainerStatus { cs.Reason = reason; return cs }

func TestGenerateAPIStatusPhases(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	tests := []struct {
		name    string
		pod     *v1.Pod
		status  func(p *v1.Pod) *PodStatus
		waiting map[string]WaitingReason
		phase   v1.PodPhase
		states  map[string]string // container -> state (waiting reason, "running", terminated reason)
		ready   v1.ConditionStatus
		init    v1.ConditionStatus
	}{
		{"nothing yet", actionsPod(always, nil, "a"), func(*v1.Pod) *PodStatus { return &PodStatus{} }, nil,
			v1.PodPending, map[string]string{"a": ReasonContainerCreating}, v1.ConditionFalse, v1.ConditionTrue},
		{"running", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "a", running, 0, 0)) }, nil,
			v1.PodRunning, map[string]string{"a": "running"}, v1.ConditionTrue, v1.ConditionTrue},
		{"Always, exited, in backoff", actionsPod(always, nil, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(withReason(cstat(p, "a", exited, 1, 3), "Error")) },
			map[string]WaitingReason{"a": {ReasonCrashLoopBackOff, "back-off 40s"}},
			v1.PodRunning, map[string]string{"a": ReasonCrashLoopBackOff}, v1.ConditionFalse, v1.ConditionTrue},
		{"OnFailure, all succeeded", actionsPod(onFailure, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"), withReason(cstat(p, "b", exited, 0, 0), "Completed"))
		}, nil, v1.PodSucceeded, map[string]string{"a": "Completed", "b": "Completed"}, v1.ConditionFalse, v1.ConditionTrue},
		{"OnFailure, one failed: restarting", actionsPod(onFailure, nil, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 1, 0), "Error"))
		}, nil, v1.PodRunning, map[string]string{"a": "Error"}, v1.ConditionFalse, v1.ConditionTrue},
		{"Never, one failed", actionsPod(never, nil, "a", "b"), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"), withReason(cstat(p, "b", exited, 137, 0), "OOMKilled"))
		}, nil, v1.PodFailed, map[string]string{"a": "Completed", "b": "OOMKilled"}, v1.ConditionFalse, v1.ConditionTrue},
		{"Never, all succeeded", actionsPod(never, nil, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "a", exited, 0, 0), "Completed"))
		}, nil, v1.PodSucceeded, map[string]string{"a": "Completed"}, v1.ConditionFalse, v1.ConditionTrue},
		{"init running", actionsPod(always, []string{"i1", "i2"}, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(cstat(p, "i1", running, 0, 0)) }, nil,
			v1.PodPending, map[string]string{"i1": "running", "i2": ReasonPodInitializing, "a": ReasonPodInitializing}, v1.ConditionFalse, v1.ConditionFalse},
		{"init failed, Never", actionsPod(never, []string{"i1"}, "a"), func(p *v1.Pod) *PodStatus { return readyStatus(withReason(cstat(p, "i1", exited, 2, 0), "Error")) }, nil,
			v1.PodFailed, map[string]string{"i1": "Error", "a": ReasonPodInitializing}, v1.ConditionFalse, v1.ConditionFalse},
		{"init failed, Always: backing off", actionsPod(always, []string{"i1"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(withReason(cstat(p, "i1", exited, 2, 0), "Error"))
		}, map[string]WaitingReason{"i1": {ReasonCrashLoopBackOff, "x"}},
			v1.PodPending, map[string]string{"i1": ReasonCrashLoopBackOff, "a": ReasonPodInitializing}, v1.ConditionFalse, v1.ConditionFalse},
		{"initialized and running", actionsPod(always, []string{"i1"}, "a"), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), withReason(cstat(p, "i1", exited, 0, 0), "Completed"))
		}, nil, v1.PodRunning, map[string]string{"i1": "Completed", "a": "running"}, v1.ConditionTrue, v1.ConditionTrue},
		{"image pull error", actionsPod(always, nil, "a"), func(*v1.Pod) *PodStatus { return readyStatus() },
			map[string]WaitingReason{"a": {ReasonErrImagePull, "not found"}},
			v1.PodPending, map[string]string{"a": ReasonErrImagePull}, v1.ConditionFalse, v1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := GenerateAPIStatus(tt.pod, tt.status(tt.pod), tt.waiting, nil, nil, t0)
			if got.Phase != tt.phase {
				t.Errorf("phase %s, want %s", got.Phase, tt.phase)
			}
			for name, want := range tt.states {
				cs := apiContainer(got, name)
				var state string
				switch {
				case cs.State.Running != nil:
					state = "running"
				case cs.State.Terminated != nil:
					state = cs.State.Terminated.Reason
				case cs.State.Waiting != nil:
					state = cs.State.Waiting.Reason
				}
				if state != want {
					t.Errorf("container %s state %q, want %q (%+v)", name, state, want, cs)
				}
			}
			if c := findCond(got, v1.PodReady); c == nil || c.Status != tt.ready {
				t.Errorf("Ready %+v, want %s", c, tt.ready)
			}
			if c := findCond(got, v1.PodInitialized); c == nil || c.Status != tt.init {
				t.Errorf("Initialized %+v, want %s", c, tt.init)
			}
			if c := findCond(got, v1.PodScheduled); c == nil || c.Status != v1.ConditionTrue {
				t.Errorf("PodScheduled %+v", c)
			}
		})
	}
}

func TestGenerateAPIStatusDetails(t *testing.T) {
	pod := actionsPod(v1.RestartPolicyAlways, nil, "b", "a")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{}
	status := readyStatus(cstat(pod, "a", running, 0, 2), cstat(pod, "b", running, 0, 0), withReason(cstat(pod, "a", exited, 1, 1), "Error"))
	status.ContainerStatuses[0].ID = "new"
	status.ContainerStatuses[0].ImageRef = "docker.io/library/img@sha256:1"
	status.ContainerStatuses[2].ID = "old"
	start := metav1.NewTime(t0.Add(-time.Hour))
	earlier := metav1.NewTime(t0.Add(-time.Minute))
	prev := &v1.PodStatus{StartTime: &start, HostIP: "192.0.2.1", Conditions: []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: earlier},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, LastTransitionTime: earlier},
		{Type: "example.com/gate", Status: v1.ConditionTrue},
	}}
	got := GenerateAPIStatus(pod, status, nil, nil, prev, t0)
	if got.ContainerStatuses[0].Name != "a" || got.ContainerStatuses[1].Name != "b" {
		t.Errorf("container statuses not sorted by name: %+v", got.ContainerStatuses)
	}
	a := got.ContainerStatuses[0]
	if a.ContainerID != "containerd://new" || a.RestartCount != 2 || a.ImageID != "docker.io/library/img@sha256:1" || !a.Ready || a.Started == nil || !*a.Started {
		t.Errorf("a: %+v", a)
	}
	if lt := a.LastTerminationState.Terminated; lt == nil || lt.ExitCode != 1 || lt.Reason != "Error" || lt.ContainerID != "containerd://old" {
		t.Errorf("a last termination: %+v", a.LastTerminationState)
	}
	if got.PodIP != "10.244.0.2" || len(got.PodIPs) != 1 || got.HostIP != "192.0.2.1" || !got.StartTime.Equal(&start) || got.QOSClass != v1.PodQOSBestEffort {
		t.Errorf("pod fields: ip %s ips %v host %s start %v qos %s", got.PodIP, got.PodIPs, got.HostIP, got.StartTime, got.QOSClass)
	}
	if c := findCond(got, v1.PodReady); !c.LastTransitionTime.Equal(&earlier) {
		t.Errorf("unchanged Ready lost its transition time: %+v", c)
	}
	if c := findCond(got, v1.ContainersReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("changed ContainersReady: %+v", c)
	}
	if findCond(got, "example.com/gate") == nil {
		t.Error("foreign condition dropped")
	}
	if c := findCond(got, v1.PodReadyToStartContainers); c.Status != v1.ConditionTrue {
		t.Errorf("PodReadyToStartContainers %+v", c)
	}
	// A terminal phase sticks.
	prev.Phase = v1.PodFailed
	if got := GenerateAPIStatus(pod, status, nil, nil, prev, t0); got.Phase != v1.PodFailed {
		t.Errorf("terminal phase revived to %s", got.Phase)
	}
	// No sandbox: not ready to start containers, IPs kept.
	prev = &v1.PodStatus{PodIPs: []v1.PodIP{{IP: "10.244.0.9"}}}
	got = GenerateAPIStatus(pod, &PodStatus{}, nil, nil, prev, t0)
	if c := findCond(got, v1.PodReadyToStartContainers); c.Status != v1.ConditionFalse || got.PodIP != "10.244.0.9" {
		t.Errorf("no sandbox: %+v ip %s", c, got.PodIP)
	}
}

func TestGenerateAPIStatusObservedGeneration(t *testing.T) {
	for _, tt := range []struct {
		generation, previous, want int64
	}{
		{generation: 1, previous: 0, want: 1},
		{generation: 3, previous: 2, want: 3},
		{generation: 2, previous: 3, want: 3}, // a status of an older spec does not go back
	} {
		pod := actionsPod(v1.RestartPolicyAlways, nil, "a")
		pod.Generation = tt.generation
		got := GenerateAPIStatus(pod, &PodStatus{}, nil, nil, &v1.PodStatus{ObservedGeneration: tt.previous}, time.Now())
		if got.ObservedGeneration != tt.want {
			t.Errorf("generation %d, previous %d: observedGeneration %d, want %d", tt.generation, tt.previous, got.ObservedGeneration, tt.want)
		}
		for _, c := range got.Conditions {
			if c.ObservedGeneration != tt.generation {
				t.Errorf("condition %s: observedGeneration %d, want %d", c.Type, c.ObservedGeneration, tt.generation)
			}
		}
	}
}

// TestTerminalAPIStatus checks the status of a pod the kubelet has
// terminated (deleted or evicted, its containers killed): terminal
// whatever its restart policy, as upstream's getPhase with podIsTerminal,
// and not Ready; a static pod keeps the phase its restart policy gives.
func TestTerminalAPIStatus(t *testing.T) {
	always, onFailure, never := v1.RestartPolicyAlways, v1.RestartPolicyOnFailure, v1.RestartPolicyNever
	static := func(p *v1.Pod) *v1.Pod {
		p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
		return p
	}
	killed := func(name string) func(p *v1.Pod) *ContainerStatus {
		return func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, name, exited, 137, 0), "Error") }
	}
	completed := func(name string) func(p *v1.Pod) *ContainerStatus {
		return func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, name, exited, 0, 0), "Completed") }
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		containers []func(p *v1.Pod) *ContainerStatus
		phase      v1.PodPhase
	}{
		{"Never, killed", actionsPod(never, nil, "c"), []func(*v1.Pod) *ContainerStatus{killed("c")}, v1.PodFailed},
		{"Always, killed", actionsPod(always, nil, "c"), []func(*v1.Pod) *ContainerStatus{killed("c")}, v1.PodFailed},
		{"OnFailure, one killed", actionsPod(onFailure, nil, "a", "b"), []func(*v1.Pod) *ContainerStatus{completed("a"), killed("b")}, v1.PodFailed},
		{"Always, every container exited 0", actionsPod(always, nil, "a", "b"), []func(*v1.Pod) *ContainerStatus{completed("a"), completed("b")}, v1.PodSucceeded},
		{"static, Always, killed", static(actionsPod(always, nil, "c")), []func(*v1.Pod) *ContainerStatus{killed("c")}, v1.PodRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs []*ContainerStatus
			for _, c := range tt.containers {
				cs = append(cs, c(tt.pod))
			}
			prev := GenerateAPIStatus(tt.pod, readyStatus(), nil, nil, nil, t0)
			prev.Phase = v1.PodRunning
			got := TerminalAPIStatus(tt.pod, readyStatus(cs...), &prev, t0)
			if got.Phase != tt.phase {
				t.Errorf("phase %s, want %s", got.Phase, tt.phase)
			}
			for _, c := range got.Conditions {
				if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
					t.Errorf("Ready is True in a terminated pod's status")
				}
			}
			if len(got.ContainerStatuses) != len(tt.containers) {
				t.Fatalf("%d container statuses, want %d", len(got.ContainerStatuses), len(tt.containers))
			}
			for _, c := range got.ContainerStatuses {
				if c.State.Terminated == nil {
					t.Errorf("container %s: state %+v, want terminated", c.Name, c.State)
				}
			}
		})
	}
}

// TestTerminalAPIStatusSettlesUnknown checks upstream's TerminatePod step
// of a terminated pod's status: what the runtime no longer shows (never
// created, or removed) is terminated with ContainerStatusUnknown once the
// pod initialized, as are the init containers that ran, and a pod that is
// not static is Failed even if nothing of it ever ran.
func TestTerminalAPIStatusSettlesUnknown(t *testing.T) {
	never := v1.RestartPolicyNever
	type want struct {
		phase      v1.PodPhase
		inits      []string // each init container's state: "running", "terminated:REASON" or "waiting"
		containers []string
	}
	tests := []struct {
		name       string
		pod        *v1.Pod
		containers []func(p *v1.Pod) *ContainerStatus
		want       want
	}{
		{"deleted before anything ran", actionsPod(never, nil, "a", "b"), nil,
			want{v1.PodFailed, nil, []string{"terminated:ContainerStatusUnknown", "terminated:ContainerStatusUnknown"}}},
		{"one container killed, one never created", actionsPod(never, nil, "a", "b"),
			[]func(*v1.Pod) *ContainerStatus{func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, "a", exited, 137, 0), "Error") }},
			want{v1.PodFailed, nil, []string{"terminated:Error", "terminated:ContainerStatusUnknown"}}},
		{"init containers never ran", actionsPod(never, []string{"i1", "i2"}, "a"), nil,
			want{v1.PodFailed, []string{"terminated:ContainerStatusUnknown", "waiting"}, []string{"waiting"}}},
		{"first init container failed", actionsPod(never, []string{"i1", "i2"}, "a"),
			[]func(*v1.Pod) *ContainerStatus{func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, "i1", exited, 1, 0), "Error") }},
			want{v1.PodFailed, []string{"terminated:Error", "waiting"}, []string{"waiting"}}},
		{"second init container killed", actionsPod(never, []string{"i1", "i2"}, "a"),
			[]func(*v1.Pod) *ContainerStatus{
				func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, "i2", exited, 137, 0), "Error") },
				func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, "i1", exited, 0, 0), "Completed") },
			},
			want{v1.PodFailed, []string{"terminated:Completed", "terminated:Error"}, []string{"waiting"}}},
		{"initialized, app never created", actionsPod(never, []string{"i1"}, "a"),
			[]func(*v1.Pod) *ContainerStatus{func(p *v1.Pod) *ContainerStatus { return withReason(cstat(p, "i1", exited, 0, 0), "Completed") }},
			want{v1.PodFailed, []string{"terminated:Completed"}, []string{"terminated:ContainerStatusUnknown"}}},
	}
	state := func(s v1.ContainerStatus) string {
		switch {
		case s.State.Running != nil:
			return "running"
		case s.State.Terminated != nil:
			return "terminated:" + s.State.Terminated.Reason
		}
		return "waiting"
	}
	states := func(ss []v1.ContainerStatus) []string {
		var out []string
		for _, s := range ss {
			out = append(out, state(s))
		}
		return out
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs []*ContainerStatus
			for _, c := range tt.containers {
				cs = append(cs, c(tt.pod))
			}
			got := TerminalAPIStatus(tt.pod, readyStatus(cs...), &v1.PodStatus{Phase: v1.PodPending}, t0)
			if got.Phase != tt.want.phase {
				t.Errorf("phase %s, want %s", got.Phase, tt.want.phase)
			}
			if g := states(got.InitContainerStatuses); fmt.Sprint(g) != fmt.Sprint(tt.want.inits) {
				t.Errorf("init containers %v, want %v", g, tt.want.inits)
			}
			if g := states(got.ContainerStatuses); fmt.Sprint(g) != fmt.Sprint(tt.want.containers) {
				t.Errorf("containers %v, want %v", g, tt.want.containers)
			}
			for _, s := range append(got.InitContainerStatuses, got.ContainerStatuses...) {
				if term := s.State.Terminated; term != nil && term.Reason == ReasonContainerStatusUnknown && (term.ExitCode != 137 || s.Ready) {
					t.Errorf("%s: ContainerStatusUnknown with exit code %d, ready %v", s.Name, term.ExitCode, s.Ready)
				}
			}
		})
	}
}
