package supervision

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Props returns a fresh *actor.Props for one spawn of an actor of the given
// kind. Children of that actor are supervised by children (nil: protoactor's
// default, which suits actors that spawn none).
//
// A Props must not be reused for a second spawn: its mailbox statistics
// belong to one actor, and protoactor's Configure would stack middleware.
func (r *Registry) Props(kind string, producer actor.Producer, children actor.SupervisorStrategy) *actor.Props {
	mbox := &mailboxStats{}
	opts := []actor.PropsOption{
		actor.WithMailbox(actor.Unbounded(mbox)),
		actor.WithReceiverMiddleware(r.middleware(kind, mbox)),
	}
	if children != nil {
		opts = append(opts, actor.WithSupervisor(children))
	}
	return actor.PropsFromProducer(producer, opts...)
}

// middleware keeps the registry current: it registers the actor when it
// starts, counts restarts, forgets it once stopped, and records every message
// with its sender, summary and handling time. It also carries out injected
// faults, so that no actor has to know about them.
func (r *Registry) middleware(kind string, mbox *mailboxStats) actor.ReceiverMiddleware {
	return func(next actor.ReceiverFunc) actor.ReceiverFunc {
		return func(c actor.ReceiverContext, env *actor.MessageEnvelope) {
			// protoactor's mailbox reports a message received only after it
			// was handled without a panic; count the failed one here, or the
			// mailbox depth stays one too high for good.
			defer func() {
				if rec := recover(); rec != nil {
					mbox.received.Add(1)
					panic(rec)
				}
			}()
			defer trackLifetime(c, env.Message)()
			self := c.Self()
			lifecycle := false
			switch m := env.Message.(type) {
			case *actor.Started:
				r.register(self, c.Parent(), kind, mbox)
				lifecycle = true
			case *actor.Restarting:
				r.restarted(self)
				lifecycle = true
			case *actor.Stopping, *actor.Terminated:
				lifecycle = true
			case *actor.Stopped:
				defer r.remove(self)
				lifecycle = true
			case *InjectPanic:
				if m.InSyncWork {
					break // the actor arms it for its next sync work
				}
				r.received(self, env.Sender, TypeName(m), m.Summary(), true)
				panic(fmt.Sprintf("injected fault: %s", m.Reason))
			case *WorkPanicked:
				r.received(self, env.Sender, TypeName(m), m.Summary(), true)
				panic(workFailure(m))
			}
			e := r.received(self, env.Sender, TypeName(env.Message), summarize(env.Message), !lifecycle)
			start := time.Now()
			next(c, env)
			if e != nil && !lifecycle {
				e.handled(time.Since(start))
			}
		}
	}
}

// TypeName is the short type name of a message, e.g. "messages.RunStep".
func TypeName(msg any) string {
	return strings.TrimPrefix(fmt.Sprintf("%T", msg), "*")
}

func summarize(msg any) string {
	switch m := msg.(type) {
	case Message:
		return m.Summary()
	case *actor.Terminated:
		return "terminated: " + m.Who.Id
	default:
		return TypeName(msg)
	}
}

// Tell sends msg to pid with the sending actor recorded as its sender, so
// that the registry can attribute the message to an edge of the tree. Every
// message between actors goes through Tell; outside the tree (no sending
// actor), use TellFromOutside.
func Tell(ctx actor.SenderContext, pid *actor.PID, msg Message) {
	ctx.Request(pid, msg)
}

// TellFromOutside sends msg to pid from outside the actor tree: a signal
// handler, an HTTP handler or a watcher goroutine. The registry shows its
// sender as ExternalSender.
func TellFromOutside(system *actor.ActorSystem, pid *actor.PID, msg Message) {
	system.Root.Send(pid, msg)
}

// Go runs work outside the actor's mailbox and delivers its result to the
// actor as a message from itself, so that a long call (an image pull, a stop
// with a grace period, a relist) never blocks the mailbox. work must not
// touch the actor's state. Its argument is the context of the actor's
// Lifetime, which the actor must embed: stopping or restarting the actor
// cancels it, and work derives its calls' contexts (and their timeouts)
// from it.
//
// A panic in work does not kill the process: it is recovered, logged with
// the goroutine's stack (work that runs parts in parallel does so with a
// parallel.Group, whose Wait re-raises a part's panic here), and delivered to the actor as a
// WorkPanicked, which the middleware turns into a panic inside the
// actor's Receive. The actor thus fails as if the panic were its own, and
// its supervisor restarts it (or gives up) under its strategy.
func Go(ctx actor.Context, work func(context.Context) Message) {
	self, system, life := ctx.Self(), ctx.ActorSystem(), mustLifetime(ctx).Context()
	go func() {
		system.Root.RequestWithCustomSender(self, runRecovered(system.Logger(), self, func() Message { return work(life) }), self)
	}()
}

// runRecovered runs work and returns its result, or the WorkPanicked that
// reports its panic.
func runRecovered(log *slog.Logger, self *actor.PID, work func() Message) (msg Message) {
	defer func() {
		if rec := recover(); rec != nil {
			log.Error("work started off the mailbox panicked; the actor that started it fails",
				slog.String("actor", self.Id), slog.String("panic", fmt.Sprint(rec)), slog.String("stack", string(stackOf(rec))))
			msg = &WorkPanicked{Value: rec}
		}
	}()
	return work()
}

// workFailure is the panic value with which an actor fails for its work's
// panic: an error stays one (wrapped), so that a supervision.Fatal panic in
// work still makes the supervisor give up.
func workFailure(m *WorkPanicked) any {
	if err, ok := m.Value.(error); ok {
		return fmt.Errorf("work off the mailbox panicked: %w", err)
	}
	return fmt.Sprintf("work off the mailbox panicked: %v", m.Value)
}

// After delivers msg to the actor, from itself, once d has passed. The
// returned function cancels the delivery.
func After(ctx actor.Context, d time.Duration, msg Message) (cancel func() bool) {
	self, system := ctx.Self(), ctx.ActorSystem()
	return time.AfterFunc(d, func() { system.Root.RequestWithCustomSender(self, msg, self) }).Stop
}
