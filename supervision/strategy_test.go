package supervision

import (
	"errors"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

func TestBackoffDelay(t *testing.T) {
	b := &Backoff{Initial: 10 * time.Second, Max: 5 * time.Minute}
	for _, tc := range []struct {
		failures int
		want     time.Duration
	}{
		{1, 10 * time.Second},
		{2, 20 * time.Second},
		{3, 40 * time.Second},
		{5, 160 * time.Second},
		{6, 5 * time.Minute},
		{60, 5 * time.Minute},
	} {
		if got := b.Delay(tc.failures); got != tc.want {
			t.Errorf("Delay(%d) = %v, want %v", tc.failures, got, tc.want)
		}
	}
}

func TestIsFatal(t *testing.T) {
	for _, tc := range []struct {
		reason any
		want   bool
	}{
		{"a string panic", false},
		{errors.New("plain"), false},
		{Fatal(errors.New("bad")), true},
		{errors.Join(errors.New("ctx"), Fatal(errors.New("bad"))), true},
	} {
		if got := IsFatal(tc.reason); got != tc.want {
			t.Errorf("IsFatal(%v) = %v, want %v", tc.reason, got, tc.want)
		}
	}
}

type counter struct{ starts chan string }

func (c *counter) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		c.starts <- ctx.Self().Id
	}
}

// parent spawns two children with the strategy under test.
type parent struct {
	registry *Registry
	starts   chan string
}

func (p *parent) Receive(ctx actor.Context) {
	if _, ok := ctx.Message().(*actor.Started); ok {
		for _, name := range []string{"a", "b"} {
			props := p.registry.Props("child", func() actor.Actor { return &counter{starts: p.starts} }, nil)
			if _, err := ctx.SpawnNamed(props, name); err != nil {
				panic(err)
			}
		}
	}
}

func TestPanickingChildRestartsAloneWithBackoff(t *testing.T) {
	system := NewSystem(zerolog.Nop())
	reg := system.Registry
	defer system.Shutdown()
	gaveUp := make(chan string, 1)
	strategy := &Backoff{Initial: 50 * time.Millisecond, Max: time.Second, ResetAfter: time.Minute, MaxRestarts: 2, Registry: reg,
		GiveUp: func(child *actor.PID, _ any) { gaveUp <- child.Id }}
	starts := make(chan string, 16)
	root, err := system.Root.SpawnNamed(reg.Props("parent", func() actor.Actor { return &parent{registry: reg, starts: starts} }, strategy), "p")
	if err != nil {
		t.Fatal(err)
	}
	defer system.Root.Stop(root)
	started := map[string]int{}
	for range 2 {
		started[<-starts]++
	}
	if started["p/a"] != 1 || started["p/b"] != 1 {
		t.Fatalf("children started %v, want p/a and p/b once", started)
	}
	a, _ := reg.Actor("p/a")
	b, _ := reg.Actor("p/b")
	if a.Kind != "child" || a.Parent != "p" || b.Path != "p/b" {
		t.Fatalf("registry entries: %+v %+v", a, b)
	}

	pidA := actor.NewPID(system.Address(), "p/a")
	injected := time.Now()
	TellFromOutside(system.ActorSystem, pidA, &InjectPanic{Reason: "test"})
	if got := <-starts; got != "p/a" {
		t.Fatalf("restarted %s, want p/a", got)
	}
	if waited := time.Since(injected); waited < 50*time.Millisecond {
		t.Errorf("restart came after %v, before the 50ms backoff", waited)
	}
	// A second failure in a row waits twice as long.
	injected = time.Now()
	TellFromOutside(system.ActorSystem, pidA, &InjectPanic{Reason: "test again"})
	<-starts
	if waited := time.Since(injected); waited < 100*time.Millisecond {
		t.Errorf("second restart came after %v, before the 100ms backoff", waited)
	}

	a, _ = reg.Actor("p/a")
	if a.Restarts != 2 || a.LastFailure != "injected fault: test again" {
		t.Errorf("registry after restarts: restarts=%d lastFailure=%q", a.Restarts, a.LastFailure)
	}
	b, _ = reg.Actor("p/b")
	if b.Restarts != 0 || b.LastFailure != "" {
		t.Errorf("sibling was touched: %+v", b)
	}
	select {
	case s := <-starts:
		t.Errorf("unexpected start of %s", s)
	default:
	}

	// A third failure exceeds MaxRestarts: the strategy gives up and escalates.
	TellFromOutside(system.ActorSystem, pidA, &InjectPanic{Reason: "once too often"})
	select {
	case who := <-gaveUp:
		if who != "p/a" {
			t.Errorf("gave up on %s, want p/a", who)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("strategy did not give up after MaxRestarts")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, alive := reg.Actor("p/a"); !alive {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("stopped child is still in the registry")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, alive := reg.Actor("p/b"); !alive {
		t.Error("sibling p/b stopped with p/a")
	}
}
