package supervision

import (
	"context"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Lifetime is the context of one incarnation of an actor: it is cancelled
// when the actor stops or is restarted, so that the I/O the actor started
// (a CRI call, an API request, a reader goroutine) ends with it instead of
// running on for an actor that is gone. An actor embeds a Lifetime; the
// middleware of Registry.Props begins it at every Started, so a restarted
// actor's new incarnation gets a fresh one, and cancels it once the actor
// has handled Restarting or Stopping. Go hands it to the work it starts.
//
// The zero Lifetime is ready to use: an actor spawned without the
// registry's middleware (a unit test's) gets a context on first use that
// nothing cancels.
type Lifetime struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// Context is the incarnation's context. Only the actor's Receive calls it
// (it is not safe for concurrent use); work started with Go receives it as
// its argument instead.
func (l *Lifetime) Context() context.Context {
	if l.ctx == nil {
		l.begin()
	}
	return l.ctx
}

// lifetime gives the middleware and Go the Lifetime an actor embeds.
func (l *Lifetime) lifetime() *Lifetime { return l }

// begin starts a new incarnation's context, ending the previous one's.
func (l *Lifetime) begin() {
	l.end()
	l.ctx, l.cancel = context.WithCancel(context.Background())
}

// end cancels the incarnation's context.
func (l *Lifetime) end() {
	if l.cancel != nil {
		l.cancel()
	}
}

// withLifetime is an actor that embeds a Lifetime.
type withLifetime interface{ lifetime() *Lifetime }

// lifetimeOf is the Lifetime of a, or nil when a embeds none.
func lifetimeOf(a actor.Actor) *Lifetime {
	if w, ok := a.(withLifetime); ok {
		return w.lifetime()
	}
	return nil
}

// mustLifetime is the Lifetime of the actor whose context ctx is: every
// actor that starts work with Go embeds one.
func mustLifetime(ctx actor.Context) *Lifetime {
	l := lifetimeOf(ctx.Actor())
	if l == nil {
		panic(fmt.Sprintf("supervision.Go: actor %T does not embed supervision.Lifetime", ctx.Actor()))
	}
	return l
}

// trackLifetime keeps the Lifetime of the actor that handles msg in step
// with its lifecycle: a new context when it starts, the old one cancelled
// once it has handled Restarting, Stopping or Stopped (its handler still
// sees the context live). It returns what to run after the actor handled
// msg, even by panicking.
func trackLifetime(c actor.ReceiverContext, msg any) (after func()) {
	l := lifetimeOf(c.Actor())
	if l == nil {
		return func() {}
	}
	switch msg.(type) {
	case *actor.Started:
		l.begin()
	case *actor.Restarting, *actor.Stopping, *actor.Stopped:
		return l.end
	}
	return func() {}
}
