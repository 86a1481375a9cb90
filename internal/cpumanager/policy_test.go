package cpumanager

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/internal/topologymanager"
)

func container(name, cpu, mem string) v1.Container {
	c := v1.Container{Name: name}
	if cpu != "" {
		rl := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
		c.Resources = v1.ResourceRequirements{Requests: rl, Limits: rl}
	}
	return c
}

func pod(uid string, init []v1.Container, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Name: uid, Namespace: "default"},
		Spec: v1.PodSpec{InitContainers: init, Containers: cs}}
}

func static(t *testing.T, topo *Topology, reserved string, opts map[string]string) *Manager {
	t.Helper()
	r := mustParse(reserved)
	m, err := New(topo, Config{Policy: PolicyStatic, Options: opts, Reserved: r, ReservedCPU: *resource.NewQuantity(int64(r.Size()), resource.DecimalSI)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(nil, StateFile); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestSyntheticTopology(t *testing.T) {
	topo := Synthetic(2, 4, 2, 1)
	if got := topo.All().String(); got != "0-15" {
		t.Fatalf("CPUs %s", got)
	}
	for _, tc := range []struct{ got, want string }{
		{topo.CPUsOfCore(1).String(), "1,9"},
		{topo.CPUsOfSocket(1).String(), "4-7,12-15"},
		{topo.CPUsOfNUMA(0).String(), "0-3,8-11"},
		{Synthetic(2, 4, 2, 2).CPUsOfNUMA(1).String(), "2-3,10-11"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
	if topo.CPUsPerCore() != 2 {
		t.Errorf("CPUsPerCore %d", topo.CPUsPerCore())
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	write := func(path, content string) {
		p := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 1 socket, 2 cores of 2 threads, CPUs 0,2 and 1,3 siblings; 2 NUMA nodes.
	write("devices/system/cpu/online", "0-3")
	for id, sib := range map[int]string{0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"} {
		write("devices/system/cpu/cpu"+string(rune('0'+id))+"/topology/physical_package_id", "0")
		write("devices/system/cpu/cpu"+string(rune('0'+id))+"/topology/thread_siblings_list", sib)
	}
	write("devices/system/node/node0/cpulist", "0,2")
	write("devices/system/node/node1/cpulist", "1,3")
	topo, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []CPUInfo{{0, 0, 0, 0}, {1, 1, 0, 1}, {2, 0, 0, 0}, {3, 1, 0, 1}}
	for i, c := range topo.CPUs {
		if c != want[i] {
			t.Errorf("CPU %d: %+v, want %+v", i, c, want[i])
		}
	}
	if _, err := Discover(t.TempDir()); err == nil {
		t.Error("no sysfs: no error")
	}
	// This machine's own, as the agent reads it.
	if _, err := Discover("/sys"); err != nil {
		t.Errorf("this machine: %v", err)
	}
}

func TestTakeByTopology(t *testing.T) {
	dual := Synthetic(2, 4, 2, 1) // 0-3,8-11 socket 0; 4-7,12-15 socket 1
	for _, tc := range []struct {
		name       string
		topo       *Topology
		available  string
		n          int
		want, fail string
	}{
		{"a whole socket", dual, "0-15", 8, "0-3,8-11", ""},
		{"a socket and a core", dual, "0-15", 10, "0-4,8-12", ""},
		{"a whole core", dual, "0-15", 2, "0,8", ""},
		{"the sibling of a partly used core", dual, "1-15", 1, "8", ""},
		{"a partly used core's sibling first", dual, "1-7,9-15", 1, "1", ""},
		{"the lowest of two half-taken cores", dual, "2-15", 1, "8", ""},
		{"packs on the socket with fewer free CPUs", dual, "2-7,10-15", 2, "2,10", ""},
		{"cores before threads", dual, "0-15", 3, "0-1,8", ""},
		{"too many", dual, "0-3", 5, "", "not enough cpus available to satisfy request: requested=5, available=4"},
		{"none", dual, "0-15", 0, "", ""},
		{"this machine", Synthetic(1, 2, 1, 1), "1", 1, "1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := takeByTopology(tc.topo, mustParse(tc.available), tc.n)
			if tc.fail != "" {
				if err == nil || err.Error() != tc.fail {
					t.Fatalf("error %v, want %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.String() != tc.want {
				t.Fatalf("took %s, want %s", got, tc.want)
			}
		})
	}
}

func TestNew(t *testing.T) {
	topo := Synthetic(1, 2, 2, 1)
	one := *resource.NewQuantity(1, resource.DecimalSI)
	for _, tc := range []struct {
		name     string
		cfg      Config
		reserved string
		fail     string
	}{
		{"none", Config{Policy: PolicyNone}, "", ""},
		{"static, reserved by count", Config{Policy: PolicyStatic, ReservedCPU: resource.MustParse("1500m")}, "0,2", ""},
		{"static, reserved CPUs", Config{Policy: PolicyStatic, Reserved: cpuset.New(3), ReservedCPU: one}, "3", ""},
		{"static without reservation", Config{Policy: PolicyStatic}, "", "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"},
		{"full-pcpus-only", Config{Policy: PolicyStatic, ReservedCPU: one, Options: map[string]string{"full-pcpus-only": "true"}}, "0", ""},
		{"an option not implemented", Config{Policy: PolicyStatic, ReservedCPU: one, Options: map[string]string{"align-by-socket": "true"}}, "", `"align-by-socket" is not implemented`},
		{"an unknown option", Config{Policy: PolicyStatic, ReservedCPU: one, Options: map[string]string{"x": "true"}}, "", `unknown CPU Manager Policy option: "x"`},
		{"a bad value", Config{Policy: PolicyStatic, ReservedCPU: one, Options: map[string]string{"full-pcpus-only": "yes"}}, "", `bad value for option "full-pcpus-only"`},
		{"options with none", Config{Policy: PolicyNone, Options: map[string]string{"full-pcpus-only": "true"}}, "", "None policy: received unsupported options"},
		{"an unknown policy", Config{Policy: "dynamic"}, "", `unknown policy: "dynamic"`},
		{"reserved CPUs offline", Config{Policy: PolicyStatic, Reserved: cpuset.New(9), ReservedCPU: one}, "", "are not all online"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(topo, tc.cfg)
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("error %v, want %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.Reserved().String() != tc.reserved {
				t.Fatalf("reserved %s, want %s", m.Reserved(), tc.reserved)
			}
		})
	}
}

func TestStartValidatesState(t *testing.T) {
	topo := Synthetic(1, 2, 1, 1) // CPUs 0-1, as this machine
	entries := func(cs string) map[string]map[string]cpuset.CPUSet {
		return map[string]map[string]cpuset.CPUSet{"pod": {"c": mustParse(cs)}}
	}
	for _, tc := range []struct {
		name string
		st   *State
		fail string
	}{
		{"no file", nil, ""},
		{"a valid state", &State{Policy: PolicyStatic, Default: cpuset.New(0), Entries: entries("1")}, ""},
		{"another policy", &State{Policy: PolicyNone}, `configured policy "static" differs from state checkpoint policy "none", please drain this node and delete the CPU manager checkpoint file`},
		{"reserved CPU assigned", &State{Policy: PolicyStatic, Default: cpuset.New(1), Entries: entries("0")}, `not all reserved cpus: "0" are present in defaultCpuSet: "1"`},
		{"overlap", &State{Policy: PolicyStatic, Default: cpuset.New(0, 1), Entries: entries("1")}, `pod: pod, container: c cpuset: "1" overlaps with default cpuset "0-1"`},
		{"a CPU gone", &State{Policy: PolicyStatic, Default: cpuset.New(0), Entries: entries("1-2")}, `current set of available CPUs "0-1" doesn't match with CPUs in state "0-2"`},
		{"empty default with entries", &State{Policy: PolicyStatic, Entries: entries("1")}, "default cpuset cannot be empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := New(topo, Config{Policy: PolicyStatic, Reserved: cpuset.New(0), ReservedCPU: resource.MustParse("1")})
			if err != nil {
				t.Fatal(err)
			}
			err = m.Start(tc.st, "/var/lib/kubelet/cpu_manager_state")
			if tc.fail != "" {
				if err == nil || !strings.Contains(err.Error(), tc.fail) {
					t.Fatalf("error %v, want %q", err, tc.fail)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// admit runs the topology manager's admission with the manager as its
// one provider.
func admit(m *Manager, policy, scope string, p *v1.Pod) *topologymanager.Rejection {
	cfg := topologymanager.Config{Policy: policy, Scope: scope, NUMANodes: m.topo.NUMANodes()}
	return topologymanager.Admit(cfg, []topologymanager.HintProvider{m}, p)
}

func TestAllocateAndRelease(t *testing.T) {
	type step struct {
		pod *v1.Pod
		// release: the pod's CPUs go back instead.
		release bool
		// want: each container's cpuset afterwards, and the shared pool.
		want    map[string]string
		shared  string
		reason  string
		message string
	}
	sidecar := container("sidecar", "2", "1Gi")
	always := v1.ContainerRestartPolicyAlways
	sidecar.RestartPolicy = &always
	for _, tc := range []struct {
		name          string
		topo          *Topology
		reserved      string
		opts          map[string]string
		policy, scope string
		steps         []step
	}{
		{name: "this machine: CPU 1 exclusive, released", topo: Synthetic(1, 2, 1, 1), reserved: "0", policy: "none", scope: "container", steps: []step{
			{pod: pod("g", nil, container("c", "1", "100Mi")), want: map[string]string{"c": "1"}, shared: "0"},
			{pod: pod("be", nil, container("c", "", "")), want: map[string]string{"c": "0"}, shared: "0"},
			{pod: pod("g2", nil, container("c", "1", "100Mi")), shared: "0", reason: "UnexpectedAdmissionError",
				message: "Allocate failed due to not enough cpus available to satisfy request: requested=1, available=0, which is unexpected"},
			{pod: pod("g", nil), release: true, shared: "0-1"},
			{pod: pod("g2", nil, container("c", "1", "100Mi")), want: map[string]string{"c": "1"}, shared: "0"},
		}},
		{name: "burstable and fractional CPUs share", topo: Synthetic(1, 2, 1, 1), reserved: "0", policy: "none", scope: "container", steps: []step{
			{pod: pod("frac", nil, container("c", "500m", "100Mi")), want: map[string]string{"c": "0-1"}, shared: "0-1"},
		}},
		{name: "whole cores, init CPUs reused", topo: Synthetic(2, 4, 2, 1), reserved: "0", policy: "best-effort", scope: "container", steps: []step{
			{pod: pod("p", []v1.Container{container("init", "4", "1Gi")}, container("a", "2", "1Gi"), container("b", "2", "1Gi")),
				want: map[string]string{"init": "1-2,9-10", "a": "1,9", "b": "2,10"}, shared: "0,3-8,11-15"},
			{pod: pod("p", nil), release: true, shared: "0-15"},
		}},
		{name: "a sidecar's CPUs are not reused", topo: Synthetic(2, 4, 2, 1), reserved: "0", policy: "none", scope: "container", steps: []step{
			{pod: pod("p", []v1.Container{sidecar}, container("a", "2", "1Gi")), want: map[string]string{"sidecar": "1,9", "a": "2,10"}, shared: "0,3-8,11-15"},
		}},
		{name: "full-pcpus-only", topo: Synthetic(2, 4, 2, 1), reserved: "0", opts: map[string]string{"full-pcpus-only": "true"}, policy: "none", scope: "container", steps: []step{
			{pod: pod("odd", nil, container("c", "3", "1Gi")), shared: "0-15", reason: "SMTAlignmentError",
				message: "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"},
			{pod: pod("big", nil, container("c", "16", "1Gi")), shared: "0-15", reason: "SMTAlignmentError",
				message: "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 14, requested CPUs = 16, CPUs per core = 2"},
			{pod: pod("ok", nil, container("c", "2", "1Gi")), want: map[string]string{"c": "1,9"}, shared: "0,2-8,10-15"},
		}},
		{name: "single-numa-node: fits one node, or refused", topo: Synthetic(2, 4, 1, 1), reserved: "0", policy: "single-numa-node", scope: "container", steps: []step{
			{pod: pod("a", nil, container("c", "2", "1Gi")), want: map[string]string{"c": "1-2"}, shared: "0,3-7"},
			{pod: pod("b", nil, container("c", "3", "1Gi")), want: map[string]string{"c": "4-6"}, shared: "0,3,7"},
			// CPUs 3 and 7 are free, on two nodes.
			{pod: pod("c", nil, container("c", "2", "1Gi")), shared: "0,3,7", reason: "TopologyAffinityError", message: "Resources cannot be allocated with Topology locality"},
		}},
		{name: "restricted: spanning nodes when it must be is refused", topo: Synthetic(2, 2, 1, 1), reserved: "0", policy: "restricted", scope: "container", steps: []step{
			{pod: pod("a", nil, container("c", "2", "1Gi")), want: map[string]string{"c": "2-3"}, shared: "0-1"},
			{pod: pod("b", nil, container("c", "1", "1Gi")), want: map[string]string{"c": "1"}, shared: "0"},
		}},
		{name: "best-effort admits across nodes", topo: Synthetic(2, 2, 1, 1), reserved: "0", policy: "best-effort", scope: "container", steps: []step{
			{pod: pod("a", nil, container("c", "3", "1Gi")), want: map[string]string{"c": "1-3"}, shared: "0"},
		}},
		{name: "pod scope: the whole pod on one node", topo: Synthetic(2, 4, 1, 1), reserved: "0", policy: "single-numa-node", scope: "pod", steps: []step{
			{pod: pod("p", nil, container("a", "2", "1Gi"), container("b", "2", "1Gi")), want: map[string]string{"a": "4-5", "b": "6-7"}, shared: "0-3"},
			{pod: pod("q", nil, container("a", "2", "1Gi"), container("b", "2", "1Gi")), shared: "0-3", reason: "TopologyAffinityError", message: "Resources cannot be allocated with Topology locality"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := static(t, tc.topo, tc.reserved, tc.opts)
			for i, s := range tc.steps {
				if s.release {
					m.RemovePod(string(s.pod.UID))
				} else {
					r := admit(m, tc.policy, tc.scope, s.pod)
					if r != nil {
						m.RemovePod(string(s.pod.UID))
					}
					if (r == nil) != (s.reason == "") || (r != nil && (r.Reason != s.reason || r.Message != s.message)) {
						t.Fatalf("step %d: rejection %+v, want %q %q", i, r, s.reason, s.message)
					}
				}
				st := m.State()
				for c, want := range s.want {
					if got := st.CPUSet(string(s.pod.UID), c).String(); got != want {
						t.Errorf("step %d: container %s on %s, want %s", i, c, got, want)
					}
				}
				if got := st.Default.String(); got != s.shared {
					t.Errorf("step %d: shared pool %s, want %s", i, got, s.shared)
				}
			}
		})
	}
}

// A restart keeps each container's CPUs: the state file's assignment is
// found again at admission.
func TestRestartKeepsAssignments(t *testing.T) {
	topo := Synthetic(2, 4, 2, 1)
	m := static(t, topo, "0", nil)
	p := pod("p", nil, container("c", "2", "1Gi"))
	if r := admit(m, "none", "container", p); r != nil {
		t.Fatal(r)
	}
	dir := t.TempDir()
	if err := Save(dir, m.State()); err != nil {
		t.Fatal(err)
	}
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := New(topo, Config{Policy: PolicyStatic, Reserved: cpuset.New(0), ReservedCPU: resource.MustParse("1")})
	if err := again.Start(st, ""); err != nil {
		t.Fatal(err)
	}
	if r := admit(again, "best-effort", "container", p); r != nil {
		t.Fatal(r)
	}
	if !again.State().Equal(m.State()) {
		t.Fatalf("after a restart %+v, want %+v", again.State(), m.State())
	}
}

func TestSMTAlignmentErrorReason(t *testing.T) {
	var r interface{ Reason() string }
	if !errors.As(error(SMTAlignmentError{}), &r) || r.Reason() != "SMTAlignmentError" {
		t.Fatal("SMTAlignmentError names no reason")
	}
}

func TestView(t *testing.T) {
	var nilView *View
	if nilView.CPUSet("p", "c") != "" {
		t.Error("a nil view gives a cpuset")
	}
	v := &View{}
	if v.CPUSet("p", "c") != "" {
		t.Error("an empty view gives a cpuset")
	}
	v.Set(State{Policy: PolicyNone, Default: cpuset.New(0, 1)})
	if v.CPUSet("p", "c") != "" {
		t.Error("the none policy gives a cpuset")
	}
	st := State{Policy: PolicyStatic, Default: cpuset.New(0), Entries: map[string]map[string]cpuset.CPUSet{"p": {"c": cpuset.New(1)}}}
	v.Set(st)
	st.Entries["p"]["c"] = cpuset.New(0) // the view keeps its own copy
	if v.CPUSet("p", "c") != "1" || v.CPUSet("p", "other") != "0" {
		t.Errorf("view: %q %q", v.CPUSet("p", "c"), v.CPUSet("p", "other"))
	}
}

func mustParse(s string) cpuset.CPUSet {
	c, err := cpuset.Parse(s)
	if err != nil {
		panic(err)
	}
	return c
}

// Pinning counts as upstream's static policy: each container that takes
// exclusive CPUs, and those that could not have them; ExclusiveCPUs gives
// the gauges' figures.
func TestPinningAndExclusiveCPUs(t *testing.T) {
	m := static(t, Synthetic(1, 4, 1, 1), "0", nil)
	steps := []struct {
		pod               *v1.Pod
		err               bool
		want              topologymanager.Pinning
		exclusive, shared int
	}{
		{pod: pod("be", nil, container("c", "", "")), want: topologymanager.Pinning{}, exclusive: 0, shared: 3},
		{pod: pod("g", nil, container("a", "1", "100Mi"), container("b", "2", "100Mi")), want: topologymanager.Pinning{Requests: 2}, exclusive: 3, shared: 0},
		{pod: pod("g", nil, container("a", "1", "100Mi")), want: topologymanager.Pinning{Requests: 3}, exclusive: 3, shared: 0},
		{pod: pod("g2", nil, container("c", "1", "100Mi")), err: true, want: topologymanager.Pinning{Requests: 4, Errors: 1}, exclusive: 3, shared: 0},
	}
	for i, s := range steps {
		var err error
		for j := range s.pod.Spec.Containers {
			if e := m.Allocate(s.pod, &s.pod.Spec.Containers[j], topologymanager.Hint{}); e != nil {
				err = e
			}
		}
		if (err != nil) != s.err {
			t.Fatalf("step %d: error %v, want one: %t", i, err, s.err)
		}
		if got := m.Pinning(); got != s.want {
			t.Errorf("step %d: pinning %+v, want %+v", i, got, s.want)
		}
		if ex, sh := m.ExclusiveCPUs(m.State()); ex != s.exclusive || sh != s.shared {
			t.Errorf("step %d: %d exclusive, %d shared, want %d, %d", i, ex, sh, s.exclusive, s.shared)
		}
	}
}
