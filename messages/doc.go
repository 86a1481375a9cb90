// Package messages holds every typed message that crosses between actors.
//
// Each message type documents who sends it and who receives it, and
// implements Message, whose one-line Summary is what the actor registry keeps
// in its per-actor timeline and what the dashboard shows. Messages are values
// handed over, never shared: a sender must not touch a message after sending
// it.
package messages

// Message is implemented by every message exchanged between actorlet's actors.
type Message interface {
	// Summary is a one-line, human-readable description of the message.
	Summary() string
}
