package messages

import (
	"fmt"
	"time"
)

// RunStep asks the bootstrap actor to run one start-up step.
// Sender: the bootstrap actor itself (each finished step sends the next).
// Receiver: the bootstrap actor.
type RunStep struct {
	Step string
}

func (m *RunStep) Summary() string { return "run step " + m.Step }

// Shutdown asks the bootstrap actor to stop the actor tree, in the reverse
// order of start, and report the exit code.
// Sender: cmd/actorlet on SIGTERM/SIGINT (from outside the tree).
// Receiver: the bootstrap actor.
type Shutdown struct {
	Signal string
}

func (m *Shutdown) Summary() string { return "shutdown on " + m.Signal }

// ChildFailedFatally reports that a runtime actor failed beyond what its
// supervision strategy may repair (a fatal error, or too many restarts), so
// the node agent must stop with exit code 1.
// Sender: the supervision strategy of bootstrap's children, on their behalf.
// Receiver: the bootstrap actor.
type ChildFailedFatally struct {
	Child  string
	Reason string
	At     time.Time
}

func (m *ChildFailedFatally) Summary() string {
	return fmt.Sprintf("%s failed fatally: %s", m.Child, m.Reason)
}
