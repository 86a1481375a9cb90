package evictionpolicy

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

// mem is an observation of memory.available: avail of 10Gi, at.
func mem(avail string, at time.Time) Observations {
	a := resource.MustParse(avail)
	return Observations{SignalMemoryAvailable: {Available: a, Capacity: resource.MustParse("10Gi"), Time: at}}
}

func TestObserve(t *testing.T) {
	at := metav1.NewTime(t0)
	s := &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{Time: at, AvailableBytes: u64(3 << 30), WorkingSetBytes: u64(1 << 30)},
		SystemContainers: []statsapi.ContainerStats{{Name: statsapi.SystemContainerPods,
			Memory: &statsapi.MemoryStats{Time: at, AvailableBytes: u64(2 << 30), WorkingSetBytes: u64(1 << 30)}}},
		Fs: &statsapi.FsStats{Time: at, AvailableBytes: u64(10), CapacityBytes: u64(100), InodesFree: u64(5), Inodes: u64(50)},
		Runtime: &statsapi.RuntimeStats{ImageFs: &statsapi.FsStats{Time: at, AvailableBytes: u64(20), CapacityBytes: u64(200)},
			ContainerFs: &statsapi.FsStats{Time: at, AvailableBytes: u64(20), CapacityBytes: u64(200)}},
		Rlimit: &statsapi.RlimitStats{Time: at, MaxPID: i64(32768), NumOfRunningProcesses: i64(100)},
	}}
	obs := Observe(s)
	want := map[Signal][2]int64{
		SignalMemoryAvailable:            {3 << 30, 4 << 30},
		SignalAllocatableMemoryAvailable: {2 << 30, 3 << 30},
		SignalNodeFsAvailable:            {10, 100},
		SignalNodeFsInodesFree:           {5, 50},
		SignalImageFsAvailable:           {20, 200},
		SignalContainerFsAvailable:       {20, 200},
		SignalPIDAvailable:               {32668, 32768},
	}
	if len(obs) != len(want) {
		t.Errorf("observed %d signals, want %d: %v", len(obs), len(want), obs)
	}
	for s, w := range want {
		o, ok := obs[s]
		if !ok || o.Available.Value() != w[0] || o.Capacity.Value() != w[1] || !o.Time.Equal(t0) {
			t.Errorf("%s = %+v, want available %d of %d", s, o, w[0], w[1])
		}
	}
	if len(Observe(&statsapi.Summary{})) != 0 || len(Observe(nil)) != 0 {
		t.Error("an empty summary gave observations")
	}
}

func TestManagerStep(t *testing.T) {
	hard := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("1Gi")}}
	soft := Threshold{Signal: SignalMemoryAvailable, Value: Value{Quantity: q("2Gi")}, GracePeriod: time.Minute}
	reclaim := hard
	reclaim.MinReclaim = &Value{Quantity: q("500Mi")}
	disk := Threshold{Signal: SignalNodeFsAvailable, Value: Value{Percentage: 0.5}}
	type step struct {
		after time.Duration
		obs   Observations
	}
	tests := []struct {
		name           string
		thresholds     []Threshold
		steps          []step // the last one is checked
		wantConditions []v1.NodeConditionType
		wantReclaim    string // the threshold to reclaim for, "" for none
		wantHard       bool
	}{
		{"nothing met", []Threshold{hard}, []step{{0, mem("3Gi", t0)}}, nil, "", false},
		{"hard met: pressure and reclaim at once", []Threshold{hard}, []step{{0, mem("500Mi", t0)}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "memory.available<1Gi", true},
		{"no observation of the signal", []Threshold{disk}, []step{{0, mem("500Mi", t0)}}, nil, "", false},
		{"soft met: pressure, no reclaim before its grace period", []Threshold{soft}, []step{{0, mem("1500Mi", t0)}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "", false},
		{"soft met past its grace period: reclaim, soft", []Threshold{soft},
			[]step{{0, mem("1500Mi", t0)}, {30 * time.Second, mem("1500Mi", t0.Add(30*time.Second))}, {time.Minute, mem("1500Mi", t0.Add(time.Minute))}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "memory.available<2Gi for 1m0s", false},
		{"soft met, broken, met again: its grace period starts over", []Threshold{soft},
			[]step{{0, mem("1500Mi", t0)}, {30 * time.Second, mem("3Gi", t0.Add(30*time.Second))}, {time.Minute, mem("1500Mi", t0.Add(time.Minute))}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "", false},
		{"resolved: the condition stays for the transition period", []Threshold{hard},
			[]step{{0, mem("500Mi", t0)}, {4 * time.Minute, mem("3Gi", t0.Add(4*time.Minute))}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "", false},
		{"resolved past the transition period: no condition", []Threshold{hard},
			[]step{{0, mem("500Mi", t0)}, {5 * time.Minute, mem("3Gi", t0.Add(5*time.Minute))}}, nil, "", false},
		{"same statistics again: no second reclaim", []Threshold{hard},
			[]step{{0, mem("500Mi", t0)}, {10 * time.Second, mem("500Mi", t0)}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "", false},
		{"minimum reclaim not yet available: still met", []Threshold{reclaim},
			[]step{{0, mem("500Mi", t0)}, {10 * time.Second, mem("1200Mi", t0.Add(10*time.Second))}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "memory.available<1Gi (minimum reclaim 500Mi)", true},
		{"minimum reclaim available: resolved", []Threshold{reclaim},
			[]step{{0, mem("500Mi", t0)}, {10 * time.Second, mem("1600Mi", t0.Add(10*time.Second))}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure}, "", false},
		{"memory before disk", []Threshold{disk, hard},
			[]step{{0, Observations{
				SignalMemoryAvailable: {Available: *q("500Mi"), Capacity: *q("10Gi"), Time: t0},
				SignalNodeFsAvailable: {Available: *q("10Gi"), Capacity: *q("100Gi"), Time: t0},
			}}},
			[]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}, "memory.available<1Gi", true},
		{"disk by percentage", []Threshold{disk},
			[]step{{0, Observations{SignalNodeFsAvailable: {Available: *q("10Gi"), Capacity: *q("100Gi"), Time: t0}}}},
			[]v1.NodeConditionType{v1.NodeDiskPressure}, "nodefs.available<50%", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewManager(Config{Thresholds: tt.thresholds, PressureTransitionPeriod: 5 * time.Minute})
			var cmds []Command
			for _, s := range tt.steps {
				cmds = m.Step(EvObserved{s.obs}, t0.Add(s.after))
			}
			var conditions []v1.NodeConditionType
			var reclaim *Reclaim
			for _, c := range cmds {
				switch c := c.(type) {
				case CmdPressure:
					conditions = c.Conditions
				case CmdReclaim:
					reclaim = c.Reclaim
				}
			}
			if !slices.Equal(conditions, tt.wantConditions) {
				t.Errorf("conditions %v, want %v", conditions, tt.wantConditions)
			}
			got := ""
			if reclaim != nil {
				got = reclaim.Threshold.String()
				if reclaim.Hard != tt.wantHard || reclaim.Resource != reclaim.Threshold.Signal.Resource() {
					t.Errorf("reclaim %+v, want hard %v", reclaim, tt.wantHard)
				}
			}
			if got != tt.wantReclaim {
				t.Errorf("reclaim %q, want %q", got, tt.wantReclaim)
			}
		})
	}
}

func TestStillMet(t *testing.T) {
	th := Threshold{Signal: SignalNodeFsAvailable, Value: Value{Quantity: q("10Gi")}, MinReclaim: &Value{Quantity: q("5Gi")}}
	obs := func(avail string) Observations {
		return Observations{SignalNodeFsAvailable: {Available: *q(avail), Capacity: *q("100Gi")}}
	}
	for avail, want := range map[string]bool{"5Gi": true, "12Gi": true, "16Gi": false} {
		if got := StillMet(th, obs(avail)); got != want {
			t.Errorf("available %s: still met %v, want %v", avail, got, want)
		}
	}
	if StillMet(th, Observations{}) {
		t.Error("met without an observation")
	}
}

func TestPodGracePeriod(t *testing.T) {
	pod := func(grace *int64) *v1.Pod { return &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: grace}} }
	tests := []struct {
		name string
		max  int64
		hard bool
		pod  *v1.Pod
		want int64
	}{
		{"hard: none", 60, true, pod(i64(30)), 0},
		{"soft: the maximum", 10, false, pod(i64(30)), 10},
		{"soft: the pod's when shorter", 60, false, pod(i64(30)), 30},
		{"soft, maximum 0 (the default)", 0, false, pod(i64(30)), 0},
		{"soft, negative maximum: the pod's", -1, false, pod(i64(45)), 45},
		{"soft, negative maximum, no pod value: 30", -1, false, pod(nil), 30},
	}
	for _, tt := range tests {
		m := NewManager(Config{MaxPodGracePeriodSeconds: tt.max})
		if got := m.PodGracePeriod(&Reclaim{Hard: tt.hard}, tt.pod); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
}
