package podmanager

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/topologymanager"
	"github.com/actorlet/actorlet/messages"
)

// cpuMachine is a machine with the static CPU manager on 2 CPUs, CPU 0
// reserved (this machine's shape), and the pods' API source.
func cpuMachine(t *testing.T, st *cpumanager.State) *Machine {
	t.Helper()
	cpus, err := cpumanager.New(cpumanager.Synthetic(1, 2, 1, 1), cpumanager.Config{Policy: cpumanager.PolicyStatic,
		Reserved: cpuset.New(0), ReservedCPU: resource.MustParse("1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cpus.Start(st, ""); err != nil {
		t.Fatal(err)
	}
	return NewMachine(Config{Sources: []string{messages.SourceAPI}, MaxPods: 10,
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")},
		CPUs:        cpus, Topology: topologymanager.Config{Policy: "none", Scope: "container", NUMANodes: []int{0}}})
}

func guaranteedPod(uid, cpu string) *v1.Pod {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse("64Mi")}
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}}}}
}

// saved returns the state the step asked to write, if any.
func savedCPUs(cmds []Command) *cpumanager.State {
	var st *cpumanager.State
	for _, c := range cmds {
		if s, ok := c.(CmdSaveCPUs); ok {
			st = &s.State
		}
	}
	return st
}

func rejectedWith(cmds []Command) string {
	for _, c := range cmds {
		if e, ok := c.(CmdEvent); ok && e.Type == v1.EventTypeWarning {
			return e.Reason + ": " + e.Message
		}
	}
	return ""
}

func TestCPUAdmission(t *testing.T) {
	now := t0
	m := cpuMachine(t, nil)
	a, b := guaranteedPod("a", "1"), guaranteedPod("b", "1")
	type step struct {
		name     string
		ev       Event
		shared   string // the state saved; "": none saved
		rejected string
		// counted: the pinnings counted (the none topology policy
		// counts no admission error).
		counted CmdCountResources
	}
	for _, s := range []step{
		{"a gets CPU 1", set(messages.SourceAPI, a), "0", "", CmdCountResources{CPUs: topologymanager.Pinning{Requests: 1}}},
		{"b finds none left", set(messages.SourceAPI, a, b), "",
			"UnexpectedAdmissionError: Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, which is unexpected",
			CmdCountResources{CPUs: topologymanager.Pinning{Requests: 1, Errors: 1}}},
		{"a's worker done: CPU 1 back", EvWorkerDone{UID: "a"}, "0-1", "", CmdCountResources{}},
	} {
		now = now.Add(time.Second)
		cmds := m.Step(s.ev, now)
		st := savedCPUs(cmds)
		switch {
		case s.shared == "" && st != nil:
			t.Errorf("%s: saved %+v", s.name, st)
		case s.shared != "" && (st == nil || st.Default.String() != s.shared):
			t.Errorf("%s: saved %+v, want shared pool %s", s.name, st, s.shared)
		}
		if got := rejectedWith(cmds); got != s.rejected {
			t.Errorf("%s: rejection %q, want %q", s.name, got, s.rejected)
		}
		if got := counted(cmds); got != s.counted {
			t.Errorf("%s: counted %+v, want %+v", s.name, got, s.counted)
		}
	}
}

// counted returns the admission counts the step emitted, summed.
func counted(cmds []Command) CmdCountResources {
	var sum CmdCountResources
	for _, c := range cmds {
		if n, ok := c.(CmdCountResources); ok {
			sum.TopologyError = sum.TopologyError || n.TopologyError
			sum.CPUs.Requests += n.CPUs.Requests
			sum.CPUs.Errors += n.CPUs.Errors
			sum.Memory.Requests += n.Memory.Requests
			sum.Memory.Errors += n.Memory.Errors
		}
	}
	return sum
}

// An earlier run's assignment is kept for a pod given back, and dropped
// for one no source gives back once every source has sent its set.
func TestCPUAssignmentsOfAnEarlierRun(t *testing.T) {
	st := &cpumanager.State{Policy: cpumanager.PolicyStatic, Default: cpuset.New(0),
		Entries: map[string]map[string]cpuset.CPUSet{"a": {"c": cpuset.New(1)}}}
	m := cpuMachine(t, st)
	cmds := m.Step(set(messages.SourceAPI, guaranteedPod("a", "1")), t0)
	if s := savedCPUs(cmds); s != nil || rejectedWith(cmds) != "" {
		t.Fatalf("a given back: saved %+v, rejection %q", s, rejectedWith(cmds))
	}
	m = cpuMachine(t, st)
	cmds = m.Step(set(messages.SourceAPI), t0)
	if s := savedCPUs(cmds); s == nil || s.Default.String() != "0-1" || len(s.Entries) != 0 {
		t.Fatalf("a not given back: saved %+v", s)
	}
}
