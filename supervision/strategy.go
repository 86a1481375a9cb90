package supervision

import (
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlet/actorlet/internal/retry"
)

// FatalError marks a failure that restarting cannot repair; an actor panics
// with one (panic(supervision.Fatal(err))) to have its supervisor give up on
// it at once.
type FatalError struct{ Err error }

func (e *FatalError) Error() string { return "fatal: " + e.Err.Error() }
func (e *FatalError) Unwrap() error { return e.Err }

// Fatal wraps err so that supervision escalates instead of restarting.
func Fatal(err error) error { return &FatalError{Err: err} }

// IsFatal reports whether a failure reason (a panic value) is fatal.
func IsFatal(reason any) bool {
	err, ok := reason.(error)
	var fatal *FatalError
	return ok && errors.As(err, &fatal)
}

// Backoff is a one-for-one strategy: a failed child is restarted alone after
// a delay that starts at Initial and doubles with each further failure, up to
// Max. A child that ran ResetAfter without failing starts again at Initial.
// Its siblings are never touched.
//
// When MaxRestarts is positive and a child fails more often than that within
// ResetAfter, or when the failure is fatal, the strategy gives up: the child
// is stopped and GiveUp (when set) is called, which escalates to bootstrap.
type Backoff struct {
	Initial     time.Duration
	Max         time.Duration
	ResetAfter  time.Duration
	MaxRestarts int
	Registry    *Registry
	GiveUp      func(child *actor.PID, reason any)
}

var _ actor.SupervisorStrategy = (*Backoff)(nil)

// Delay is the wait before the restart that follows the n-th failure in a
// row: retry.Backoff's delays. The count itself, and its reset after
// ResetAfter without a failure, live in the child's
// actor.RestartStatistics, which protoactor keeps with the child across
// restarts and hands to the strategy.
func (b *Backoff) Delay(n int) time.Duration {
	return retry.Backoff{Initial: b.Initial, Max: b.Max}.After(n)
}

// HandleFailure implements actor.SupervisorStrategy.
func (b *Backoff) HandleFailure(_ *actor.ActorSystem, supervisor actor.Supervisor, child *actor.PID, rs *actor.RestartStatistics, reason any, _ any) {
	if b.Registry != nil {
		b.Registry.failed(child, fmt.Sprint(reason))
	}
	if rs.NumberOfFailures(b.ResetAfter) == 0 {
		rs.Reset()
	}
	rs.Fail()
	failures := rs.FailureCount()
	if IsFatal(reason) || (b.MaxRestarts > 0 && failures > b.MaxRestarts) {
		supervisor.StopChildren(child)
		if b.GiveUp != nil {
			b.GiveUp(child, reason)
		}
		return
	}
	// The child's mailbox stays suspended until the restart, so messages
	// sent to it meanwhile wait instead of being lost.
	time.AfterFunc(b.Delay(failures), func() { supervisor.RestartChildren(child) })
}
