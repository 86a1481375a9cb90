package supervision

import (
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
)

type note struct{ n int }

func (m *note) Summary() string { return fmt.Sprintf("note %d", m.n) }

// relay forwards every note it receives to its target with Tell, so that the
// target sees the relay as the sender.
type relay struct {
	target *actor.PID
}

func (r *relay) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*note); ok {
		Tell(ctx, r.target, m)
	}
}

type sink struct{ got chan int }

func (s *sink) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*note); ok {
		s.got <- m.n
	}
}

func TestRegistryRecordsTimelineAndEdges(t *testing.T) {
	system := NewSystem(zerolog.Nop())
	reg := system.Registry
	defer system.Shutdown()
	got := make(chan int, TimelineLength+10)
	sinkPID, err := system.Root.SpawnNamed(reg.Props("sink", func() actor.Actor { return &sink{got: got} }, nil), "sink")
	if err != nil {
		t.Fatal(err)
	}
	relayPID, err := system.Root.SpawnNamed(reg.Props("relay", func() actor.Actor { return &relay{target: sinkPID} }, nil), "relay")
	if err != nil {
		t.Fatal(err)
	}
	const sent = TimelineLength + 5
	for i := range sent {
		TellFromOutside(system.ActorSystem, relayPID, &note{n: i})
	}
	for i := range sent {
		select {
		case n := <-got:
			if n != i {
				t.Fatalf("got note %d, want %d (order lost)", n, i)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("note %d never arrived", i)
		}
	}

	// Each message is recorded before the actor handles it, so by now the
	// sink's timeline is complete; only the processed count may lag by one.
	timeline := reg.Timeline("sink")
	if len(timeline) != TimelineLength {
		t.Fatalf("timeline has %d records, want %d", len(timeline), TimelineLength)
	}
	last := timeline[len(timeline)-1]
	if last.Summary != fmt.Sprintf("note %d", sent-1) || last.Sender != "relay" || last.Type != "supervision.note" {
		t.Errorf("last record = %+v", last)
	}
	if first := timeline[0]; first.Summary != fmt.Sprintf("note %d", sent-TimelineLength) {
		t.Errorf("oldest kept record = %+v, want note %d", first, sent-TimelineLength)
	}

	edges := map[EdgeKey]uint64{}
	for _, e := range reg.Edges() {
		edges[e.EdgeKey] = e.Count
	}
	if n := edges[EdgeKey{From: ExternalSender, To: "relay", Type: "supervision.note"}]; n != sent {
		t.Errorf("external→relay notes = %d, want %d", n, sent)
	}
	if n := edges[EdgeKey{From: "relay", To: "sink", Type: "supervision.note"}]; n != sent {
		t.Errorf("relay→sink notes = %d, want %d", n, sent)
	}

	info, ok := reg.Actor("relay")
	if !ok || info.Processed != sent {
		t.Errorf("relay info = %+v, want %d processed", info, sent)
	}

	system.Root.Stop(sinkPID)
	deadline := time.Now().Add(5 * time.Second)
	for len(reg.Actors()) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("stopped actor still listed: %+v", reg.Actors())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRegistrySetState(t *testing.T) {
	system := NewSystem(zerolog.Nop())
	reg := system.Registry
	defer system.Shutdown()
	if reg.SetState("nobody", "syncing") {
		t.Error("SetState on an unknown path reported a live actor")
	}
	got := make(chan int, 1)
	pid, err := system.Root.SpawnNamed(reg.Props("sink", func() actor.Actor { return &sink{got: got} }, nil), "sink")
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := reg.Actor("sink"); ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("sink never registered")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if info, _ := reg.Actor("sink"); info.State != "" {
		t.Errorf("state before SetState = %q, want empty", info.State)
	}
	if !reg.SetState("sink", "syncing") {
		t.Fatal("SetState on a live actor reported none")
	}
	if info, _ := reg.Actor("sink"); info.State != "syncing" {
		t.Errorf("state = %q, want syncing", info.State)
	}
	reg.SetState("sink", "terminating")
	var listed string
	for _, a := range reg.Actors() {
		if a.Path == "sink" {
			listed = a.State
		}
	}
	if listed != "terminating" {
		t.Errorf("Actors() state = %q, want terminating", listed)
	}
	system.Root.Stop(pid)
	for reg.SetState("sink", "terminated") {
		if time.Now().After(deadline) {
			t.Fatal("stopped actor still takes a state")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// An actor that has seen fewer messages than TimelineLength has all of
// them, oldest first.
func TestRegistryShortTimeline(t *testing.T) {
	system := NewSystem(zerolog.Nop())
	reg := system.Registry
	defer system.Shutdown()
	got := make(chan int, 3)
	pid, err := system.Root.SpawnNamed(reg.Props("sink", func() actor.Actor { return &sink{got: got} }, nil), "short")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		TellFromOutside(system.ActorSystem, pid, &note{n: i})
	}
	for range 3 {
		select {
		case <-got:
		case <-time.After(5 * time.Second):
			t.Fatal("a note never arrived")
		}
	}
	var notes []MessageRecord
	for _, rec := range reg.Timeline("short") {
		if rec.Type == "supervision.note" {
			notes = append(notes, rec)
		}
	}
	if len(notes) != 3 {
		t.Fatalf("timeline has %d notes, want 3", len(notes))
	}
	for i, rec := range notes {
		if rec.Summary != fmt.Sprintf("note %d", i) {
			t.Errorf("record %d = %q, want note %d", i, rec.Summary, i)
		}
	}
}
