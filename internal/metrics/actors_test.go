package metrics

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

type ping struct{}

func (*ping) Summary() string { return "ping" }

// worker handles pings; while its gate is shut, it blocks on one, so that
// the pings after it wait in its mailbox.
type worker struct{ gate chan struct{} }

func (w *worker) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*ping); ok && w.gate != nil {
		<-w.gate
	}
}

// waitFor polls the registry until cond holds of its actors.
func waitFor(t *testing.T, r *supervision.Registry, what string, cond func([]supervision.ActorInfo) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond(r.Actors()) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s; actors: %+v", what, r.Actors())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func processed(kind string, n uint64) func([]supervision.ActorInfo) bool {
	return func(actors []supervision.ActorInfo) bool {
		var sum uint64
		for _, a := range actors {
			if a.Kind == kind {
				sum += a.Processed
			}
		}
		return sum == n
	}
}

func TestActorCollector(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	reg := system.Registry
	spawn := func(kind, name string, w *worker) *actor.PID {
		pid, err := system.Root.SpawnNamed(reg.Props(kind, func() actor.Actor { return w }, nil), name)
		if err != nil {
			t.Fatalf("spawn %s: %v", name, err)
		}
		return pid
	}
	tell := func(pid *actor.PID, n int, msg messages.Message) {
		for range n {
			supervision.TellFromOutside(system.ActorSystem, pid, msg)
		}
	}
	var workers []*actor.PID
	for _, name := range []string{"a", "b", "c"} {
		pid := spawn("pod-worker", "pod-manager/"+name, &worker{})
		tell(pid, 2, &ping{})
		workers = append(workers, pid)
	}
	gate := make(chan struct{})
	pleg := spawn("pleg", "pleg", &worker{gate: gate})
	tell(pleg, 3, &ping{})
	waitFor(t, reg, "6 pod-worker messages", processed("pod-worker", 6))

	own := prometheus.NewPedanticRegistry()
	own.MustRegister(NewActorCollector(reg))
	check := func(stage string, want map[string]map[string]float64) {
		t.Helper()
		mfs := gather(t, own)
		for name, byKind := range want {
			for kind, v := range byKind {
				m := find(mfs[name], map[string]string{"kind": kind})
				if m == nil {
					t.Errorf("%s: no %s{kind=%q}", stage, name, kind)
					continue
				}
				if got := value(m); got != v {
					t.Errorf("%s: %s{kind=%q} = %v, want %v", stage, name, kind, got, v)
				}
			}
		}
	}

	// The first ping blocks pleg: all three are in its mailbox.
	check("pleg blocked", map[string]map[string]float64{
		"actorlet_actors":                           {"pod-worker": 3, "pleg": 1},
		"actorlet_actor_mailbox_depth":              {"pod-worker": 0, "pleg": 3},
		"actorlet_actor_messages_processed_total":   {"pod-worker": 6, "pleg": 0},
		"actorlet_actor_message_processing_seconds": {"pod-worker": 6},
		"actorlet_actor_restarts_total":             {"pod-worker": 0, "pleg": 0},
	})
	close(gate)
	waitFor(t, reg, "pleg's 3 messages", processed("pleg", 3))

	// A restart is counted; a stopped worker's messages stay counted.
	tell(workers[0], 1, &supervision.InjectPanic{Reason: "test"})
	waitFor(t, reg, "a restart", func(actors []supervision.ActorInfo) bool {
		for _, a := range actors {
			if a.Path == workers[0].Id {
				return a.Restarts == 1
			}
		}
		return false
	})
	check("after a restart", map[string]map[string]float64{
		"actorlet_actor_restarts_total": {"pod-worker": 1, "pleg": 0},
	})
	if err := system.Root.StopFuture(workers[1]).Wait(); err != nil {
		t.Fatalf("stop worker: %v", err)
	}
	waitFor(t, reg, "2 pod-workers", func(actors []supervision.ActorInfo) bool {
		n := 0
		for _, a := range actors {
			if a.Kind == "pod-worker" {
				n++
			}
		}
		return n == 2
	})
	check("after a worker stopped", map[string]map[string]float64{
		"actorlet_actors":                           {"pod-worker": 2, "pleg": 1},
		"actorlet_actor_messages_processed_total":   {"pod-worker": 6, "pleg": 3},
		"actorlet_actor_message_processing_seconds": {"pod-worker": 6, "pleg": 3},
		"actorlet_actor_restarts_total":             {"pod-worker": 1},
	})
	// Every series is by kind: one per kind, however many actors.
	for name, mf := range gather(t, own) {
		if n := len(mf.GetMetric()); n != 2 {
			t.Errorf("%s has %d series, want one per kind (2)", name, n)
		}
	}
}

// value is a gauge's or counter's value, or a summary's count.
func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Summary != nil:
		return float64(m.Summary.GetSampleCount())
	}
	return -1
}

func TestRegisterActorsIsReportedOnRegistry(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	if _, err := system.Root.SpawnNamed(system.Registry.Props("config-source", func() actor.Actor { return &worker{} }, nil), "config-source"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, system.Registry, "config-source registered", func(a []supervision.ActorInfo) bool { return len(a) == 1 })
	RegisterActors(system.Registry)
	RegisterActors(system.Registry) // a second call is harmless
	defer RegisterActors(nil)
	m := find(gather(t, Registry)["actorlet_actors"], map[string]string{"kind": "config-source"})
	if m == nil || value(m) != 1 {
		t.Fatalf("actorlet_actors{kind=config-source} on Registry = %v, want 1", m)
	}
}
