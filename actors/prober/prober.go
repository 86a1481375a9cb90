// Package prober holds the prober actor: one per pod, a child of its
// pod-worker, that runs the pod's liveness, readiness and startup probes as
// upstream's probe manager and workers (pkg/kubelet/prober) and tells the
// pod-worker when a result changes. Its decisions are a pure function of
// (state, event) (machine.go); this file is the edge: a timer per probe,
// each run off the mailbox, at most one at a time per probe.
package prober

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "prober"

// Runner runs one probe once: *prober.Runner (package
// github.com/actorlet/actorlet/prober), which applies the probe's timeout
// and records its Unhealthy events. containerID is the runtime ID, without
// the "containerd://" prefix. An error means the prober could not tell;
// the result is then thrown away, as upstream's.
type Runner interface {
	Probe(ctx context.Context, kind results.Kind, pod *v1.Pod, podStatus v1.PodStatus, c *v1.Container, containerID string) (results.Result, error)
}

// Params are the same for every pod's prober.
type Params struct {
	Runner Runner
	// KubeletStart is when the node agent started (see State.KubeletStart).
	KubeletStart time.Time
	// RunSlack is how long past its probe's timeoutSeconds a run may go
	// on before the prober gives up on it: a net for a runner that overran
	// its own bound, so longer than that bound (an exec probe's ExecSync
	// waits runtimeRequestTimeout past the timeout). 0 is 30 s.
	RunSlack time.Duration
	Registry *supervision.Registry
	Log      zerolog.Logger
}

// Props returns the Props the pod-manager gives every pod-worker to spawn
// its prober with. Each spawn gets fresh Props from the registry, as
// supervision.Registry.Props requires, so that every prober has a mailbox
// (and its statistics) of its own on the dashboard.
func Props(p Params) *actor.Props {
	return actor.PropsFromProducer(func() actor.Actor { return nil },
		actor.WithSpawnFunc(func(system *actor.ActorSystem, id string, _ *actor.Props, parent actor.SpawnerContext) (*actor.PID, error) {
			props := p.Registry.Props(Kind, New(p), nil)
			return actor.DefaultSpawner(system, id, props, parent)
		}))
}

// New returns a producer of one pod's prober; its incarnations share a
// count of restarts.
func New(p Params) actor.Producer {
	incarnations := &atomic.Uint64{}
	return func() actor.Actor {
		return &Actor{p: p, incarnations: incarnations, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Actor is the prober actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p            Params
	incarnations *atomic.Uint64
	log          zerolog.Logger
	state        State
	// timers cancel each probe's next run; runs cancel each probe's run
	// under way.
	timers map[Key]func() bool
	runs   map[Key]context.CancelFunc
	// probed are the probes that have metrics, and pod the labels of the
	// pod they were probed for, so that the metrics go with the pod.
	probed map[Key]bool
	pod    podLabels
}

type podLabels struct{ name, namespace, uid string }

// probeDue is a probe's timer firing. Sender: the prober, to itself.
type probeDue struct {
	Key Key
	Gen uint64
}

func (m *probeDue) Summary() string {
	return fmt.Sprintf("%s probe of %s due", m.Key.Kind, m.Key.Container)
}

// probeDone is a probe run's outcome. Sender: the prober's run, off the
// mailbox.
type probeDone struct {
	Key    Key
	Gen    uint64
	Result results.Result
	Err    error
	// Counted: the run ended by itself, without error, in Took; the prober
	// counts it in the metrics unless the probe's series were deleted
	// meanwhile.
	Counted bool
	Took    time.Duration
}

func (m *probeDone) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s probe of %s: error: %v", m.Key.Kind, m.Key.Container, m.Err)
	}
	return fmt.Sprintf("%s probe of %s: %s", m.Key.Kind, m.Key.Container, m.Result)
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		n := a.incarnations.Add(1)
		a.state = State{KubeletStart: a.p.KubeletStart, Restarted: n > 1}
		a.timers, a.runs, a.probed = map[Key]func() bool{}, map[Key]context.CancelFunc{}, map[Key]bool{}
	case *actor.Restarting:
		// The next incarnation starts its probes and their series over;
		// it would not know these to delete them.
		a.stopAll()
		a.forgetMetrics(nil, false)
	case *actor.Stopping:
		a.stopAll()
		a.forgetMetrics(nil, false)
	case *messages.ProbeTargets:
		if m.Pod != nil {
			a.pod = podLabels{name: m.Pod.Name, namespace: m.Pod.Namespace, uid: string(m.Pod.UID)}
		}
		a.step(ctx, EvTargets{Pod: m.Pod, Status: m.Status, Terminating: m.Terminating, Rand: rand.Float64})
		if m.Pod == nil {
			a.forgetMetrics(nil, false)
		} else {
			a.forgetMetrics(m.Pod, m.Terminating)
		}
	case *probeDue:
		a.step(ctx, EvTick{Key: m.Key, Gen: m.Gen})
	case *probeDone:
		if a.state.workers[m.Key].gen == m.Gen {
			delete(a.runs, m.Key)
		}
		// Counted here, on the mailbox, not by the run: a run that ended
		// as its probe stopped would make the series again after
		// forgetMetrics deleted them, and they would stay for good.
		if m.Counted && a.probed[m.Key] {
			observe(m.Key.Kind, m.Key.Container, a.pod, m.Result, m.Took)
		}
		a.step(ctx, EvResult{Key: m.Key, Gen: m.Gen, Result: m.Result, Err: m.Err})
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	for _, c := range a.state.Step(ev, time.Now()) {
		a.execute(ctx, c)
	}
}

// execute carries out one command at the edge.
func (a *Actor) execute(ctx actor.Context, c Command) {
	switch c := c.(type) {
	case CmdSchedule:
		if cancel := a.timers[c.Key]; cancel != nil {
			cancel()
		}
		a.timers[c.Key] = supervision.After(ctx, c.After, &probeDue{Key: c.Key, Gen: c.Gen})
	case CmdCancel:
		if cancel := a.timers[c.Key]; cancel != nil {
			cancel()
			delete(a.timers, c.Key)
		}
		if cancel := a.runs[c.Key]; cancel != nil {
			cancel()
			delete(a.runs, c.Key)
		}
	case CmdRun:
		delete(a.timers, c.Key)
		if cancel := a.runs[c.Key]; cancel != nil {
			cancel()
		}
		// The runner applies the probe's timeout; this bound only keeps a
		// runner that overran it from holding the probe for ever.
		slack := a.p.RunSlack
		if slack <= 0 {
			slack = defaultRunSlack
		}
		runCtx, cancel := context.WithTimeout(a.Context(), time.Duration(timeoutOf(c))*time.Second+slack)
		a.runs[c.Key] = cancel
		a.probed[c.Key] = true
		runner, kind := a.p.Runner, c.Key.Kind
		supervision.Go(ctx, func(context.Context) messages.Message {
			defer cancel()
			start := time.Now()
			r, err := runner.Probe(runCtx, kind, c.Pod, c.Status, c.Container, c.ContainerID)
			// A run cut short by its probe's stop is not counted.
			counted := err == nil && runCtx.Err() == nil
			return &probeDone{Key: c.Key, Gen: c.Gen, Result: r, Err: err, Counted: counted, Took: time.Since(start)}
		})
	case CmdReport:
		a.log.Info().Str("pod", a.pod.namespace+"/"+a.pod.name).Str("container", c.ContainerName).
			Str("probe", c.Kind.String()).Str("result", c.Result.String()).Msg("probe result changed")
		supervision.Tell(ctx, ctx.Parent(), &messages.ProbeResultChanged{ContainerID: c.ContainerID,
			ContainerName: c.ContainerName, Kind: c.Kind, Result: c.Result})
	}
}

// observe counts one probe run in upstream's metrics.
func observe(kind results.Kind, container string, p podLabels, r results.Result, took time.Duration) {
	result := metrics.ProbeResultUnknown
	switch r {
	case results.Success:
		result = metrics.ProbeResultSuccessful
	case results.Failure:
		result = metrics.ProbeResultFailed
	}
	metrics.ProberProbeTotal.WithLabelValues(kind.String(), result, container, p.name, p.namespace, p.uid).Inc()
	if r != results.Failure {
		metrics.ProberProbeDuration.WithLabelValues(kind.String(), container, p.name, p.namespace).Observe(took.Seconds())
	}
}

// forgetMetrics deletes the metrics of the probes pod no longer has (of
// every probe when pod is nil, of its liveness and startup probes when it
// is terminating), as upstream's workers do when they stop.
func (a *Actor) forgetMetrics(pod *v1.Pod, terminating bool) {
	var st State
	if pod != nil {
		st.Pod = pod
	}
	for k := range a.probed {
		if pod != nil && probeOf(st.container(k.Container), k.Kind) != nil && (!terminating || k.Kind == results.Readiness) {
			continue
		}
		delete(a.probed, k)
		for _, r := range []string{metrics.ProbeResultSuccessful, metrics.ProbeResultFailed, metrics.ProbeResultUnknown} {
			metrics.ProberProbeTotal.DeleteLabelValues(k.Kind.String(), r, k.Container, a.pod.name, a.pod.namespace, a.pod.uid)
		}
		metrics.ProberProbeDuration.Delete(prometheus.Labels{"probe_type": k.Kind.String(), "container": k.Container,
			"pod": a.pod.name, "namespace": a.pod.namespace})
	}
}

// stopAll stops every timer and run.
func (a *Actor) stopAll() {
	for _, cancel := range a.timers {
		cancel()
	}
	for _, cancel := range a.runs {
		cancel()
	}
	a.timers, a.runs = map[Key]func() bool{}, map[Key]context.CancelFunc{}
}

// defaultRunSlack is Params.RunSlack's default.
const defaultRunSlack = 30 * time.Second

func timeoutOf(c CmdRun) int32 {
	return threshold(probeOf(c.Container, c.Key.Kind).TimeoutSeconds)
}
