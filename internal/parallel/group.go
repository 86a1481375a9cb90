// Package parallel runs the parallel parts of one piece of work, so that a
// panic in a part fails the work rather than the process.
package parallel

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Group runs the parallel parts of one piece of work (the containers of a
// pod stopped side by side, logs rotated side by side). A panic in a part's
// own goroutine would be out of reach of any recovery in the work's
// goroutine (supervision.Go's) and kill the process; Group recovers it, and
// Wait panics with it in the work's goroutine once every part returned, so
// that it fails the actor that started the work. The zero Group is ready to use.
type Group struct {
	wg     sync.WaitGroup
	mu     sync.Mutex
	failed *PartPanic
}

// PartPanic is the panic of a part of a Group, re-raised by Wait: the
// part's panic value and the stack of the part's goroutine.
type PartPanic struct {
	Value any
	Stack []byte
}

func (p *PartPanic) Error() string {
	return fmt.Sprintf("a parallel part of the work panicked: %v", p.Value)
}

// Unwrap is the part's panic value when it is an error, so that a Fatal
// panic in a part stays fatal.
func (p *PartPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// Go runs part in a goroutine of its own.
func (g *Group) Go(part func()) {
	g.wg.Go(func() {
		defer func() {
			if rec := recover(); rec != nil {
				g.mu.Lock()
				defer g.mu.Unlock()
				if g.failed == nil {
					g.failed = &PartPanic{Value: rec, Stack: debug.Stack()}
				}
			}
		}()
		part()
	})
}

// Wait waits for every part, then panics with the first part's panic, if
// any.
func (g *Group) Wait() {
	g.wg.Wait()
	g.mu.Lock()
	failed := g.failed
	g.mu.Unlock()
	if failed != nil {
		panic(failed)
	}
}
