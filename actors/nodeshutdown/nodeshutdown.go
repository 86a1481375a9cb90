// Package nodeshutdown holds the node-shutdown actor, upstream's node
// shutdown manager (pkg/kubelet/nodeshutdown, systemd-logind): with a
// shutdown grace period configured it holds the node's shutdown back with a
// logind delay lock, and on PrepareForShutdown(true) has the node refuse
// pods and report itself not Ready, terminates the pods by priority group,
// lowest first, each within its group's grace, then releases the lock.
// PrepareForShutdown(false) makes the node Ready again and takes a new lock.
//
// The decisions are the pure Machine; the D-Bus calls (internal/logind) run
// off the mailbox; the pods go through the pod-manager (EvictPod, reason
// Terminated) and the pod-manager's ListPods tells when they are gone.
package nodeshutdown

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/atomicfile"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/logind"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "node-shutdown"

const (
	// StateFile is upstream's record of the last shutdown, in the root
	// directory.
	StateFile = "graceful_node_shutdown_state"
	// reconnectPeriod is the wait before connecting to the bus again
	// after the connection closed, as upstream's dbusReconnectPeriod.
	reconnectPeriod = time.Second
	// listTimeout bounds the wait for the pod-manager's pods.
	listTimeout = 5 * time.Second
)

// Params configure the node-shutdown actor.
type Params struct {
	// Groups are the priority groups (Groups); none: the actor does
	// nothing, as upstream's manager stub.
	Groups []Group
	// LogindConfDir is where the drop-in raising logind's delay goes:
	// logind.ConfDir but in tests.
	LogindConfDir string
	// RootDir holds StateFile; Metrics: the state is written and the
	// graceful shutdown metrics set (upstream's gate
	// GracefulNodeShutdownBasedOnPodPriority).
	RootDir string
	Metrics bool
	// PodManager answers ListPods and takes EvictPod and
	// NodeShuttingDown; StatusReporter takes NodeShuttingDown.
	PodManager, StatusReporter *actor.PID
	Events                     record.EventRecorder
	NodeName                   string
	Registry                   *supervision.Registry
	Log                        zerolog.Logger
}

// state is the state file's content, as upstream's.
type state struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
}

// Actor is the node-shutdown actor.
type Actor struct {
	supervision.Lifetime
	p   Params
	log zerolog.Logger
	m   *Machine

	watch *logind.Watch
	lock  *logind.Lock
	// gen counts the watches: a signal or an end of an older one is
	// ignored.
	gen int
	// watched: a watch was ever started (upstream retries only then).
	watched bool
}

// New returns a producer of node-shutdown actors.
func New(p Params) actor.Producer {
	if p.LogindConfDir == "" {
		p.LogindConfDir = logind.ConfDir
	}
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.m = NewMachine(a.p.Groups)
		if len(a.p.Groups) == 0 {
			a.showState(ctx, "off: no shutdown grace period")
			return
		}
		a.log.Info().Interface("groups", a.p.Groups).Msg("creating node shutdown manager")
		a.loadMetrics()
		a.connect(ctx)
	case *actor.Restarting, *actor.Stopping:
		a.close()
	case *messages.ReconnectLogind:
		a.connect(ctx)
	case *messages.ShutdownWatchStarted:
		a.started(ctx, m)
	case *messages.ShutdownWatchEnded:
		if m.Gen == a.gen && a.watch != nil {
			a.log.Error().Msg("ended watching the node for shutdown events")
			a.close()
			supervision.After(ctx, reconnectPeriod, &messages.ReconnectLogind{})
		}
	case *messages.PrepareForShutdown:
		if m.Gen == a.gen {
			a.log.Info().Bool("shuttingDown", m.Active).Msg("shutdown manager detected new shutdown event")
			a.step(ctx, EvPrepare{Active: m.Active})
		}
	case *messages.InhibitLockTaken:
		a.lockTaken(m)
	case *messages.PodList:
		a.step(ctx, EvPods{List: m})
	case *actor.DeadLetterResponse, error:
		a.log.Warn().Interface("reason", m).Msg("no pod list from the pod-manager")
		a.step(ctx, EvPods{})
	case *messages.ShutdownPoll:
		a.listPods(ctx)
	case *messages.ShutdownGroupDue:
		a.step(ctx, EvGroupDue{Gen: m.Gen})
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: Kind, Healthy: true, LastActivity: time.Now(), Detail: a.detail()})
	}
}

func (a *Actor) detail() string {
	switch {
	case len(a.p.Groups) == 0:
		return "off: no shutdown grace period"
	case a.m.Killing:
		return "node shutting down: terminating pods"
	case a.m.ShuttingDown:
		return "node shutting down: pods terminated, lock released"
	case a.lock != nil:
		return "holding the shutdown back (delay lock)"
	}
	return "not connected to logind"
}

func (a *Actor) showState(ctx actor.Context, s string) {
	if a.p.Registry != nil {
		a.p.Registry.SetState(ctx.Self().Id, s)
	}
}

// connect starts a watch off the mailbox: the connection, logind's delay
// raised if need be, the lock, the signals.
func (a *Actor) connect(ctx actor.Context) {
	dir, requested := a.p.LogindConfDir, Requested(a.p.Groups)
	supervision.Go(ctx, func(context.Context) messages.Message {
		w, err := logind.StartWatch(dir, requested)
		return &messages.ShutdownWatchStarted{Watch: w, Err: err}
	})
}

func (a *Actor) started(ctx actor.Context, m *messages.ShutdownWatchStarted) {
	if m.Err != nil {
		if !a.watched {
			// As upstream: the shutdown manager is not critical to the
			// node; a failure at the start is logged, not retried.
			a.log.Error().Err(m.Err).Msg("failed to start node shutdown manager")
			a.showState(ctx, "failed to start: "+m.Err.Error())
			return
		}
		a.log.Error().Err(m.Err).Msg("unable to watch the node for shutdown events")
		supervision.After(ctx, reconnectPeriod, &messages.ReconnectLogind{})
		return
	}
	if a.watch != nil {
		// A second watch: one started by a predecessor that restarted
		// mid-way reached this incarnation too.
		_ = m.Watch.Lock.Release()
		_ = m.Watch.Conn.Close()
		return
	}
	a.watched = true
	a.gen++
	a.watch = m.Watch
	a.replaceLock(m.Watch.Lock)
	if m.Watch.Raised > 0 {
		a.log.Info().Dur("inhibitDelayMax", m.Watch.Raised).Msg("logind's InhibitDelayMaxSec raised")
	}
	a.log.Info().Msg("watching the node for shutdown events (delay lock taken)")
	a.showState(ctx, a.detail())
	gen, self, system, signals := a.gen, ctx.Self(), ctx.ActorSystem(), m.Watch.Shutdown
	go func() {
		for active := range signals {
			supervision.TellFromOutside(system, self, &messages.PrepareForShutdown{Active: active, Gen: gen})
		}
		supervision.TellFromOutside(system, self, &messages.ShutdownWatchEnded{Gen: gen})
	}()
}

// replaceLock holds lock, releasing the one held before, as upstream's
// acquireInhibitLock. Closing a descriptor does not block.
func (a *Actor) replaceLock(lock *logind.Lock) {
	if err := a.lock.Release(); err != nil {
		a.log.Warn().Err(err).Msg("releasing the previous inhibitor lock")
	}
	a.lock = lock
}

func (a *Actor) lockTaken(m *messages.InhibitLockTaken) {
	if m.Gen != a.gen || a.watch == nil {
		_ = m.Lock.Release()
		return
	}
	if m.Err != nil {
		a.log.Error().Err(m.Err).Msg("taking the inhibitor lock again")
		return
	}
	a.replaceLock(m.Lock)
	a.log.Info().Msg("inhibitor lock taken again")
}

// close releases the lock and closes the connection (whose watch then
// ends).
func (a *Actor) close() {
	a.replaceLock(nil)
	if a.watch != nil {
		_ = a.watch.Conn.Close()
		a.watch = nil
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	for _, c := range a.m.Step(ev, time.Now()) {
		a.execute(ctx, c)
	}
	a.showState(ctx, a.detail())
}

func (a *Actor) execute(ctx actor.Context, c Cmd) {
	switch c := c.(type) {
	case CmdPublish:
		for _, pid := range []*actor.PID{a.p.PodManager, a.p.StatusReporter} {
			if pid != nil {
				supervision.Tell(ctx, pid, &messages.NodeShuttingDown{ShuttingDown: c.ShuttingDown})
			}
		}
	case CmdEvent:
		if a.p.Events != nil {
			ref := &v1.ObjectReference{Kind: "Node", Name: a.p.NodeName, UID: types.UID(a.p.NodeName)}
			a.p.Events.Event(ref, v1.EventTypeNormal, events.NodeShutdown, c.Message)
		}
	case CmdListPods:
		a.listPods(ctx)
	case CmdPoll:
		supervision.After(ctx, c.After, &messages.ShutdownPoll{})
	case CmdKill:
		a.log.Info().Str("pod", c.Pod.Namespace+"/"+c.Pod.Name).Int64("gracePeriod", c.GracePeriod).Msg("shutdown manager killing pod with gracePeriod")
		if a.p.PodManager != nil {
			supervision.Tell(ctx, a.p.PodManager, &messages.EvictPod{UID: c.Pod.UID, Name: c.Pod.Name, Namespace: c.Pod.Namespace,
				GracePeriod: c.GracePeriod, Reason: Reason, Message: Message})
		}
	case CmdGroupTimer:
		supervision.After(ctx, c.After, &messages.ShutdownGroupDue{Gen: c.Gen})
	case CmdReleaseLock:
		a.replaceLock(nil)
	case CmdTakeLock:
		if a.watch == nil {
			return
		}
		conn, gen := a.watch.Conn, a.gen
		supervision.Go(ctx, func(context.Context) messages.Message {
			lock, err := conn.InhibitShutdown()
			return &messages.InhibitLockTaken{Lock: lock, Gen: gen, Err: err}
		})
	case CmdStoreState:
		a.storeState(c)
	case CmdLog:
		a.log.Info().Int32("priority", c.Group.Priority).Int64("gracePeriod", c.Group.GracePeriod).Strs("pods", c.Pods).Msg(c.Message)
	}
}

func (a *Actor) listPods(ctx actor.Context) {
	if a.p.PodManager == nil {
		a.step(ctx, EvPods{List: &messages.PodList{}})
		return
	}
	ctx.RequestFuture(a.p.PodManager, &messages.ListPods{}, listTimeout).PipeTo(ctx.Self())
}

// storeState writes the state file and sets the metrics, as upstream
// (with its gate GracefulNodeShutdownBasedOnPodPriority only). The write
// is small and local; the shutdown is what waits on it.
func (a *Actor) storeState(c CmdStoreState) {
	if !a.p.Metrics {
		return
	}
	b, err := json.Marshal(state{StartTime: c.Start, EndTime: c.End})
	if err == nil {
		err = atomicfile.Write(filepath.Join(a.p.RootDir, StateFile), b, 0o644)
	}
	if err != nil {
		a.log.Error().Err(err).Msg("failed to store graceful shutdown state")
	}
	metrics.GracefulShutdownStartTime.Set(timestamp(c.Start))
	metrics.GracefulShutdownEndTime.Set(timestamp(c.End))
}

// loadMetrics sets the metrics from the state file of an earlier
// shutdown, as upstream at start.
func (a *Actor) loadMetrics() {
	if !a.p.Metrics {
		return
	}
	var s state
	b, err := os.ReadFile(filepath.Join(a.p.RootDir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		a.log.Error().Err(fmt.Errorf("%s: %w", StateFile, err)).Msg("failed to load graceful shutdown state")
		return
	}
	if !s.StartTime.IsZero() {
		metrics.GracefulShutdownStartTime.Set(timestamp(s.StartTime))
	}
	if !s.EndTime.IsZero() {
		metrics.GracefulShutdownEndTime.Set(timestamp(s.EndTime))
	}
}

func timestamp(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.Unix())
}
