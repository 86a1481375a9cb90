package messages

// InjectPanic makes the receiving actor panic once, so that tests can watch
// supervision restart it. Only sent when --debug-fault-injection is on.
// Sender: the api-server actor (POST /debug/inject/panic), or tests.
// Receiver: any actor built with supervision.Props; the middleware panics
// before the actor sees the message.
type InjectPanic struct {
	Reason string
}

func (m *InjectPanic) Summary() string { return "inject panic: " + m.Reason }
