package podmanager

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// cpuPod is an API pod with one container requesting cpu (and, with
// limit, limited to it), at generation gen.
func cpuPod(uid, cpu string, gen int64) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Image: "busybox",
		Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}}}}}
	p.UID, p.Name, p.Namespace, p.Generation = types.UID(uid), "p-"+uid, "default", gen
	return p
}

func TestDecideResize(t *testing.T) {
	allocatable := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	for _, tc := range []struct {
		name                string
		desired             *v1.Pod
		others              []*v1.Pod
		alloc               PodAllocation
		wantReason, wantMsg string
	}{
		{"fits", cpuPod("a", "1", 2), []*v1.Pod{cpuPod("b", "500m", 1)}, nil, "", ""},
		{"fits exactly", cpuPod("a", "1500m", 2), []*v1.Pod{cpuPod("b", "500m", 1)}, nil, "", ""},
		{"not beside the others: deferred", cpuPod("a", "1600m", 2), []*v1.Pod{cpuPod("b", "500m", 1)}, nil, v1.PodReasonDeferred,
			"Node didn't have enough resource: cpu, requested: 1600, used: 500, capacity: 2000"},
		{"more than the node: infeasible", cpuPod("a", "3", 2), nil, nil, v1.PodReasonInfeasible,
			"Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"},
		{"its own old allocation does not count", cpuPod("a", "2", 2), []*v1.Pod{cpuPod("a", "1", 1)}, nil, "", ""},
		{"pod-level resources changed: infeasible", withPodLevel(cpuPod("a", "1", 2), "2"), nil, allocationOf(withPodLevel(cpuPod("a", "1", 1), "1")),
			v1.PodReasonInfeasible, "InPlacePodLevelResourcesVerticalScaling is disabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alloc := tc.alloc
			if alloc == nil {
				alloc = allocationOf(tc.desired)
			}
			got := decideResize(tc.desired, alloc, tc.others, allocatable)
			if tc.wantReason == "" {
				if got != nil {
					t.Fatalf("pending %+v, want allocated", got)
				}
				return
			}
			if got == nil || got.Reason != tc.wantReason || got.Message != tc.wantMsg {
				t.Errorf("got %+v, want %s %q", got, tc.wantReason, tc.wantMsg)
			}
		})
	}
}

// resizeMachine is a machine past its start with pods a (1 cpu) and b
// (500m) running on a 2-cpu node.
func resizeMachine(t *testing.T) *Machine {
	m := newTestMachine()
	m.Step(EvStarted{First: true}, t0)
	m.Step(set(messages.SourceFile), t0)
	m.Step(set(messages.SourceAPI, cpuPod("a", "1", 1), cpuPod("b", "500m", 1)), t0)
	for _, uid := range []types.UID{"a", "b"} {
		m.Step(EvWorkerStatus{UID: uid, Status: v1.PodStatus{Phase: v1.PodRunning}}, t0)
	}
	return m
}

// toWorker returns the pod the commands hand to uid's worker, nil if none.
func toWorker(cmds []Command, uid types.UID) *v1.Pod {
	for _, c := range cmds {
		if t, ok := c.(CmdTell); ok && t.UID == uid {
			if u, ok := t.Message.(*messages.UpdatePod); ok {
				return u.Pod
			}
		}
	}
	return nil
}

func reported(cmds []Command, uid types.UID) *v1.PodStatus {
	for _, c := range cmds {
		if r, ok := c.(CmdReportStatus); ok && r.Pod.UID == uid {
			return &r.Status
		}
	}
	return nil
}

func saved(cmds []Command) Allocations {
	for _, c := range cmds {
		if s, ok := c.(CmdSaveAllocations); ok {
			return s.All
		}
	}
	return nil
}

func cpuOf(p *v1.Pod) int64 {
	q := p.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]
	return q.MilliValue()
}

func pendingCondition(s *v1.PodStatus) *v1.PodCondition {
	if s == nil {
		return nil
	}
	for i := range s.Conditions {
		if s.Conditions[i].Type == v1.PodResizePending {
			return &s.Conditions[i]
		}
	}
	return nil
}

func TestMachineResize(t *testing.T) {
	t.Run("a resize that fits is allocated and checkpointed", func(t *testing.T) {
		m := resizeMachine(t)
		cmds := m.Step(set(messages.SourceAPI, cpuPod("a", "1500m", 2), cpuPod("b", "500m", 1)), t0)
		w := toWorker(cmds, "a")
		if w == nil || cpuOf(w) != 1500 {
			t.Fatalf("worker got %v", w)
		}
		if all := saved(cmds); all == nil || cpuAllocated(all["a"]) != 1500 {
			t.Errorf("checkpoint %v", all)
		}
		if e := event(cmds, events.ResizeStarted); e == nil || e.Type != v1.EventTypeNormal {
			t.Errorf("no ResizeStarted event: %v", describe(cmds))
		}
	})
	t.Run("a resize that does not fit is deferred, the worker keeps the allocation", func(t *testing.T) {
		m := resizeMachine(t)
		cmds := m.Step(set(messages.SourceAPI, cpuPod("a", "1600m", 2), cpuPod("b", "500m", 1)), t0)
		w := toWorker(cmds, "a")
		if w == nil || cpuOf(w) != 1000 || w.Generation != 2 {
			t.Fatalf("worker got %v", w)
		}
		c := pendingCondition(reported(cmds, "a"))
		if c == nil || c.Reason != v1.PodReasonDeferred || c.ObservedGeneration != 2 {
			t.Fatalf("pending condition %+v", c)
		}
		if e := event(cmds, events.ResizeDeferred); e == nil || e.Type != v1.EventTypeWarning ||
			!strings.HasPrefix(e.Message, "Pod resize Deferred: {\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":{\"cpu\":\"1600m\"}}}],\"generation\":2,\"error\":\"Node didn't have enough resource") {
			t.Errorf("event %+v", e)
		}
		// The worker's next status carries the condition too.
		cmds = m.Step(EvWorkerStatus{UID: "a", Status: v1.PodStatus{Phase: v1.PodRunning, ObservedGeneration: 2}}, t0)
		if pendingCondition(reported(cmds, "a")) == nil {
			t.Error("the worker's status lost the pending condition")
		}
		// Admission counts a at its allocation (1 cpu): a 500m pod fits.
		if r := admit(cpuPod("x", "500m", 1), m.admitted(), Admission{MaxPods: 10, Allocatable: m.cfg.Allocatable}); r != nil {
			t.Errorf("admission counted the desired resources: %v", r.Message)
		}
		// b leaving makes room: the deferred resize goes through.
		m.Step(EvWorkerStatus{UID: "b", Status: v1.PodStatus{Phase: v1.PodRunning}}, t0)
		m.Step(set(messages.SourceAPI, cpuPod("a", "1600m", 2)), t0)
		cmds = m.Step(EvWorkerDone{UID: "b"}, t0)
		w = toWorker(cmds, "a")
		if w == nil || cpuOf(w) != 1600 {
			t.Fatalf("after b left, worker got %v (%v)", w, describe(cmds))
		}
		if c := pendingCondition(reported(cmds, "a")); c != nil {
			t.Errorf("pending condition still reported: %+v", c)
		}
	})
	t.Run("a resize beyond the node is infeasible", func(t *testing.T) {
		m := resizeMachine(t)
		cmds := m.Step(set(messages.SourceAPI, cpuPod("a", "3", 2), cpuPod("b", "500m", 1)), t0)
		c := pendingCondition(reported(cmds, "a"))
		if c == nil || c.Reason != v1.PodReasonInfeasible {
			t.Fatalf("pending condition %+v", c)
		}
		// Reverting the spec clears it.
		cmds = m.Step(set(messages.SourceAPI, cpuPod("a", "1", 3), cpuPod("b", "500m", 1)), t0)
		if s := reported(cmds, "a"); s == nil || pendingCondition(s) != nil {
			t.Errorf("reverted resize: status %+v", s)
		}
	})
	t.Run("after a restart a pod is admitted at its checkpointed allocation", func(t *testing.T) {
		m := NewMachine(Config{Sources: []string{messages.SourceAPI}, MaxPods: 3,
			Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")},
			Allocations: Allocations{"a": allocationOf(cpuPod("a", "1", 1))}})
		m.Step(EvStarted{First: true}, t0)
		// Resized to 3 cpus while actorlet was down: admitted at 1, the
		// resize infeasible.
		cmds := m.Step(set(messages.SourceAPI, cpuPod("a", "3", 2)), t0)
		if len(cmds) == 0 || m.Pod("a") == nil || m.Pod("a").Phase != Running {
			t.Fatalf("not admitted: %v", describe(cmds))
		}
		if r := m.pending["a"]; r == nil || r.Reason != v1.PodReasonInfeasible {
			t.Errorf("pending %+v", r)
		}
		cmds = m.Step(EvWorkerStarted{UID: "a"}, t0)
		if w := toWorker(cmds, "a"); w == nil || cpuOf(w) != 1000 {
			t.Errorf("worker got %v", w)
		}
	})
	t.Run("a forgotten pod's allocation goes", func(t *testing.T) {
		m := resizeMachine(t)
		m.Step(set(messages.SourceAPI, cpuPod("a", "1", 1)), t0)
		cmds := m.Step(EvWorkerDone{UID: "b"}, t0)
		if all := saved(cmds); all == nil || len(all) != 1 {
			t.Errorf("checkpoint %v", all)
		}
	})
}

// TestUpstreamAllocationsCheckpoint: the file upstream's kubelet v1.37.2
// wrote (testdata, from a DRA conformance run) is read with its checksum;
// what actorlet writes has upstream's shape and a checksum upstream's
// algorithm gives its data; an earlier actorlet's file is still read.
func TestUpstreamAllocationsCheckpoint(t *testing.T) {
	raw, err := os.ReadFile("testdata/upstream_allocated_pods_state")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, AllocatedPodsStateFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := LoadAllocations(dir)
	if err != nil || len(got) != 9 {
		t.Fatalf("upstream's checkpoint: %v, %v", got, err)
	}
	if a, ok := got["78d858ee-890c-4a4f-a1e5-7dd1349da3b0"]; !ok || len(a) != 1 {
		t.Errorf("upstream's pod: %v", a)
	}
	// Written back, the same data and checksum as upstream's.
	if err := SaveAllocations(dir, got); err != nil {
		t.Fatal(err)
	}
	var ours, theirs podruntime.Checkpoint
	mine, _ := os.ReadFile(filepath.Join(dir, AllocatedPodsStateFile))
	if json.Unmarshal(mine, &ours) != nil || json.Unmarshal(raw, &theirs) != nil {
		t.Fatalf("decode: %s", mine)
	}
	if ours.Checksum != podruntime.CheckpointChecksum(ours.Data) || theirs.Checksum != podruntime.CheckpointChecksum(theirs.Data) {
		t.Errorf("checksums: ours %d of %q, upstream's %d", ours.Checksum, ours.Data, theirs.Checksum)
	}
	// An earlier actorlet's file.
	legacy := `{"entries":{"a":{"c":{"requests":{"cpu":"1"}}}},"checksum":` + fmt.Sprint(crc32.ChecksumIEEE([]byte(`{"a":{"c":{"requests":{"cpu":"1"}}}}`))) + `}`
	if err := os.WriteFile(filepath.Join(dir, AllocatedPodsStateFile), []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := LoadAllocations(dir); err != nil || cpuAllocated(got["a"]) != 1000 {
		t.Errorf("an earlier actorlet's checkpoint: %v, %v", got, err)
	}
}

func TestAllocationsCheckpoint(t *testing.T) {
	dir := t.TempDir()
	if all, err := LoadAllocations(dir); err != nil || len(all) != 0 {
		t.Fatalf("no file: %v %v", all, err)
	}
	want := Allocations{"a": allocationOf(cpuPod("a", "1", 1))}
	if err := SaveAllocations(dir, want); err != nil {
		t.Fatal(err)
	}
	got, err := LoadAllocations(dir)
	if err != nil || !sameAllocation(got["a"], want["a"]) {
		t.Fatalf("got %v %v", got, err)
	}
}

func cpuAllocated(a PodAllocation) int64 {
	q := a["c"].Requests[v1.ResourceCPU]
	return q.MilliValue()
}

func event(cmds []Command, reason string) *CmdEvent {
	for _, c := range cmds {
		if e, ok := c.(CmdEvent); ok && e.Reason == reason {
			return &e
		}
	}
	return nil
}

func withPodLevel(p *v1.Pod, cpu string) *v1.Pod {
	p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}}
	return p
}
