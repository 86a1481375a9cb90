package supervision

import (
	"errors"
	"runtime/debug"

	"github.com/actorlet/actorlet/internal/parallel"
)

// stackOf is the stack to log for a recovered panic: the part's, for a
// parallel.Group's, else the current goroutine's.
func stackOf(rec any) []byte {
	var part *parallel.PartPanic
	if err, ok := rec.(error); ok && errors.As(err, &part) {
		return part.Stack
	}
	return debug.Stack()
}
