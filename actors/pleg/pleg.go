// Package pleg holds the pod lifecycle event generator actor: it relists the
// container runtime's sandboxes and containers periodically, diffs each list
// against the previous one, and sends the changes, per pod, to the
// pod-manager, which routes them to the pods' workers. /healthz reports it
// unhealthy when no relist succeeded for RelistThreshold.
package pleg

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "pleg"

// RelistThreshold is how long PLEG may go without a successful relist before
// it reports itself unhealthy (upstream: 3 minutes).
const RelistThreshold = 3 * time.Minute

// Labels the kubelet puts on sandboxes and containers (upstream's keys).
const (
	labelPodUID       = "io.kubernetes.pod.uid"
	labelPodName      = "io.kubernetes.pod.name"
	labelPodNamespace = "io.kubernetes.pod.namespace"
)

// Params configure the PLEG actor.
type Params struct {
	Runtime    runtimeapi.RuntimeServiceClient
	Period     time.Duration // upstream: 1 s
	Timeout    time.Duration // bound on one relist
	PodManager *actor.PID
	Log        zerolog.Logger
}

// Actor is the PLEG actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger

	// previous is what the last successful relist saw, by runtime ID.
	previous map[string]record
	// relisting is true while a relist runs, so that a slow runtime does
	// not pile relists up.
	relisting  bool
	lastRelist time.Time
	lastErr    error
	cancelTick func() bool
}

// record is one sandbox or container as a relist saw it.
type record struct {
	pod     podRef
	sandbox bool
	state   string
}

type podRef struct {
	uid             types.UID
	name, namespace string
}

// New returns a producer of the PLEG actor.
func New(p Params) actor.Producer {
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.relist(ctx)
	case *actor.Restarting, *actor.Stopping:
		if a.cancelTick != nil {
			a.cancelTick()
		}
	case *messages.Relist:
		a.relist(ctx)
	case *messages.Relisted:
		a.relisting = false
		a.cancelTick = supervision.After(ctx, a.p.Period, &messages.Relist{})
		if m.Err != nil {
			a.lastErr = m.Err
			a.log.Warn().Err(m.Err).Msg("relist failed")
			return
		}
		a.lastErr = nil
		a.lastRelist = m.At
		recordRelist(m)
		current := index(m)
		if events := diff(a.previous, current); len(events) > 0 {
			supervision.Tell(ctx, a.p.PodManager, &messages.PodLifecycleEvents{Events: events})
		}
		a.previous = current
	case *messages.HealthRequest:
		ctx.Respond(a.health(time.Now()))
	}
}

func (a *Actor) relist(ctx actor.Context) {
	if a.relisting {
		return
	}
	a.relisting = true
	if !a.lastRelist.IsZero() {
		metrics.PLEGRelistInterval.Observe(time.Since(a.lastRelist).Seconds())
	}
	rt, timeout := a.p.Runtime, a.p.Timeout
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, timeout)
		defer cancel()
		at := time.Now()
		defer func() { metrics.PLEGRelistDuration.Observe(time.Since(at).Seconds()) }()
		sandboxes, err := rt.ListPodSandbox(c, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			return &messages.Relisted{Err: fmt.Errorf("list pod sandboxes: %w", err)}
		}
		containers, err := rt.ListContainers(c, &runtimeapi.ListContainersRequest{})
		if err != nil {
			return &messages.Relisted{Err: fmt.Errorf("list containers: %w", err)}
		}
		return &messages.Relisted{At: at, Sandboxes: sandboxes.Items, Containers: containers.Containers}
	})
}

func (a *Actor) health(now time.Time) *messages.HealthReport {
	r := &messages.HealthReport{Name: Kind, LastActivity: a.lastRelist}
	switch {
	case a.lastRelist.IsZero():
		r.Detail = "no relist yet"
		r.Healthy = a.lastErr == nil
	case now.Sub(a.lastRelist) > RelistThreshold:
		r.Detail = fmt.Sprintf("pleg was last seen active %s ago; threshold is %s", now.Sub(a.lastRelist).Round(time.Second), RelistThreshold)
	default:
		r.Healthy = true
		r.Detail = fmt.Sprintf("last relist %s ago", now.Sub(a.lastRelist).Round(time.Millisecond))
	}
	return r
}

func index(m *messages.Relisted) map[string]record {
	out := make(map[string]record, len(m.Sandboxes)+len(m.Containers))
	for _, s := range m.Sandboxes {
		out[s.Id] = record{pod: ref(s.Labels), sandbox: true, state: s.State.String()}
	}
	for _, c := range m.Containers {
		out[c.Id] = record{pod: ref(c.Labels), state: c.State.String()}
	}
	return out
}

func ref(labels map[string]string) podRef {
	return podRef{uid: types.UID(labels[labelPodUID]), name: labels[labelPodName], namespace: labels[labelPodNamespace]}
}

// diff turns two relists into lifecycle events, as upstream's generic PLEG:
// a container that appears running or turns running has started; one that
// turns exited (or appears exited) has died; one that is gone was removed.
// A sandbox that appears or changes state is SandboxChanged, one that is
// gone SandboxRemoved. Objects without a
// pod UID label are not the kubelet's and are ignored.
func diff(previous, current map[string]record) []messages.PodLifecycleEvent {
	var events []messages.PodLifecycleEvent
	emit := func(id string, r record, t messages.PodLifecycleEventType) {
		if r.pod.uid == "" {
			return
		}
		state := r.state
		if t == messages.SandboxRemoved || t == messages.ContainerRemoved {
			state = ""
		}
		events = append(events, messages.PodLifecycleEvent{PodUID: r.pod.uid, PodName: r.pod.name, PodNamespace: r.pod.namespace, Type: t, ID: id, State: state})
	}
	for id, cur := range current {
		old, seen := previous[id]
		if seen && old.state == cur.state {
			continue
		}
		switch {
		case cur.sandbox:
			emit(id, cur, messages.SandboxChanged)
		case cur.state == runtimeapi.ContainerState_CONTAINER_RUNNING.String():
			emit(id, cur, messages.ContainerStarted)
		case cur.state == runtimeapi.ContainerState_CONTAINER_EXITED.String():
			emit(id, cur, messages.ContainerDied)
		}
	}
	for id, old := range previous {
		if _, ok := current[id]; ok {
			continue
		}
		if old.sandbox {
			emit(id, old, messages.SandboxRemoved)
		} else {
			emit(id, old, messages.ContainerRemoved)
		}
	}
	return events
}
