package prober

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// fakeRunner answers each kind with a fixed result and counts the runs in
// flight at once.
type fakeRunner struct {
	mu       sync.Mutex
	answers  map[results.Kind]results.Result
	ids      []string
	inFlight atomic.Int32
	maxAtOne atomic.Int32
	delay    time.Duration
}

func (f *fakeRunner) Probe(ctx context.Context, kind results.Kind, _ *v1.Pod, _ v1.PodStatus, _ *v1.Container, id string) (results.Result, error) {
	n := f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	for {
		m := f.maxAtOne.Load()
		if n <= m || f.maxAtOne.CompareAndSwap(m, n) {
			break
		}
	}
	select {
	case <-time.After(f.delay):
	case <-ctx.Done():
		return results.Unknown, ctx.Err()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ids = append(f.ids, id)
	return f.answers[kind], nil
}

// podWorker stands in for the prober's parent: it spawns the prober and
// records the results it reports.
type podWorker struct {
	props   *actor.Props
	prober  *actor.PID
	reports chan *messages.ProbeResultChanged
}

func (p *podWorker) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		p.prober = ctx.SpawnPrefix(p.props, "prober")
	case *messages.ProbeResultChanged:
		p.reports <- m
	case *messages.ProbeTargets:
		supervision.Tell(ctx, p.prober, m)
	}
}

// TestProberReportsChangesOnly runs a prober with a liveness probe that
// fails and a readiness probe that succeeds, each every second: the parent
// hears of the readiness success and of the liveness failure once its
// threshold is reached, and nothing else; each probe has one run at a
// time; the runs are counted in upstream's metrics.
func TestProberReportsChangesOnly(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	reg := supervision.NewRegistry()
	runner := &fakeRunner{answers: map[results.Kind]results.Result{results.Liveness: results.Failure, results.Readiness: results.Success},
		delay: 1500 * time.Millisecond}
	parent := &podWorker{props: Props(Params{Runner: runner, KubeletStart: time.Now().Add(-time.Hour), Registry: reg}),
		reports: make(chan *messages.ProbeResultChanged, 10)}
	pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return parent }))
	defer system.Root.Stop(pid)

	pod := podWith(probe(0, 1, 1, 2), probe(0, 1, 1, 1), nil)
	pod.Name, pod.UID = "prober-test", "uid-prober-test"
	status := runningAs("abc", time.Now())
	system.Root.Send(pid, &messages.ProbeTargets{Pod: pod, Status: status})

	want := map[results.Kind]results.Result{results.Readiness: results.Success, results.Liveness: results.Failure}
	// Not "for range want": an entry deleted before the range reaches it
	// is skipped, and the second expected report would be taken below for
	// an unexpected one.
	for len(want) > 0 {
		select {
		case m := <-parent.reports:
			if m.ContainerID != "abc" || m.ContainerName != "c" || want[m.Kind] != m.Result {
				t.Errorf("unexpected report %+v", m)
			}
			delete(want, m.Kind)
		case <-time.After(10 * time.Second):
			t.Fatalf("no report of %v", want)
		}
	}
	select {
	case m := <-parent.reports:
		t.Errorf("unexpected report %+v", m)
	case <-time.After(2 * time.Second):
	}
	// A run takes longer than the period: never two of one probe at once.
	if n := runner.maxAtOne.Load(); n > 2 {
		t.Errorf("%d runs at once for two probes", n)
	}
	if n := counter(metrics.ProberProbeTotal.WithLabelValues("Liveness", "failed", "c", "prober-test", "default", "uid-prober-test")); n != 2 {
		t.Errorf("prober_probe_total of the liveness failures: %v, want 2 (it holds after its threshold)", n)
	}
	if n := counter(metrics.ProberProbeTotal.WithLabelValues("Readiness", "successful", "c", "prober-test", "default", "uid-prober-test")); n < 1 {
		t.Errorf("prober_probe_total of the readiness successes: %v", n)
	}
	// The prober shows on the dashboard under its kind.
	found := false
	for _, a := range reg.Actors() {
		found = found || a.Kind == Kind
	}
	if !found {
		t.Errorf("no %s actor in the registry", Kind)
	}

	// The pod terminating stops its liveness probe, whose metrics go; its
	// readiness probe goes on.
	system.Root.Send(pid, &messages.ProbeTargets{Pod: pod, Status: status, Terminating: true})
	time.Sleep(200 * time.Millisecond)
	before := counter(metrics.ProberProbeTotal.WithLabelValues("Readiness", "successful", "c", "prober-test", "default", "uid-prober-test"))
	if n := series(metrics.ProberProbeTotal); n != 1 {
		t.Errorf("%d prober_probe_total series while the pod terminates, want the readiness probe's only", n)
	}
	readinessRuns := func() float64 {
		return counter(metrics.ProberProbeTotal.WithLabelValues("Readiness", "successful", "c", "prober-test", "default", "uid-prober-test"))
	}
	for end := time.Now().Add(10 * time.Second); readinessRuns() <= before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("the readiness probe ran no more while the pod terminates")
		}
	}

	// Its containers stopped: every probe stops, and its metrics go.
	system.Root.Send(pid, &messages.ProbeTargets{})
	time.Sleep(200 * time.Millisecond)
	runner.mu.Lock()
	runs := len(runner.ids)
	runner.mu.Unlock()
	time.Sleep(2 * time.Second)
	runner.mu.Lock()
	defer runner.mu.Unlock()
	if len(runner.ids) > runs+1 {
		t.Errorf("%d runs after the probes stopped", len(runner.ids)-runs)
	}
	if n := series(metrics.ProberProbeTotal); n != 0 {
		t.Errorf("%d prober_probe_total series left after the pod", n)
	}
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	return m.GetCounter().GetValue()
}

func series(c prometheus.Collector) int {
	ch := make(chan prometheus.Metric, 100)
	c.Collect(ch)
	close(ch)
	return len(ch)
}

// podSeries counts the prober_probe_total series of the pod with uid.
func podSeries(uid string) int {
	ch := make(chan prometheus.Metric, 100)
	metrics.ProberProbeTotal.Collect(ch)
	close(ch)
	n := 0
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			panic(err)
		}
		for _, l := range d.GetLabel() {
			if l.GetName() == "pod_uid" && l.GetValue() == uid {
				n++
			}
		}
	}
	return n
}

// TestProberMetricsGoWithTheProbes runs a readiness probe until it has
// series, ends its probes in one way or another, and then hands the
// prober the result of a run that ended meanwhile, as a run racing the
// end does: the series must not come back, or they would stay after the
// pod for good.
func TestProberMetricsGoWithTheProbes(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(system *actor.ActorSystem, parent, prober *actor.PID)
	}{
		{"the pod-worker stops the probes", func(system *actor.ActorSystem, parent, _ *actor.PID) {
			system.Root.Send(parent, &messages.ProbeTargets{})
		}},
		{"the prober restarts", func(system *actor.ActorSystem, _, prober *actor.PID) {
			system.Root.Send(prober, &supervision.InjectPanic{Reason: "test"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			system := actor.NewActorSystem()
			defer system.Shutdown()
			runner := &fakeRunner{answers: map[results.Kind]results.Result{results.Readiness: results.Success}}
			parent := &podWorker{props: Props(Params{Runner: runner, KubeletStart: time.Now().Add(-time.Hour), Registry: supervision.NewRegistry()}),
				reports: make(chan *messages.ProbeResultChanged, 10)}
			pid := system.Root.Spawn(actor.PropsFromProducer(func() actor.Actor { return parent }))
			defer system.Root.Stop(pid)

			pod := podWith(nil, probe(0, 1, 1, 1), nil)
			uid := "uid-metrics-" + strings.ReplaceAll(tc.name, " ", "-")
			pod.Name, pod.UID = "metrics-test", types.UID(uid)
			system.Root.Send(pid, &messages.ProbeTargets{Pod: pod, Status: runningAs("abc", time.Now())})
			deadline := time.Now().Add(10 * time.Second)
			for podSeries(uid) == 0 {
				if time.Now().After(deadline) {
					t.Fatal("no prober_probe_total series after 10 s")
				}
				time.Sleep(20 * time.Millisecond)
			}

			tc.end(system, pid, parent.prober)
			deadline = time.Now().Add(10 * time.Second)
			for podSeries(uid) != 0 {
				if time.Now().After(deadline) {
					t.Fatalf("%d prober_probe_total series left after the probes ended", podSeries(uid))
				}
				time.Sleep(20 * time.Millisecond)
			}
			// The result of a run that ended as the probes did.
			system.Root.Send(parent.prober, &probeDone{Key: Key{Container: "c", Kind: results.Readiness}, Gen: 1,
				Result: results.Success, Counted: true, Took: time.Millisecond})
			time.Sleep(500 * time.Millisecond)
			if n := podSeries(uid); n != 0 {
				t.Errorf("%d prober_probe_total series came back after the probes ended", n)
			}
		})
	}
}
