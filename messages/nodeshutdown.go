package messages

import (
	"fmt"

	"github.com/actorlet/actorlet/internal/logind"
)

// NodeShuttingDown says whether the node is shutting down (logind's
// PrepareForShutdown(true) seen, not cancelled since). While it is, the
// pod-manager refuses every new pod as upstream's shutdown manager's
// admission (reason NodeShutdown) and the status-reporter reports the
// Node not Ready ("node is shutting down"), writing the Node status at
// once. Sent at each change and again while pods are being terminated, for
// a receiver that restarted.
// Sender: the node-shutdown actor. Receivers: the pod-manager, the
// status-reporter.
type NodeShuttingDown struct{ ShuttingDown bool }

func (m *NodeShuttingDown) Summary() string {
	if m.ShuttingDown {
		return "node shutting down"
	}
	return "node not shutting down"
}

// ShutdownWatchStarted is the outcome of connecting to logind: the watch
// (the connection, the delay lock, the signals) or why there is none.
// Sender and receiver: the node-shutdown actor (from its own goroutine).
type ShutdownWatchStarted struct {
	Watch *logind.Watch
	Err   error
}

func (m *ShutdownWatchStarted) Summary() string {
	if m.Err != nil {
		return "watching the node's shutdown failed: " + m.Err.Error()
	}
	return "watching the node's shutdown"
}

// ShutdownWatchEnded: the connection to the system bus of watch Gen
// closed.
// Sender and receiver: the node-shutdown actor (from its own goroutine).
type ShutdownWatchEnded struct{ Gen int }

func (m *ShutdownWatchEnded) Summary() string { return fmt.Sprintf("shutdown watch %d ended", m.Gen) }

// ReconnectLogind: time to connect to logind again.
// Sender and receiver: the node-shutdown actor (its timer).
type ReconnectLogind struct{}

func (*ReconnectLogind) Summary() string { return "reconnect to logind" }

// PrepareForShutdown is logind's signal of watch Gen: Active when a
// shutdown begins, false when it was cancelled.
// Sender and receiver: the node-shutdown actor (from its watch's
// goroutine).
type PrepareForShutdown struct {
	Active bool
	Gen    int
}

func (m *PrepareForShutdown) Summary() string { return fmt.Sprintf("PrepareForShutdown(%v)", m.Active) }

// InhibitLockTaken is the outcome of taking a new delay lock after a
// shutdown was cancelled.
// Sender and receiver: the node-shutdown actor (from its own goroutine).
type InhibitLockTaken struct {
	Lock *logind.Lock
	Gen  int
	Err  error
}

func (m *InhibitLockTaken) Summary() string {
	if m.Err != nil {
		return "taking the inhibitor lock failed: " + m.Err.Error()
	}
	return "inhibitor lock taken"
}

// ShutdownGroupDue: the grace period of the priority group Gen is over.
// ShutdownPoll: time to list the pods again, to tell whether the group's
// are gone.
// Sender and receiver: the node-shutdown actor (its timers).
type (
	ShutdownGroupDue struct{ Gen int }
	ShutdownPoll     struct{}
)

func (m *ShutdownGroupDue) Summary() string {
	return fmt.Sprintf("shutdown group %d: grace period over", m.Gen)
}
func (*ShutdownPoll) Summary() string { return "shutdown: list the pods" }
