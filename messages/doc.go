// Package messages holds every typed message that crosses between actors.
//
// Each message type documents who sends it and who receives it, and
// implements Message, whose one-line Summary is what the actor registry keeps
// in its per-actor timeline and what the dashboard shows. Messages are values
// handed over, never shared: a sender must not touch a message after sending
// it. The messages the supervision middleware itself acts on
// (supervision.InjectPanic, supervision.WorkPanicked) live in supervision.
package messages

import "github.com/actorlet/actorlet/supervision"

// Message is implemented by every message exchanged between actorlet's
// actors. It is supervision's, so that the actor framework needs no import of
// the messages (nor of what they carry).
type Message = supervision.Message
