package dramanager

import (
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/internal/dra"
)

var now = time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)

func podWithClaim(uid types.UID) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid},
		Spec: v1.PodSpec{
			ResourceClaims: []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To("claim")}},
			Containers: []v1.Container{
				{Name: "uses", Resources: v1.ResourceRequirements{Claims: []v1.ResourceClaim{{Name: "gpu"}}}},
				{Name: "not"},
			},
		}}
}

func info() dra.ClaimInfoState {
	return dra.ClaimInfoState{ClaimUID: "cu", ClaimName: "claim", Namespace: "ns",
		DriverState: map[string]dra.DriverState{"d.example.com": {}}}
}

// skipping is a claim of two drivers, one of which skips both node calls.
func skipping() dra.ClaimInfoState {
	c := info()
	c.DriverState["skip.example.com"] = dra.DriverState{SkipNodeOperations: []resourceapi.SkipNodeOperation{
		resourceapi.SkipNodeOperationNodePrepareResources, resourceapi.SkipNodeOperationNodeUnprepareResources}}
	return c
}

var prepared = map[types.UID]map[string][]dra.Device{"cu": {"d.example.com": {{PoolName: "p", DeviceName: "dev", CDIDeviceIDs: []string{"example.com/gpu=dev"}}}}}

// step is one event and the kinds of commands it must give, with a check
// of them.
type step struct {
	ev    Event
	want  []string
	check func(t *testing.T, cmds []Command)
}

func run(t *testing.T, m *Machine, steps []step) {
	t.Helper()
	for i, s := range steps {
		cmds := m.Step(s.ev, now)
		var kinds []string
		for _, c := range cmds {
			kinds = append(kinds, reflect.TypeOf(c).Name())
		}
		if !reflect.DeepEqual(kinds, s.want) {
			t.Fatalf("step %d (%T): commands %v (%+v), want %v", i, s.ev, kinds, cmds, s.want)
		}
		if s.check != nil {
			s.check(t, cmds)
		}
	}
}

func TestMachine(t *testing.T) {
	p1, p2 := podWithClaim("p1"), podWithClaim("p2")
	batch := func(t *testing.T, cmds []Command, want int) {
		t.Helper()
		c := cmds[0].(CmdCall)
		if n := len(c.Batches["d.example.com"]); n != want {
			t.Errorf("batch of %d claims, want %d: %+v", n, want, c.Batches)
		}
	}
	for _, tc := range []struct {
		name   string
		loaded []dra.ClaimInfoState
		steps  []step
		// claims is the cache's pods of "ns/claim" at the end; nil: no entry.
		pods []string
	}{
		{
			name: "prepare, share, unprepare",
			steps: []step{
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				// A second pod waits for the first's operation.
				{ev: EvPrepare{Pod: p2}, want: nil},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdCall"}, check: func(t *testing.T, cmds []Command) {
					batch(t, cmds, 1)
					c := cmds[0].(CmdCall)
					if !c.Prepare || len(c.State) != 1 || len(c.State[0].PodUIDs) != 1 {
						t.Errorf("the claim and its pod are checkpointed before the driver is called: %+v", c)
					}
				}},
				{ev: EvCalled{UID: "p1", Devices: prepared}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "p1"}, want: []string{"CmdPrepared", "CmdValidate"}, check: func(t *testing.T, cmds []Command) {
					want := map[string][]string{"uses": {"example.com/gpu=dev"}}
					if got := cmds[0].(CmdPrepared).Devices; !reflect.DeepEqual(got, want) {
						t.Errorf("devices %v, want %v", got, want)
					}
				}},
				// Prepared already: no driver is called for the second pod.
				{ev: EvValidated{UID: "p2", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdCall"}, check: func(t *testing.T, cmds []Command) { batch(t, cmds, 0) }},
				{ev: EvCalled{UID: "p2"}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "p2"}, want: []string{"CmdPrepared"}},
				// Another pod uses the claim: only the reference goes.
				{ev: EvUnprepare{Pod: p1}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "p1"}, want: []string{"CmdUnprepared"}},
				{ev: EvUnprepare{Pod: p2}, want: []string{"CmdCall"}, check: func(t *testing.T, cmds []Command) {
					batch(t, cmds, 1)
					if cmds[0].(CmdCall).Prepare {
						t.Error("an unprepare calls NodePrepareResources")
					}
				}},
				{ev: EvCalled{UID: "p2"}, want: []string{"CmdSave"}, check: func(t *testing.T, cmds []Command) {
					if s := cmds[0].(CmdSave).State; len(s) != 0 {
						t.Errorf("the unprepared claim stays checkpointed: %+v", s)
					}
				}},
				{ev: EvSaved{UID: "p2"}, want: []string{"CmdUnprepared"}},
			},
		},
		{
			name: "a failed validation is retried and changes nothing",
			steps: []step{
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Err: errors.New("DRA driver d.example.com is not registered")}, want: []string{"CmdPrepareFailed"}, check: func(t *testing.T, cmds []Command) {
					if c := cmds[0].(CmdPrepareFailed); c.After != time.Second || c.Pod != p1 {
						t.Errorf("%+v", c)
					}
				}},
				{ev: EvRetry{UID: "p1"}, want: []string{"CmdValidate"}},
				// Deleted meanwhile: nothing was prepared, nothing to undo.
				{ev: EvUnprepare{Pod: p1}, want: nil},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdUnprepared"}},
			},
		},
		{
			name: "a failed driver call keeps the pod referenced, so that a reconcile unprepares it",
			steps: []step{
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdCall"}},
				{ev: EvCalled{UID: "p1", Err: errors.New("NodePrepareResources: unavailable")}, want: []string{"CmdPrepareFailed"}},
			},
			pods: []string{"p1"},
		},
		{
			name:   "after a restart, the claims of a pod gone are unprepared",
			loaded: []dra.ClaimInfoState{{ClaimUID: "cu", ClaimName: "claim", Namespace: "ns", PodUIDs: map[string]struct{}{"gone": {}}, DriverState: map[string]dra.DriverState{"d.example.com": {}}}},
			steps: []step{
				{ev: EvActive{UIDs: []types.UID{"other"}}, want: []string{"CmdCall"}, check: func(t *testing.T, cmds []Command) {
					want := []*drapb.Claim{{Namespace: "ns", Uid: "cu", Name: "claim"}}
					if got := cmds[0].(CmdCall).Batches["d.example.com"]; !reflect.DeepEqual(got, want) {
						t.Errorf("batch %v, want %v", got, want)
					}
				}},
				{ev: EvCalled{UID: "gone", Err: errors.New("NodeUnprepareResources: unavailable")}, want: []string{"CmdUnprepareFailed"}},
				{ev: EvRetry{UID: "gone"}, want: []string{"CmdCall"}},
				{ev: EvCalled{UID: "gone"}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "gone"}, want: []string{"CmdUnprepared"}},
			},
		},
		{
			name:   "a restarted worker of a prepared pod gets its devices without a driver call",
			loaded: []dra.ClaimInfoState{{ClaimUID: "cu", ClaimName: "claim", Namespace: "ns", PodUIDs: map[string]struct{}{"p1": {}}, DriverState: map[string]dra.DriverState{"d.example.com": {Devices: prepared["cu"]["d.example.com"]}}}},
			steps: []step{
				{ev: EvActive{UIDs: []types.UID{"p1"}}, want: nil},
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdCall"}, check: func(t *testing.T, cmds []Command) { batch(t, cmds, 0) }},
				{ev: EvCalled{UID: "p1"}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "p1"}, want: []string{"CmdPrepared"}, check: func(t *testing.T, cmds []Command) {
					if got := cmds[0].(CmdPrepared).Devices["uses"]; !reflect.DeepEqual(got, []string{"example.com/gpu=dev"}) {
						t.Errorf("devices %v", got)
					}
				}},
			},
			pods: []string{"p1"},
		},
		{
			name: "a claim of the same name and another UID refuses the pod",
			loaded: []dra.ClaimInfoState{{ClaimUID: "old", ClaimName: "claim", Namespace: "ns", PodUIDs: map[string]struct{}{"p0": {}},
				DriverState: map[string]dra.DriverState{"d.example.com": {}}}},
			steps: []step{
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdPrepareFailed"}, check: func(t *testing.T, cmds []Command) {
					const want = "old ResourceClaim with same name claim and different UID old still exists (previous pod force-deleted?!)"
					if err := cmds[0].(CmdPrepareFailed).Err; err.Error() != want {
						t.Errorf("error %q, want %q", err, want)
					}
				}},
			},
			pods: []string{"p0"},
		},
		{
			name: "a driver whose allocation skips the node's calls is counted, not called",
			steps: []step{
				{ev: EvPrepare{Pod: p1}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{skipping()}}, want: []string{"CmdSkipped", "CmdCall"}, check: func(t *testing.T, cmds []Command) {
					if c := cmds[0].(CmdSkipped); !c.Prepare || !reflect.DeepEqual(c.Drivers, []string{"skip.example.com"}) {
						t.Errorf("%+v", c)
					}
					if b := cmds[1].(CmdCall).Batches; len(b) != 1 || len(b["d.example.com"]) != 1 {
						t.Errorf("batches %+v, want the other driver's only", b)
					}
				}},
				{ev: EvCalled{UID: "p1", Devices: prepared}, want: []string{"CmdSave"}},
				{ev: EvSaved{UID: "p1"}, want: []string{"CmdPrepared"}},
				{ev: EvUnprepare{Pod: p1}, want: []string{"CmdSkipped", "CmdCall"}, check: func(t *testing.T, cmds []Command) {
					if c := cmds[0].(CmdSkipped); c.Prepare || !reflect.DeepEqual(c.Drivers, []string{"skip.example.com"}) {
						t.Errorf("%+v", c)
					}
				}},
			},
			pods: []string{"p1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.loaded)
			run(t, m, tc.steps)
			var pods []string
			if c := m.claims["ns/claim"]; c != nil {
				for uid := range c.PodUIDs {
					pods = append(pods, uid)
				}
			}
			if !reflect.DeepEqual(pods, tc.pods) {
				t.Errorf("the claim's pods at the end: %v, want %v", pods, tc.pods)
			}
		})
	}
}

func TestInUse(t *testing.T) {
	for _, tc := range []struct {
		name     string
		loaded   []dra.ClaimInfoState
		steps    []step
		total    int
		byDriver map[string]int
	}{
		{name: "nothing", byDriver: map[string]int{}},
		{
			name: "a claim of two drivers counts once in all and once for each",
			steps: []step{
				{ev: EvPrepare{Pod: podWithClaim("p1")}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{skipping()}}, want: []string{"CmdSkipped", "CmdCall"}},
				{ev: EvCalled{UID: "p1", Devices: prepared}, want: []string{"CmdSave"}},
			},
			total: 1, byDriver: map[string]int{"d.example.com": 1, "skip.example.com": 1},
		},
		{
			name: "a claim whose driver call failed is not in use",
			steps: []step{
				{ev: EvPrepare{Pod: podWithClaim("p1")}, want: []string{"CmdValidate"}},
				{ev: EvValidated{UID: "p1", Claims: []dra.ClaimInfoState{info()}}, want: []string{"CmdCall"}},
				{ev: EvCalled{UID: "p1", Err: errors.New("unavailable")}, want: []string{"CmdPrepareFailed"}},
			},
			byDriver: map[string]int{},
		},
		{
			name:   "the checkpoint's claims are in use",
			loaded: []dra.ClaimInfoState{info(), {ClaimUID: "c2", ClaimName: "other", Namespace: "ns", DriverState: map[string]dra.DriverState{"d.example.com": {}}}},
			total:  2, byDriver: map[string]int{"d.example.com": 2},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.loaded)
			run(t, m, tc.steps)
			total, byDriver := m.InUse()
			if total != tc.total || !reflect.DeepEqual(byDriver, tc.byDriver) {
				t.Errorf("in use: %d, %v; want %d, %v", total, byDriver, tc.total, tc.byDriver)
			}
		})
	}
}
