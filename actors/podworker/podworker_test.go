package podworker

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// blockingRuntime's sync blocks like a long image pull until its context
// is cancelled; its kill records the grace period.
type blockingRuntime struct {
	syncStarted chan struct{}
	syncEnded   chan error
	killed      chan int64
}

func (r *blockingRuntime) ObservePod(context.Context, *v1.Pod) SyncOutcome { return SyncOutcome{} }

func (r *blockingRuntime) SyncPod(ctx context.Context, _ *v1.Pod, _ messages.PodVolumes, _ results.Pod) SyncOutcome {
	r.syncStarted <- struct{}{}
	<-ctx.Done()
	r.syncEnded <- ctx.Err()
	return SyncOutcome{Err: ctx.Err()}
}

func (r *blockingRuntime) KillPod(_ context.Context, _ *v1.Pod, _ types.UID, _, _ string, grace int64, stopped func(*v1.PodStatus)) error {
	stopped(nil)
	r.killed <- grace
	return nil
}

// parent stands in for the pod-manager: it answers PodWorkerStarted with the
// pod and records what the worker reports.
type parent struct {
	params *Params
	hist   history
	pod    *v1.Pod
	mu     sync.Mutex
	done   bool
	// stoppedFirst: PodWorkerStopped came before PodWorkerDone.
	stopped, stoppedFirst bool
	ready                 chan *actor.PID
}

func (p *parent) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		pid, err := ctx.SpawnNamed(supervision.NewRegistry().Props(Kind, newProducer(*p.params, &p.hist), nil), "w")
		if err != nil {
			panic(err)
		}
		p.ready <- pid
	case *messages.PodWorkerStarted:
		supervision.Tell(ctx, ctx.Sender(), &messages.UpdatePod{Pod: p.pod})
	case *messages.PodWorkerStopped:
		p.mu.Lock()
		p.stopped = m.UID == p.params.UID
		p.mu.Unlock()
	case *messages.PodWorkerDone:
		p.mu.Lock()
		p.done = m.UID == p.params.UID
		p.stoppedFirst = p.stopped
		p.mu.Unlock()
	}
}

// TestTerminationCancelsALongSync checks that a delete arriving while a sync
// is blocked (say, in an image pull) cancels it at once, and that the kill
// follows only once the sync has returned.
func TestTerminationCancelsALongSync(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	rt := &blockingRuntime{syncStarted: make(chan struct{}, 1), syncEnded: make(chan error, 1), killed: make(chan int64, 1)}
	p := &parent{params: &Params{UID: "u1", Name: "web", Namespace: "default", Runtime: rt, Log: zerolog.Nop()},
		pod: pod("busybox", 30), ready: make(chan *actor.PID, 1)}
	system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	worker := <-p.ready
	select {
	case <-rt.syncStarted:
	case <-time.After(5 * time.Second):
		t.Fatal("the first sync never started")
	}
	// The worker's mailbox is free while the sync blocks.
	grace := int64(3)
	supervision.TellFromOutside(system.ActorSystem, worker, &messages.TerminatePod{GracePeriod: &grace, Reason: "deleted"})
	select {
	case err := <-rt.syncEnded:
		if err != context.Canceled {
			t.Fatalf("sync ended with %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the termination did not cancel the sync in flight")
	}
	select {
	case g := <-rt.killed:
		if g != 3 {
			t.Errorf("killed with grace %d, want 3", g)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no kill after the cancelled sync")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.mu.Lock()
		done, stoppedFirst := p.done, p.stoppedFirst
		p.mu.Unlock()
		if done {
			if !stoppedFirst {
				t.Error("the worker did not report PodWorkerStopped before PodWorkerDone")
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the worker never reported PodWorkerDone")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// countingRuntime's syncs succeed at once and are counted.
type countingRuntime struct{ syncs chan struct{} }

func (r *countingRuntime) ObservePod(context.Context, *v1.Pod) SyncOutcome { return SyncOutcome{} }

func (r *countingRuntime) SyncPod(context.Context, *v1.Pod, messages.PodVolumes, results.Pod) SyncOutcome {
	r.syncs <- struct{}{}
	return SyncOutcome{}
}

func (r *countingRuntime) KillPod(context.Context, *v1.Pod, types.UID, string, string, int64, func(*v1.PodStatus)) error {
	return nil
}

// TestPanicInjectedInSyncWorkRestartsTheWorker: a panic injected into the
// next sync work starts a sync whose work panics off the mailbox; the worker
// fails, restarts, asks for its pod again and syncs it, once: the fault does
// not outlive the incarnation it was injected into.
func TestPanicInjectedInSyncWorkRestartsTheWorker(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	rt := &countingRuntime{syncs: make(chan struct{}, 8)}
	params := &Params{UID: "u1", Name: "web", Namespace: "default", Runtime: rt, Log: zerolog.Nop()}
	p := &parent{params: params, pod: pod("busybox", 30), ready: make(chan *actor.PID, 1)}
	system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return p }))
	worker := <-p.ready
	waitSync := func(what string) {
		t.Helper()
		select {
		case <-rt.syncs:
		case <-time.After(5 * time.Second):
			t.Fatalf("no sync: %s", what)
		}
	}
	waitSync("the first sync")
	supervision.TellFromOutside(system.ActorSystem, worker, &supervision.InjectPanic{Reason: "test", InSyncWork: true})
	// The injected sync panics before it reaches the runtime; the restarted
	// worker's first sync is the next one the runtime sees.
	waitSync("the restarted worker's sync")
	if n := p.hist.incarnations.Load(); n != 2 {
		t.Errorf("%d incarnations, want 2 (one restart)", n)
	}
	select {
	case <-rt.syncs:
		t.Error("a further sync: the fault or the restart repeated")
	case <-time.After(300 * time.Millisecond):
	}
	if n := p.hist.incarnations.Load(); n != 2 {
		t.Errorf("%d incarnations after the restart settled, want 2", n)
	}
}

// TestWithResourceHealth: the devices' health goes into each container's
// allocatedResourcesStatus, the device plugins' before DRA's, replacing
// what the status held.
func TestWithResourceHealth(t *testing.T) {
	dp := v1.ResourceStatus{Name: "example.com/dev", Resources: []v1.ResourceHealth{{ResourceID: "d1", Health: v1.ResourceHealthStatusUnhealthy}}}
	claim := v1.ResourceStatus{Name: "claim:gpu", Resources: []v1.ResourceHealth{{ResourceID: "cdi/gpu=0", Health: v1.ResourceHealthStatusUnknown}}}
	status := func(held ...v1.ResourceStatus) *v1.PodStatus {
		return &v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{{Name: "a", AllocatedResourcesStatus: held}, {Name: "b"}}}
	}
	for _, tc := range []struct {
		name   string
		in     *v1.PodStatus
		health map[string]map[string][]v1.ResourceStatus
		want   *v1.PodStatus
	}{
		{"none", status(), nil, status()},
		{"none left", status(), map[string]map[string][]v1.ResourceStatus{messages.HealthFromDRA: {}}, status()},
		{"both sources", status(), map[string]map[string][]v1.ResourceStatus{
			messages.HealthFromDRA: {"a": {claim}}, messages.HealthFromDevices: {"a": {dp}}}, status(dp, claim)},
		{"replaces", status(claim), map[string]map[string][]v1.ResourceStatus{messages.HealthFromDevices: {"a": {dp}}}, status(dp)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.DeepCopy()
			got := withResourceHealth(in, tc.health)
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if !apiequality.Semantic.DeepEqual(in, tc.in) {
				t.Errorf("the status given changed: %+v", in)
			}
		})
	}
}
