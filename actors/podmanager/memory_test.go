package podmanager

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/internal/topologymanager"
	"github.com/actorlet/actorlet/messages"
)

// memMachine is a machine with the static CPU manager on 2 CPUs and the
// Static memory manager on one NUMA node of 1Gi, 128Mi reserved.
func memMachine(t *testing.T) *Machine {
	t.Helper()
	cpus, err := cpumanager.New(cpumanager.Synthetic(1, 2, 1, 1), cpumanager.Config{Policy: cpumanager.PolicyStatic,
		Reserved: cpuset.New(0), ReservedCPU: resource.MustParse("1")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cpus.Start(nil, ""); err != nil {
		t.Fatal(err)
	}
	reserved := v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}
	mem, err := memorymanager.New([]memorymanager.Node{{ID: 0, Memory: 1 << 30}}, memorymanager.Config{Policy: memorymanager.PolicyStatic,
		NodeReservation: reserved, Reserved: []memorymanager.Reservation{{NUMANode: 0, Limits: reserved}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Start(nil, ""); err != nil {
		t.Fatal(err)
	}
	return NewMachine(Config{Sources: []string{messages.SourceAPI}, MaxPods: 10,
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")},
		CPUs:        cpus, Memory: mem, Topology: topologymanager.Config{Policy: "none", Scope: "container", NUMANodes: []int{0}}})
}

func savedMemory(cmds []Command) *memorymanager.State {
	var st *memorymanager.State
	for _, c := range cmds {
		if s, ok := c.(CmdSaveMemory); ok {
			st = &s.State
		}
	}
	return st
}

func memoryPod(uid, mem string) *v1.Pod {
	p := guaranteedPod(uid, "500m")
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse(mem)}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	return p
}

func TestMemoryAdmission(t *testing.T) {
	now := t0
	m := memMachine(t)
	a, b := memoryPod("a", "512Mi"), memoryPod("b", "512Mi")
	for _, s := range []struct {
		name     string
		ev       Event
		nodes    []int // of a's container in the state saved; nil: none saved
		rejected string
	}{
		{"a pinned to node 0", set(messages.SourceAPI, a), []int{0}, ""},
		{"b finds too little left", set(messages.SourceAPI, a, b), nil,
			"UnexpectedAdmissionError: Allocate failed due to [memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available, which is unexpected"},
		{"a's worker done: its memory back", EvWorkerDone{UID: "a"}, []int{}, ""},
	} {
		now = now.Add(time.Second)
		cmds := m.Step(s.ev, now)
		st := savedMemory(cmds)
		switch {
		case s.nodes == nil && st != nil:
			t.Errorf("%s: saved %+v", s.name, st)
		case s.nodes != nil && st == nil:
			t.Errorf("%s: nothing saved", s.name)
		case s.nodes != nil && len(st.NUMANodes("a", "c")) != len(s.nodes):
			t.Errorf("%s: a's nodes %v, want %v", s.name, st.NUMANodes("a", "c"), s.nodes)
		}
		if got := rejectedWith(cmds); got != s.rejected {
			t.Errorf("%s: rejection %q, want %q", s.name, got, s.rejected)
		}
	}
}
