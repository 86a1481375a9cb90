package supervision

import "fmt"

// Message is implemented by every message exchanged between actorlet's
// actors (package messages aliases it). Its one-line Summary is what the
// Registry keeps in each actor's timeline and what the dashboard shows.
//
// It is defined here, with the two messages the middleware acts on, so that
// the actor framework depends on no actor's messages.
type Message interface {
	// Summary is a one-line, human-readable description of the message.
	Summary() string
}

// InjectPanic makes the receiving actor panic once, so that tests can watch
// supervision restart it. Only sent when --debug-fault-injection is on.
// Sender: the kubelet-API actor (POST /debug/inject/panic), or tests.
// Receiver: any actor built with Props; the middleware panics before the
// actor sees the message. With InSyncWork, a pod-worker instead: the
// middleware passes it on, and the worker panics in the work of its next
// sync (run off its mailbox by Go), starting one now.
type InjectPanic struct {
	Reason string
	// InSyncWork puts the panic in the pod-worker's next sync work rather
	// than in its handler.
	InSyncWork bool
}

func (m *InjectPanic) Summary() string {
	if m.InSyncWork {
		return "inject panic in the next sync work: " + m.Reason
	}
	return "inject panic: " + m.Reason
}

// WorkPanicked reports that work an actor started off its mailbox panicked.
// Sender: Go's goroutine, as the actor itself.
// Receiver: any actor built with Props; the middleware panics with Value
// before the actor sees the message, so that the actor fails and its
// supervisor restarts it under its strategy.
type WorkPanicked struct {
	// Value is what the work panicked with.
	Value any
}

func (m *WorkPanicked) Summary() string { return fmt.Sprintf("work panicked: %v", m.Value) }
