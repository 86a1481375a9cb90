package supervision

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/internal/parallel"
)

// workDone is the result of work that did not panic.
type workDone struct{}

func (*workDone) Summary() string { return "work done" }

// startWork asks a goer to run work through Go.
type startWork struct {
	work func(context.Context) Message
}

// goer runs the work it is given through Go and reports its starts and the
// results it receives.
type goer struct {
	Lifetime
	starts  chan struct{}
	results chan Message
}

func (g *goer) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		g.starts <- struct{}{}
	case *startWork:
		Go(ctx, m.work)
	case Message:
		g.results <- m
	}
}

// lockedBuffer is a log sink that the work's goroutine and the test share.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestGoRecoversAPanicAsTheActorsFailure: a panic in work started with Go
// does not kill the process; it is logged with the work's stack and fails
// the actor that started it, which its supervisor restarts, or gives up on
// when the panic is fatal. Work that returns delivers its result.
func TestGoRecoversAPanicAsTheActorsFailure(t *testing.T) {
	tests := []struct {
		name        string
		work        func(context.Context) Message
		wantResult  bool
		wantRestart bool
		wantGiveUp  bool
		wantFailure string // in the registry's LastFailure
	}{
		{name: "returns", work: func(context.Context) Message { return &workDone{} }, wantResult: true},
		{name: "panics", work: func(context.Context) Message { panic("boom") },
			wantRestart: true, wantFailure: "work off the mailbox panicked: boom"},
		{name: "panics with an error", work: func(context.Context) Message { panic(errors.New("bad state")) },
			wantRestart: true, wantFailure: "work off the mailbox panicked: bad state"},
		{name: "panics with a fatal error", work: func(context.Context) Message { panic(Fatal(errors.New("unrepairable"))) },
			wantGiveUp: true, wantFailure: "work off the mailbox panicked: fatal: unrepairable"},
		{name: "a parallel part panics", work: func(context.Context) Message {
			var parts parallel.Group
			parts.Go(func() {})
			parts.Go(func() { panic("part boom") })
			parts.Wait()
			return &workDone{}
		}, wantRestart: true, wantFailure: "a parallel part of the work panicked: part boom"},
		{name: "a parallel part panics with a fatal error", work: func(context.Context) Message {
			var parts parallel.Group
			parts.Go(func() { panic(Fatal(errors.New("part unrepairable"))) })
			parts.Wait()
			return &workDone{}
		}, wantGiveUp: true, wantFailure: "fatal: part unrepairable"},
		{name: "parallel parts return", work: func(context.Context) Message {
			var parts parallel.Group
			for range 3 {
				parts.Go(func() {})
			}
			parts.Wait()
			return &workDone{}
		}, wantResult: true},
		{name: "runtime error", work: func(context.Context) Message {
			_ = element(nil, 3)
			return &workDone{}
		}, wantRestart: true, wantFailure: "index out of range [3] with length 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			logs := &lockedBuffer{}
			system := NewSystem(zerolog.New(logs))
			defer system.Shutdown()
			reg := system.Registry
			gaveUp := make(chan string, 1)
			strategy := &Backoff{Initial: 10 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute, Registry: reg,
				GiveUp: func(child *actor.PID, _ any) { gaveUp <- child.Id }}
			root, err := system.Root.SpawnNamed(reg.Props("parent", func() actor.Actor { return &spawner{reg: reg} }, strategy), "p")
			if err != nil {
				t.Fatal(err)
			}
			defer system.Root.Stop(root)
			g := &goer{starts: make(chan struct{}, 4), results: make(chan Message, 4)}
			system.Root.Send(root, spawnChild{g: g})
			wait(t, g.starts, "the first start")

			system.Root.Send(actor.NewPID(system.Address(), "p/w"), &startWork{work: tt.work})
			switch {
			case tt.wantResult:
				select {
				case m := <-g.results:
					if _, ok := m.(*workDone); !ok {
						t.Errorf("result %T, want *workDone", m)
					}
				case <-time.After(5 * time.Second):
					t.Fatal("no result delivered")
				}
			case tt.wantRestart:
				wait(t, g.starts, "the restart")
			case tt.wantGiveUp:
				wait(t, gaveUp, "giving up")
			}
			info, alive := reg.Actor("p/w")
			if tt.wantFailure == "" {
				if info.Restarts != 0 || info.LastFailure != "" {
					t.Errorf("registry: restarts %d, last failure %q; want none", info.Restarts, info.LastFailure)
				}
				return
			}
			if tt.wantRestart && (!alive || info.Restarts != 1) {
				t.Errorf("registry: alive %v, restarts %d; want alive, 1", alive, info.Restarts)
			}
			if alive && !strings.Contains(info.LastFailure, tt.wantFailure) {
				t.Errorf("last failure %q, want it to contain %q", info.LastFailure, tt.wantFailure)
			}
			// The log has the panic with the stack of the work's goroutine.
			out := logs.String()
			if !strings.Contains(out, "work started off the mailbox panicked") || !strings.Contains(out, "props_test.go") {
				t.Errorf("log lacks the panic with the work's stack:\n%s", out)
			}
			select {
			case m := <-g.results:
				t.Errorf("a panicking work delivered %T to the actor's Receive", m)
			default:
			}
		})
	}
}

// spawnChild asks the spawner to spawn g as p/w; a restart of p/w keeps g,
// or, when fresh, makes a new goer with g's channels, as a real actor's
// producer makes a new instance for each incarnation.
type spawnChild struct {
	g     *goer
	fresh bool
}

// spawner spawns the goer p/w under its supervision strategy.
type spawner struct{ reg *Registry }

func (s *spawner) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(spawnChild); ok {
		g, fresh := m.g, m.fresh
		producer := func() actor.Actor {
			if fresh {
				return &goer{starts: g.starts, results: g.results}
			}
			return g
		}
		if _, err := ctx.SpawnNamed(s.reg.Props("goer", producer, nil), "w"); err != nil {
			panic(err)
		}
	}
}

// element is s[i], a runtime panic when i is out of range.
func element(s []int, i int) int { return s[i] }

func wait[T any](t *testing.T, c <-chan T, what string) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}
