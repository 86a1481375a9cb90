package memorymanager

import (
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/topologymanager"
)

const gi = 1 << 30

// twoNodes is a synthetic machine: two NUMA nodes of 10Gi, node 0 with
// 1Gi of 2Mi huge pages.
func twoNodes() []Node {
	return []Node{
		{ID: 0, Memory: 10 * gi, HugePages: []HugePages{{PageSizeKB: 2048, NumPages: 512}}},
		{ID: 1, Memory: 10 * gi},
	}
}

func staticConfig() Config {
	return Config{Policy: PolicyStatic, NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
		Reserved: []Reservation{{NUMANode: 0, Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}}
}

func newStatic(t *testing.T) *Manager {
	t.Helper()
	m, err := New(twoNodes(), staticConfig())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(nil, "state"); err != nil {
		t.Fatal(err)
	}
	return m
}

func container(name, mem string, extra ...string) v1.Container {
	rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse(mem)}
	for i := 0; i+1 < len(extra); i += 2 {
		rl[v1.ResourceName(extra[i])] = resource.MustParse(extra[i+1])
	}
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: rl, Limits: rl}}
}

func pod(uid string, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metaUID(uid), Spec: v1.PodSpec{Containers: cs}}
}

func TestNew(t *testing.T) {
	res := func(node int, kv ...string) Reservation {
		r := Reservation{NUMANode: node, Limits: v1.ResourceList{}}
		for i := 0; i+1 < len(kv); i += 2 {
			r.Limits[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return r
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		err  string
	}{
		{name: "none", cfg: Config{Policy: PolicyNone}},
		{name: "unknown", cfg: Config{Policy: "static"}, err: `unknown policy: "static"`},
		{name: "static", cfg: staticConfig()},
		{name: "split over nodes", cfg: Config{Policy: PolicyStatic, NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			Reserved: []Reservation{res(0, "memory", "512Mi"), res(1, "memory", "512Mi")}}},
		{name: "sum differs", cfg: Config{Policy: PolicyStatic, NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1100Mi")},
			Reserved: []Reservation{res(0, "memory", "1Gi")}},
			err: `the total amount "1Gi" of type "memory" is not equal to the value "1100Mi" determined by Node Allocatable feature`},
		{name: "huge pages reserved by node allocatable only", cfg: Config{Policy: PolicyStatic,
			NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("2Mi")},
			Reserved:        []Reservation{res(0, "memory", "1Gi")}},
			err: `the total amount "0" of type "hugepages-2Mi" is not equal to the value "2Mi" determined by Node Allocatable feature`},
		{name: "no such node", cfg: Config{Policy: PolicyStatic, NodeReservation: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")},
			Reserved: []Reservation{res(2, "memory", "1Gi")}},
			err: "the reserved memory configuration references a NUMA node 2 that does not exist on this machine"},
		{name: "nothing reserved", cfg: Config{Policy: PolicyStatic},
			err: "[memorymanager] you should specify the system reserved memory"},
	} {
		_, err := New(twoNodes(), tc.cfg)
		if got := errString(err); got != tc.err {
			t.Errorf("%s: err %q, want %q", tc.name, got, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestDefaultMachine(t *testing.T) {
	m := newStatic(t)
	ms := m.State().Machine
	want := NUMANodeMap{
		0: {MemoryMap: map[v1.ResourceName]*MemoryTable{
			v1.ResourceMemory: {TotalMemSize: 10 * gi, SystemReserved: gi, Allocatable: 8 * gi, Free: 8 * gi},
			"hugepages-2Mi":   {TotalMemSize: gi, Allocatable: gi, Free: gi}}, Cells: []int{0}},
		1: {MemoryMap: map[v1.ResourceName]*MemoryTable{
			v1.ResourceMemory: {TotalMemSize: 10 * gi, Allocatable: 10 * gi, Free: 10 * gi}}, Cells: []int{1}},
	}
	if !reflect.DeepEqual(ms, want) {
		t.Errorf("got %+v", ms)
	}
}

func TestHints(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want topologymanager.Hints
	}{
		{name: "burstable: no preference", pod: &v1.Pod{ObjectMeta: metaUID("b"), Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi")}}}}}}},
		{name: "fits one node", pod: pod("a", container("c", "2Gi")), want: topologymanager.Hints{"memory": {
			{NUMA: topologymanager.MaskOf(0), Preferred: true}, {NUMA: topologymanager.MaskOf(1), Preferred: true}, {NUMA: topologymanager.MaskOf(0, 1)}}}},
		{name: "only on node 1", pod: pod("a", container("c", "9Gi")), want: topologymanager.Hints{"memory": {
			{NUMA: topologymanager.MaskOf(1), Preferred: true}, {NUMA: topologymanager.MaskOf(0, 1)}}}},
		{name: "both nodes", pod: pod("a", container("c", "12Gi")), want: topologymanager.Hints{"memory": {
			{NUMA: topologymanager.MaskOf(0, 1), Preferred: true}}}},
		{name: "huge pages on node 0 only", pod: pod("a", container("c", "1Gi", "hugepages-2Mi", "512Mi")), want: topologymanager.Hints{
			"memory":        {{NUMA: topologymanager.MaskOf(0), Preferred: true}, {NUMA: topologymanager.MaskOf(0, 1)}},
			"hugepages-2Mi": {{NUMA: topologymanager.MaskOf(0), Preferred: true}, {NUMA: topologymanager.MaskOf(0, 1)}}}},
		{name: "too much: nowhere", pod: pod("a", container("c", "30Gi")), want: topologymanager.Hints{}},
	} {
		m := newStatic(t)
		got := m.ContainerHints(tc.pod, &tc.pod.Spec.Containers[0])
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAllocate(t *testing.T) {
	type step struct {
		pod      *v1.Pod
		affinity topologymanager.Hint
		err      string
		nodes    []int
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{name: "default hint: the narrowest, lowest", steps: []step{{pod: pod("a", container("c", "2Gi")), nodes: []int{0}}}},
		{name: "the topology manager's affinity", steps: []step{
			{pod: pod("a", container("c", "2Gi")), affinity: topologymanager.Hint{NUMA: topologymanager.MaskOf(1), Preferred: true}, nodes: []int{1}}}},
		{name: "extended when the affinity cannot hold it", steps: []step{
			{pod: pod("a", container("c", "9Gi")), affinity: topologymanager.Hint{NUMA: topologymanager.MaskOf(0)}, nodes: []int{0, 1}}}},
		{name: "a preferred affinity not extended to a preferred one", steps: []step{
			{pod: pod("a", container("c", "9Gi")), affinity: topologymanager.Hint{NUMA: topologymanager.MaskOf(0), Preferred: true},
				err: "[memorymanager] failed to find the extended preferred hint"}}},
		{name: "fills node 1, then node 0", steps: []step{
			{pod: pod("a", container("c", "9Gi")), nodes: []int{1}},
			{pod: pod("b", container("c", "7Gi")), nodes: []int{0}},
			{pod: pod("c", container("c", "2Gi")), err: "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"}}},
		{name: "a cross-node allocation keeps its nodes to itself", steps: []step{
			{pod: pod("a", container("c", "12Gi")), nodes: []int{0, 1}},
			{pod: pod("b", container("c", "1Gi")), nodes: []int{0, 1}},
			{pod: pod("c", container("c", "1Gi")), affinity: topologymanager.Hint{NUMA: topologymanager.MaskOf(0, 1)}, nodes: []int{0, 1}}}},
		{name: "a single-node allocation keeps others off its node's groups", steps: []step{
			{pod: pod("a", container("c", "1Gi")), nodes: []int{0}},
			{pod: pod("b", container("c", "12Gi")), err: "[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available"}}},
	} {
		m := newStatic(t)
		for i, s := range tc.steps {
			err := m.Allocate(s.pod, &s.pod.Spec.Containers[0], s.affinity)
			if got := errString(err); got != s.err {
				t.Errorf("%s, step %d: err %q, want %q", tc.name, i, got, s.err)
				continue
			}
			got := m.State().NUMANodes(string(s.pod.UID), "c")
			if !reflect.DeepEqual(got, s.nodes) {
				t.Errorf("%s, step %d: nodes %v, want %v", tc.name, i, got, s.nodes)
			}
		}
		// Each step's container pinned memory, or failed to: all counted.
		want := topologymanager.Pinning{Requests: len(tc.steps)}
		for _, s := range tc.steps {
			if s.err != "" {
				want.Errors++
			}
		}
		if got := m.Pinning(); got != want {
			t.Errorf("%s: pinning %+v, want %+v", tc.name, got, want)
		}
		// The state it made is valid at the next start.
		st := m.State()
		again, _ := New(twoNodes(), staticConfig())
		if err := again.Start(&st, "state"); err != nil {
			t.Errorf("%s: restart: %v", tc.name, err)
		}
		// Everything released: the default machine again.
		for _, uid := range m.Pods() {
			m.RemovePod(uid)
		}
		fresh := newStatic(t)
		if !m.State().Equal(fresh.State()) {
			t.Errorf("%s: after release %+v", tc.name, m.State().Machine)
		}
	}
}

func TestAllocateInitContainerReuse(t *testing.T) {
	m := newStatic(t)
	p := pod("a", container("app", "6Gi"))
	p.Spec.InitContainers = []v1.Container{container("init", "6Gi")}
	for _, c := range []*v1.Container{&p.Spec.InitContainers[0], &p.Spec.Containers[0]} {
		if err := m.Allocate(p, c, topologymanager.Hint{NUMA: topologymanager.MaskOf(0), Preferred: true}); err != nil {
			t.Fatal(err)
		}
	}
	// The app container reused the init container's memory: 6Gi taken.
	if got := m.State().Machine[0].MemoryMap[v1.ResourceMemory].Reserved; got != 6*gi {
		t.Errorf("reserved %d, want 6Gi", got)
	}
	if got := m.State().Entries["a"]["init"][0].Size; got != 0 {
		t.Errorf("init block %d, want 0 (reused)", got)
	}
}

func TestPodHints(t *testing.T) {
	m := newStatic(t)
	p := pod("a", container("a", "5Gi"), container("b", "5Gi"))
	got := m.PodHints(p)
	want := topologymanager.Hints{"memory": {{NUMA: topologymanager.MaskOf(1), Preferred: true}, {NUMA: topologymanager.MaskOf(0, 1)}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v", got)
	}
	// Held already: where it is.
	if err := m.Allocate(p, &p.Spec.Containers[0], topologymanager.Hint{NUMA: topologymanager.MaskOf(1), Preferred: true}); err != nil {
		t.Fatal(err)
	}
	// Held in part: no preference, as upstream's regenerateHints when a
	// block differs from the pod's request.
	if got = m.PodHints(p); got != nil {
		t.Errorf("held: got %v", got)
	}
}

func TestStartValidation(t *testing.T) {
	m := newStatic(t)
	p := pod("a", container("c", "2Gi"))
	if err := m.Allocate(p, &p.Spec.Containers[0], topologymanager.Hint{}); err != nil {
		t.Fatal(err)
	}
	good := m.State()
	for _, tc := range []struct {
		name   string
		policy string
		edit   func(*State)
		err    string
	}{
		{name: "as written", edit: func(*State) {}},
		{name: "other policy", policy: PolicyNone, edit: func(*State) {},
			err: `could not restore state from checkpoint: [memorymanager] configured policy "None" differs from state checkpoint policy "Static", please drain this node and delete the memory manager checkpoint file "state" before restarting Kubelet`},
		{name: "free memory tampered", edit: func(s *State) { s.Machine[0].MemoryMap[v1.ResourceMemory].Free++ },
			err: "start memory manager error: [memorymanager] the expected machine state is different from the real one"},
		{name: "assignments without machine state", edit: func(s *State) { s.Machine = NUMANodeMap{} },
			err: "start memory manager error: [memorymanager] machine state can not be empty when it has memory assignments"},
		{name: "unknown node", edit: func(s *State) { s.Entries["a"]["c"][0].NUMAAffinity = []int{3} },
			err: "start memory manager error: [memorymanager] (pod: a, container: c) the memory assignment uses the NUMA that does not exist"},
		{name: "unknown resource", edit: func(s *State) { s.Entries["a"]["c"][0].Type = "hugepages-1Gi" },
			err: "start memory manager error: [memorymanager] (pod: a, container: c) the memory assignment uses memory resource that does not exist"},
	} {
		st := good.Clone()
		tc.edit(&st)
		cfg := staticConfig()
		if tc.policy != "" {
			cfg = Config{Policy: tc.policy}
		}
		again, err := New(twoNodes(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if got := errString(again.Start(&st, "state")); got != tc.err {
			t.Errorf("%s: err %q, want %q", tc.name, got, tc.err)
		}
	}
}

func TestView(t *testing.T) {
	var v *View
	if v.CPUSetMems("a", "c") != "" {
		t.Error("nil view")
	}
	v = &View{}
	if v.CPUSetMems("a", "c") != "" {
		t.Error("nothing published")
	}
	m := newStatic(t)
	p := pod("a", container("c", "12Gi"))
	if err := m.Allocate(p, &p.Spec.Containers[0], topologymanager.Hint{}); err != nil {
		t.Fatal(err)
	}
	v.Set(m.State())
	if got := v.CPUSetMems("a", "c"); got != "0,1" {
		t.Errorf("got %q", got)
	}
	if got := v.CPUSetMems("a", "other"); got != "" {
		t.Errorf("other container: %q", got)
	}
	huge := pod("x", container("c", "100Gi"))
	if err := m.Allocate(huge, &huge.Spec.Containers[0], topologymanager.Hint{}); !strings.Contains(errString(err), "failed to get the default NUMA affinity") {
		t.Errorf("an impossible request: %v", err)
	}
}

func metaUID(uid string) metav1.ObjectMeta {
	return metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"}
}
