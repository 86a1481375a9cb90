package bootstrap

import (
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/supervision"
)

type ping struct{}

func (*ping) Summary() string { return "ping" }

// gated handles pings; while its gate is shut, it blocks on one, so that
// the pings after it wait in its mailbox.
type gated struct{ gate chan struct{} }

func (g *gated) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*ping); ok && g.gate != nil {
		<-g.gate
	}
}

// TestActorCounts checks that the actor metrics read the registry's live
// counts: kind, mailbox depth, messages handled, restarts.
func TestActorCounts(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	gate := make(chan struct{})
	spawn := func(kind, name string, g *gated) *actor.PID {
		pid, err := system.Root.SpawnNamed(system.Registry.Props(kind, func() actor.Actor { return g }, nil), name)
		if err != nil {
			t.Fatalf("spawn %s: %v", name, err)
		}
		return pid
	}
	worker := spawn("pod-worker", "pod-manager/a", &gated{})
	pleg := spawn("pleg", "pleg", &gated{gate: gate})
	for range 3 {
		supervision.TellFromOutside(system.ActorSystem, pleg, &ping{})
	}
	supervision.TellFromOutside(system.ActorSystem, worker, &ping{})
	supervision.TellFromOutside(system.ActorSystem, worker, &supervision.InjectPanic{Reason: "test"})
	supervision.TellFromOutside(system.ActorSystem, worker, &ping{})

	list := actorCounts(system.Registry)
	want := map[string]metrics.ActorCounts{
		// The first ping blocks pleg: all three are in its mailbox.
		"pleg": {Path: "pleg", Kind: "pleg", MailboxDepth: 3},
		// Both pings handled, and the restart the injected panic caused.
		"pod-manager/a": {Path: "pod-manager/a", Kind: "pod-worker", Processed: 2, Restarts: 1},
	}
	var got map[string]metrics.ActorCounts
	deadline := time.Now().Add(5 * time.Second)
	for {
		got = map[string]metrics.ActorCounts{}
		for _, a := range list() {
			if a.Started.IsZero() {
				t.Errorf("%s: no start time", a.Path)
			}
			got[a.Path] = metrics.ActorCounts{Path: a.Path, Kind: a.Kind, MailboxDepth: a.MailboxDepth, Processed: a.Processed, Restarts: a.Restarts}
		}
		if len(got) == len(want) && got["pleg"] == want["pleg"] && got["pod-manager/a"] == want["pod-manager/a"] {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor counts %+v, want %+v", got, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	close(gate)
}
