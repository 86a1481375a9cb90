package supervision

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

// TestStoppingAnActorCancelsItsWork: the context work started with Go
// receives is cancelled when the actor stops (itself, or with its parent)
// or is restarted, while the work is still under way; a restarted actor's
// new incarnation gets a fresh context, which the old one's end does not
// touch.
func TestStoppingAnActorCancelsItsWork(t *testing.T) {
	tests := []struct {
		name string
		// end ends the incarnation of p/w that started the work.
		end         func(system *System, root, worker *actor.PID)
		wantRestart bool
	}{
		{name: "the actor stops", end: func(s *System, _, w *actor.PID) { s.Root.Stop(w) }},
		{name: "its parent stops", end: func(s *System, root, _ *actor.PID) { s.Root.Stop(root) }},
		{name: "the actor restarts", wantRestart: true, end: func(s *System, _, w *actor.PID) {
			TellFromOutside(s.ActorSystem, w, &InjectPanic{Reason: "test"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system := NewSystem(zerolog.Nop())
			defer system.Shutdown()
			reg := system.Registry
			strategy := &Backoff{Initial: 10 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute, Registry: reg}
			root, err := system.Root.SpawnNamed(reg.Props("parent", func() actor.Actor { return &spawner{reg: reg} }, strategy), "p")
			if err != nil {
				t.Fatal(err)
			}
			defer system.Root.Stop(root)
			g := &goer{starts: make(chan struct{}, 4), results: make(chan Message, 4)}
			system.Root.Send(root, spawnChild{g: g, fresh: true})
			wait(t, g.starts, "the first start")
			worker := actor.NewPID(system.Address(), "p/w")

			// The work holds its context until it is cancelled, as a call
			// to the runtime or the API server would.
			running, cancelled := make(chan context.Context, 1), make(chan struct{})
			system.Root.Send(worker, &startWork{work: func(life context.Context) Message {
				running <- life
				<-life.Done()
				close(cancelled)
				return &workDone{}
			}})
			first := <-running
			select {
			case <-cancelled:
				t.Fatal("the work's context was cancelled while the actor lives")
			case <-time.After(50 * time.Millisecond):
			}

			tt.end(system, root, worker)
			wait(t, cancelled, "the work's context to be cancelled")
			if !tt.wantRestart {
				return
			}
			wait(t, g.starts, "the restart")
			system.Root.Send(worker, &startWork{work: func(life context.Context) Message {
				running <- life
				return &workDone{}
			}})
			var second context.Context
			select {
			case second = <-running:
			case <-time.After(5 * time.Second):
				t.Fatal("the restarted actor's work never ran")
			}
			if second == first || second.Err() != nil {
				t.Errorf("the restarted actor's work got the old or a cancelled context (err %v)", second.Err())
			}
		})
	}
}

// A Lifetime outside the registry's middleware (an actor spawned by a unit
// test) still gives a context, which nothing cancels; Go refuses an actor
// without one.
func TestLifetimeWithoutMiddleware(t *testing.T) {
	var l Lifetime
	if c := l.Context(); c == nil || c.Err() != nil || l.Context() != c {
		t.Fatalf("zero Lifetime's context = %v, want one live context", c)
	}
	system := NewSystem(zerolog.Nop())
	defer system.Shutdown()
	refused := make(chan any, 1)
	pid := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*startWork); ok {
			defer func() { refused <- recover() }()
			Go(c, func(context.Context) Message { return &workDone{} })
		}
	}))
	system.Root.Send(pid, &startWork{})
	select {
	case r := <-refused:
		if r == nil {
			t.Error("Go ran work for an actor without a Lifetime")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the actor never handled startWork")
	}
}
