package eviction

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/evictionpolicy"
	"github.com/actorlet/actorlet/messages"
)

// fakeStats answers the summaries it is given in turn, the last one again
// and again.
type fakeStats struct {
	mu        sync.Mutex
	summaries []*statsapi.Summary
	calls     int
}

func (f *fakeStats) Summary(context.Context, bool) (*statsapi.Summary, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	s := f.summaries[min(f.calls, len(f.summaries))-1]
	// Every reading is new.
	c := *s
	n := c.Node
	if n.Memory != nil {
		m := *n.Memory
		m.Time = metav1.Now()
		n.Memory = &m
	}
	if n.Fs != nil {
		fs := *n.Fs
		fs.Time = metav1.Now()
		n.Fs = &fs
	}
	c.Node = n
	return &c, nil
}

func u64(v uint64) *uint64 { return &v }

func summary(memAvailMi, fsAvailGi uint64, pods ...statsapi.PodStats) *statsapi.Summary {
	return &statsapi.Summary{Node: statsapi.NodeStats{
		Memory: &statsapi.MemoryStats{AvailableBytes: u64(memAvailMi << 20), WorkingSetBytes: u64(1 << 30)},
		Fs:     &statsapi.FsStats{AvailableBytes: u64(fsAvailGi << 30), CapacityBytes: u64(100 << 30)},
	}, Pods: pods}
}

func podStats(uid string, memMi uint64) statsapi.PodStats {
	ws := u64(memMi << 20)
	return statsapi.PodStats{PodRef: statsapi.PodReference{UID: uid, Name: uid},
		Memory:     &statsapi.MemoryStats{WorkingSetBytes: ws},
		Containers: []statsapi.ContainerStats{{Name: "c", Memory: &statsapi.MemoryStats{WorkingSetBytes: ws}}}}
}

func pod(uid, memReq string) v1.Pod {
	p := v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: "default", UID: types.UID(uid)},
		Spec:   v1.PodSpec{Containers: []v1.Container{{Name: "c"}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	if memReq != "" {
		q := resource.MustParse(memReq)
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: q}
		p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: q}
	}
	return p
}

// recorder collects what the fake pod-manager, status-reporter and gc got.
type recorder struct {
	mu        sync.Mutex
	pressure  map[string][]v1.NodeConditionType
	evictions []*messages.EvictPod
	reclaims  int
}

func (r *recorder) spawn(system *actor.ActorSystem, name string, pods []v1.Pod) *actor.PID {
	return system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		r.mu.Lock()
		defer r.mu.Unlock()
		switch m := c.Message().(type) {
		case *messages.NodePressure:
			r.pressure[name] = m.Conditions
		case *messages.ListPods:
			l := &messages.PodList{Pods: pods, SourcesReady: true}
			for _, p := range pods {
				l.Active = append(l.Active, p.UID)
			}
			c.Respond(l)
		case *messages.EvictPod:
			r.evictions = append(r.evictions, m)
		case *messages.ReclaimDiskSpace:
			r.reclaims++
			c.Respond(&messages.DiskSpaceReclaimed{ImagesRemoved: 1})
		}
	}))
}

func (r *recorder) wait(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		done := ok()
		r.mu.Unlock()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s: pressure %v, evictions %v, reclaims %d", what, r.pressure, r.evictions, r.reclaims)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func run(t *testing.T, cfg evictionpolicy.Config, st *fakeStats, pods []v1.Pod) (*recorder, *record.FakeRecorder) {
	return runWith(t, Params{Config: cfg}, st, pods)
}

func runWith(t *testing.T, p Params, st *fakeStats, pods []v1.Pod) (*recorder, *record.FakeRecorder) {
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	r := &recorder{pressure: map[string][]v1.NodeConditionType{}}
	events := record.NewFakeRecorder(20)
	p.Stats, p.Events, p.NodeName = st, events, "node-a"
	p.PodManager, p.StatusReporter, p.GC = r.spawn(system, "pod-manager", pods), r.spawn(system, "status-reporter", nil), r.spawn(system, "gc", nil)
	p.MonitoringInterval, p.Log = 20*time.Millisecond, zerolog.New(zerolog.NewTestWriter(t))
	system.Root.Spawn(actor.PropsFromProducer(New(p)))
	return r, events
}

func threshold(t *testing.T, hard map[string]string) []evictionpolicy.Threshold {
	th, err := evictionpolicy.ParseThresholds(nil, hard, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return th
}

// TestMemoryPressureEvictsBestEffortFirst: a hard memory threshold met sets
// MemoryPressure at the pod-manager and the status-reporter, and evicts the
// BestEffort pod at once with upstream's message and event; one pod per
// pass, the next only once the first is gone.
func TestMemoryPressureEvictsBestEffortFirst(t *testing.T) {
	st := &fakeStats{summaries: []*statsapi.Summary{summary(500, 50, podStats("guaranteed", 200), podStats("besteffort", 50))}}
	cfg := evictionpolicy.Config{Thresholds: threshold(t, map[string]string{"memory.available": "1Gi"}), PressureTransitionPeriod: time.Minute}
	r, events := run(t, cfg, st, []v1.Pod{pod("guaranteed", "1Gi"), pod("besteffort", "")})
	r.wait(t, "MemoryPressure and an eviction", func() bool {
		return len(r.pressure["pod-manager"]) == 1 && len(r.pressure["status-reporter"]) == 1 && len(r.evictions) > 0
	})
	r.mu.Lock()
	got, e := r.pressure["pod-manager"][0], r.evictions[0]
	r.mu.Unlock()
	if got != v1.NodeMemoryPressure {
		t.Errorf("pressure %v", got)
	}
	if e.UID != "besteffort" || e.GracePeriod != 0 || e.Reason != "Evicted" ||
		e.Message != "The node was low on resource: memory. Threshold quantity: 1Gi, available: 500Mi. Container c was using 50Mi, request is 0, has larger consumption of memory. " {
		t.Errorf("eviction %+v", e)
	}
	time.Sleep(200 * time.Millisecond)
	r.mu.Lock()
	n := len(r.evictions)
	r.mu.Unlock()
	if n != 1 {
		t.Errorf("%d evictions while the first evicted pod is still active, want 1", n)
	}
	var sawThreshold, sawEvicted bool
	for len(events.Events) > 0 {
		ev := <-events.Events
		sawThreshold = sawThreshold || ev == "Warning EvictionThresholdMet Attempting to reclaim memory"
		sawEvicted = sawEvicted || strings.HasPrefix(ev, "Warning Evicted The node was low on resource: memory.")
	}
	if !sawThreshold || !sawEvicted {
		t.Errorf("events: EvictionThresholdMet %v, Evicted %v", sawThreshold, sawEvicted)
	}
}

// TestDiskPressureReclaimsFirst: under disk pressure the gc actor reclaims
// first; when that frees enough, no pod goes.
func TestDiskPressureReclaimsFirst(t *testing.T) {
	st := &fakeStats{summaries: []*statsapi.Summary{summary(5000, 5, podStats("a", 10)), summary(5000, 50, podStats("a", 10))}}
	cfg := evictionpolicy.Config{Thresholds: threshold(t, map[string]string{"nodefs.available": "10%"}), PressureTransitionPeriod: time.Minute}
	r, _ := run(t, cfg, st, []v1.Pod{pod("a", "")})
	r.wait(t, "DiskPressure and a reclaim", func() bool {
		return len(r.pressure["status-reporter"]) == 1 && r.pressure["status-reporter"][0] == v1.NodeDiskPressure && r.reclaims == 1
	})
	time.Sleep(200 * time.Millisecond)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.evictions) != 0 {
		t.Errorf("evicted %+v although the reclaim freed enough", r.evictions[0])
	}
}

// TestDiskPressureEvictsWhenReclaimIsNotEnough: the reclaim frees too little:
// a pod goes.
func TestDiskPressureEvictsWhenReclaimIsNotEnough(t *testing.T) {
	st := &fakeStats{summaries: []*statsapi.Summary{summary(5000, 5, podStats("a", 10))}}
	cfg := evictionpolicy.Config{Thresholds: threshold(t, map[string]string{"nodefs.available": "10%"}), PressureTransitionPeriod: time.Minute}
	r, _ := run(t, cfg, st, []v1.Pod{pod("a", "")})
	r.wait(t, "an eviction after a reclaim", func() bool { return r.reclaims >= 1 && len(r.evictions) == 1 })
	r.mu.Lock()
	defer r.mu.Unlock()
	if m := r.evictions[0].Message; !strings.HasPrefix(m, "The node was low on resource: ephemeral-storage. ") {
		t.Errorf("message %q", m)
	}
}

// TestLocalStorageLimits: without any threshold met, a pod over its
// ephemeral-storage limit is evicted at once with upstream's message.
func TestLocalStorageLimits(t *testing.T) {
	over := podStats("over", 10)
	over.EphemeralStorage = &statsapi.FsStats{UsedBytes: u64(200 << 20)}
	st := &fakeStats{summaries: []*statsapi.Summary{summary(5000, 50, over, podStats("fine", 10))}}
	limited := pod("over", "")
	limited.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("100Mi")}
	r, _ := runWith(t, Params{LocalStorageCapacityIsolation: true,
		Config: evictionpolicy.Config{Thresholds: threshold(t, map[string]string{"memory.available": "100Mi"})}}, st, []v1.Pod{limited, pod("fine", "")})
	r.wait(t, "an eviction", func() bool { return len(r.evictions) == 1 })
	r.mu.Lock()
	e := r.evictions[0]
	r.mu.Unlock()
	if e.UID != "over" || e.GracePeriod != 0 || e.Message != "Pod ephemeral local storage usage exceeds the total limit of containers 100Mi. " {
		t.Errorf("eviction %+v", e)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pressure["status-reporter"]) != 0 {
		t.Errorf("pressure %v without a threshold met", r.pressure)
	}
}
