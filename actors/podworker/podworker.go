// Package podworker holds the pod-worker actor: one per pod UID, owning that
// pod's life from the first sync to the removal of its sandbox. Its state
// machine (machine.go) is a pure function of (state, event); this file is the
// edge that turns the machine's commands into runtime calls, run outside the
// mailbox, whose outcomes come back as messages.
package podworker

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/internal/tracing"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = messages.PodWorkerKind

// Runtime is what a pod-worker needs of the container runtime.
type Runtime interface {
	// SyncPod runs one sync pass toward pod's spec, its containers
	// mounting vols, deciding on the probe results given.
	SyncPod(ctx context.Context, pod *v1.Pod, vols messages.PodVolumes, probes results.Pod) SyncOutcome
	// ObservePod reports the pod's status without acting on it.
	ObservePod(ctx context.Context, pod *v1.Pod) SyncOutcome
	// KillPod stops the pod's containers within grace seconds, then removes
	// its containers and sandboxes; stopped is called in between, with the
	// pod's terminal status when there is one. pod is the latest spec, its
	// status the last one reported; nil for an orphan.
	KillPod(ctx context.Context, pod *v1.Pod, uid types.UID, name, namespace string, grace int64, stopped func(final *v1.PodStatus)) error
}

// SyncOutcome is what one sync pass reports.
type SyncOutcome = messages.PodSynced

// Params identify a worker's pod and give it its runtime. They are the
// same for every incarnation of the worker and nothing in them changes
// while it runs: a restarted worker adopts what its predecessor created.
type Params struct {
	UID             types.UID
	Name, Namespace string
	Runtime         Runtime
	Log             zerolog.Logger
	// Registry, when set, shows the worker's phase on the dashboard.
	Registry *supervision.Registry
	// Prober, when set, makes the worker's prober: a child that runs the
	// pod's probes and reports their results (actors/prober).
	Prober *actor.Props
	// DRA is the dra-manager, which prepares the pod's ResourceClaims;
	// nil: there is none (no API server), and a pod with claims is
	// refused before it reaches a worker.
	DRA *actor.PID
	// Tracer makes the pod's sync spans (syncPod, syncTerminatingPod,
	// syncTerminatedPod), as upstream's; nil: none.
	Tracer trace.Tracer
}

// history is what one pod's worker keeps across its restarts, owned by the
// producer that makes each incarnation.
type history struct {
	// incarnations numbers the actor's restarts so that the outcome of an
	// operation started by a previous incarnation is never taken for one of
	// this incarnation's.
	incarnations atomic.Uint64
	// synced and startObserved make the pod's first sync and its start
	// measured once (metrics.go).
	synced, startObserved atomic.Bool
	// health is the allocatedResourcesStatus of the pod's containers, by
	// source then container (messages.ResourceHealthChanged): its senders
	// tell only changes, which a restarted worker must not lose. Only
	// the incarnation running touches it.
	health map[string]map[string][]v1.ResourceStatus
}

// Actor is the pod-worker actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p     Params
	hist  *history
	log   zerolog.Logger
	state State

	// prober is the child that probes the pod's containers; nil without
	// Params.Prober.
	prober *actor.PID

	cancelSync, cancelKill context.CancelFunc
	// endTerminated closes the syncTerminatedPod span, open while the
	// pod's claims are unprepared.
	endTerminated func(error)
	cancelRetry   func() bool
	reported      *v1.PodStatus
	// raw is the status last given to report, before the devices'
	// health was written into it.
	raw           *v1.PodStatus
	reportedPhase Phase
	// synced is the status of the current sync pass last reported: the
	// next pass's previous status, as upstream's status manager gives it
	// (the API's copy of the pod lags behind it).
	synced *v1.PodStatus
	// specChanged: an update changed the pod (its spec, labels or
	// annotations) since the last sync started.
	specChanged bool
	// injectedFault, when set, is the reason of a panic injected into the
	// next sync work (supervision.InjectPanic with InSyncWork). It lives in the
	// actor, so that it fires once: the restarted worker has none.
	injectedFault string
}

// New returns a producer of the pod-worker for p's pod. Every incarnation
// it makes shares one history.
func New(p Params) actor.Producer { return newProducer(p, &history{}) }

func newProducer(p Params, hist *history) actor.Producer {
	return func() actor.Actor {
		return &Actor{p: p, hist: hist, log: p.Log.With().Str("actor", Kind).Str("pod", p.Namespace+"/"+p.Name).Str("uid", string(p.UID)).Logger()}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// Operation numbers start past every earlier incarnation's.
		a.state = State{gen: a.hist.incarnations.Add(1) << 32}
		a.reportedPhase = -1
		a.publishState(ctx)
		if a.p.Prober != nil {
			// A restart stops the children: each incarnation has its own
			// prober, whose probes start over from the next sync's targets.
			a.prober = ctx.SpawnPrefix(a.p.Prober, "prober")
		}
		// Ask for the pod: on a first start and after a restart alike, the
		// pod-manager answers with the desired pod or its termination.
		supervision.Tell(ctx, ctx.Parent(), &messages.PodWorkerStarted{UID: a.p.UID})
	case *actor.Restarting, *actor.Stopping:
		a.cancelAll()
	case *messages.UpdatePod:
		// The pod-manager sends a pod again only when its spec, labels or
		// annotations changed, or to a worker that (re)started and has
		// none yet.
		a.specChanged = a.specChanged || a.state.Pod != nil
		a.step(ctx, EvUpdate{Pod: m.Pod})
	case *messages.TerminatePod:
		a.step(ctx, EvTerminate{Grace: m.GracePeriod, Pod: m.Pod})
	case *messages.RuntimeChanged:
		a.step(ctx, EvRuntimeChanged{Events: m.Events})
	case *messages.RetryDue:
		a.step(ctx, EvRetry{Gen: m.Gen})
	case *messages.PodSynced:
		terminal := m.Status.Phase == v1.PodSucceeded || m.Status.Phase == v1.PodFailed
		a.step(ctx, EvSynced{Gen: m.Gen, RetryAfter: m.RetryAfter, Err: m.Err, Terminal: terminal, Observed: m.Observed, Status: &m.Status})
	case *messages.PodStopped:
		a.step(ctx, EvStopped{Gen: m.Gen, Status: m.Status})
	case *supervision.InjectPanic:
		// Only with InSyncWork does the middleware let it through. A sync
		// is started for it, as an update with the same pod would.
		a.injectedFault = m.Reason
		a.log.Warn().Str("reason", m.Reason).Msg("fault injected: the next sync work will panic")
		if a.state.Pod != nil {
			a.step(ctx, EvUpdate{Pod: a.state.Pod})
		}
	case *messages.PodKilled:
		a.step(ctx, EvKilled{Gen: m.Gen, Err: m.Err})
	case *messages.VolumesReady:
		a.step(ctx, EvVolumesReady{Volumes: m.Volumes})
	case *messages.ClaimsPrepared:
		a.step(ctx, EvClaimsPrepared{Devices: m.Devices})
	case *messages.ClaimsUnprepared:
		a.step(ctx, EvClaimsUnprepared{})
	case *messages.ProbeResultChanged:
		a.step(ctx, EvProbeResult{ContainerID: m.ContainerID, Kind: m.Kind, Result: m.Result})
	case *messages.ResourceHealthChanged:
		if a.hist.health == nil {
			a.hist.health = map[string]map[string][]v1.ResourceStatus{}
		}
		a.hist.health[m.Source] = m.Containers
		if a.raw != nil {
			a.report(ctx, a.raw)
		}
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	cmds := a.state.Step(ev, time.Now())
	a.publishState(ctx)
	for _, c := range cmds {
		a.execute(ctx, c)
	}
	if a.state.Phase != a.reportedPhase {
		a.report(ctx, a.raw)
	}
}

// execute carries out one command at the edge.
func (a *Actor) execute(ctx actor.Context, c Command) {
	rt, p := a.p.Runtime, a.p
	switch c := c.(type) {
	case CmdStartSync:
		opCtx, cancel := context.WithCancel(a.Context())
		a.cancelSync = cancel
		op := a.syncOperation()
		pod := c.Pod
		if a.synced != nil {
			// A shallow copy: the pass only reads the pod.
			withStatus := *pod
			withStatus.Status = previousStatus(pod.Status, a.synced)
			pod = &withStatus
		}
		fault := a.injectedFault
		a.injectedFault = ""
		tracer := a.tracer()
		supervision.Go(ctx, func(context.Context) messages.Message {
			defer cancel()
			if fault != "" {
				panic("injected fault in sync work: " + fault)
			}
			start := time.Now()
			// The pass's runtime calls are the span's children.
			spanCtx, end := tracing.PodSpan(opCtx, tracer, "syncPod", p.UID, p.Name, p.Namespace, op)
			var out SyncOutcome
			if c.WaitingForVolumes {
				out = rt.ObservePod(spanCtx, pod)
			} else {
				out = rt.SyncPod(podruntime.WithCDIDevices(spanCtx, c.Devices), pod, c.Volumes, c.Probes)
			}
			end(out.Err)
			metrics.PodWorkerDuration.WithLabelValues(op).Observe(time.Since(start).Seconds())
			out.Gen = c.Gen
			return &out
		})
	case CmdCancelSync:
		if a.cancelSync != nil {
			a.cancelSync()
		}
	case CmdStartKill:
		a.log.Info().Int64("gracePeriod", c.Grace).Msg("killing the pod")
		opCtx, cancel := context.WithCancel(a.Context())
		a.cancelKill = cancel
		pod := a.state.Pod
		if pod != nil && a.synced != nil {
			// Whether the pod ran to completion (its containers are then
			// kept) may show only in its status: its active deadline
			// passed.
			withStatus := *pod
			withStatus.Status = previousStatus(pod.Status, a.synced)
			pod = &withStatus
		}
		system, self := ctx.ActorSystem(), ctx.Self()
		stopped := func(final *v1.PodStatus) {
			supervision.TellFromOutside(system, self, &messages.PodStopped{Gen: c.Gen, Status: final})
		}
		tracer := a.tracer()
		supervision.Go(ctx, func(context.Context) messages.Message {
			defer cancel()
			start := time.Now()
			killCtx, end := opCtx, func(error) {}
			if pod != nil {
				// An orphan has no span, as upstream's
				// SyncTerminatingRuntimePod.
				killCtx, end = tracing.PodSpan(opCtx, tracer, "syncTerminatingPod", p.UID, p.Name, p.Namespace, "")
			}
			err := rt.KillPod(killCtx, pod, p.UID, p.Name, p.Namespace, c.Grace, stopped)
			end(err)
			metrics.PodWorkerDuration.WithLabelValues(metrics.OperationKill).Observe(time.Since(start).Seconds())
			return &messages.PodKilled{Gen: c.Gen, Err: err}
		})
	case CmdCancelKill:
		if a.cancelKill != nil {
			a.cancelKill()
		}
	case CmdScheduleRetry:
		if a.cancelRetry != nil {
			a.cancelRetry()
		}
		a.cancelRetry = supervision.After(ctx, c.After, &messages.RetryDue{Gen: c.Gen})
	case CmdReportStatus:
		a.synced = c.Status
		a.observePodStart(c.Status)
		a.report(ctx, c.Status)
	case CmdSetProbeTargets:
		if a.prober != nil {
			m := &messages.ProbeTargets{Pod: c.Pod, Terminating: c.Terminating}
			if c.Status != nil {
				m.Status = *c.Status
			}
			supervision.Tell(ctx, a.prober, m)
		}
	case CmdKillFailed:
		a.log.Warn().Err(c.Err).Msg("killing the pod failed; retrying")
	case CmdReportStopped:
		// A pod that never started leaves no pulling time behind.
		metrics.TakePodImagePulls(p.UID)
		supervision.Tell(ctx, ctx.Parent(), &messages.PodWorkerStopped{UID: p.UID})
	case CmdFinish:
		a.startTerminatedSpan()
		a.endTerminated(nil)
		a.endTerminated = nil
		a.observeNoClaims(metrics.DRAUnprepare)
		a.log.Info().Msg("pod terminated and cleaned up")
		supervision.Tell(ctx, ctx.Parent(), &messages.PodWorkerDone{UID: p.UID})
	case CmdPrepareClaims:
		if p.DRA == nil {
			supervision.Tell(ctx, ctx.Self(), &messages.ClaimsPrepared{UID: p.UID})
			break
		}
		supervision.Tell(ctx, p.DRA, &messages.PrepareClaims{Pod: c.Pod})
	case CmdUnprepareClaims:
		a.startTerminatedSpan()
		if p.DRA == nil || c.Pod == nil {
			supervision.Tell(ctx, ctx.Self(), &messages.ClaimsUnprepared{UID: p.UID})
			break
		}
		supervision.Tell(ctx, p.DRA, &messages.UnprepareClaims{Pod: c.Pod})
	}
}

// tracer is the one of the sync spans; a no-op one without Params.Tracer.
func (a *Actor) tracer() trace.Tracer {
	if a.p.Tracer == nil {
		return tracing.Tracer(nil)
	}
	return a.p.Tracer
}

// startTerminatedSpan opens the syncTerminatedPod span, once: what upstream's
// SyncTerminatedPod does once the pod's containers are gone is here the
// unpreparing of its claims, until the worker finishes. An orphan has
// none, as upstream's.
func (a *Actor) startTerminatedSpan() {
	if a.endTerminated != nil {
		return
	}
	a.endTerminated = func(error) {}
	if a.state.Pod != nil {
		_, a.endTerminated = tracing.PodSpan(a.Context(), a.tracer(), "syncTerminatedPod", a.p.UID, a.p.Name, a.p.Namespace, "")
	}
}

// publishState shows the worker's phase on the dashboard.
func (a *Actor) publishState(ctx actor.Context) {
	if a.p.Registry != nil {
		a.p.Registry.SetState(ctx.Self().Id, a.state.Phase.String())
	}
}

// report tells the pod-manager the pod's status when it or the worker's
// phase changed.
func (a *Actor) report(ctx actor.Context, status *v1.PodStatus) {
	if status == nil {
		status = &v1.PodStatus{}
	}
	a.raw = status
	status = withResourceHealth(status, a.hist.health)
	if a.state.Phase == a.reportedPhase && a.reported != nil && apiequality.Semantic.DeepEqual(*a.reported, *status) {
		return
	}
	a.reported, a.reportedPhase = status, a.state.Phase
	supervision.Tell(ctx, ctx.Parent(), &messages.PodStatusChanged{UID: a.p.UID, Status: *status, WorkerState: a.state.Phase.String()})
}

func (a *Actor) cancelAll() {
	for _, cancel := range []context.CancelFunc{a.cancelSync, a.cancelKill} {
		if cancel != nil {
			cancel()
		}
	}
	if a.cancelRetry != nil {
		a.cancelRetry()
	}
	if a.endTerminated != nil {
		a.endTerminated(nil)
		a.endTerminated = nil
	}
}

// kubeletConditions are the pod conditions the kubelet makes (upstream's
// PodConditionByKubelet with the gated ones on by default).
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled:              true,
	v1.PodReady:                  true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodReadyToStartContainers: true,
	v1.PodResizeInProgress:       true,
	v1.PodResizePending:          true,
	v1.AllContainersRestarting:   true,
}

// previousStatus is the status a sync pass builds on, as upstream's
// generateAPIPodStatus takes it: the status the worker last reported,
// whose start time, transition times and terminal phase the API's copy of
// the pod may not show yet, with the conditions others own (those of
// readiness gates) as the API shows them. A DisruptionTarget the API does
// not show yet is kept.
func previousStatus(api v1.PodStatus, synced *v1.PodStatus) v1.PodStatus {
	out := *synced
	out.Conditions = make([]v1.PodCondition, 0, len(synced.Conditions)+len(api.Conditions))
	fromAPI := map[v1.PodConditionType]bool{}
	for _, c := range api.Conditions {
		if !kubeletConditions[c.Type] {
			out.Conditions = append(out.Conditions, c)
			fromAPI[c.Type] = true
		}
	}
	for _, c := range synced.Conditions {
		if kubeletConditions[c.Type] || (c.Type == v1.DisruptionTarget && !fromAPI[c.Type]) {
			out.Conditions = append(out.Conditions, c)
		}
	}
	return out
}

// healthSources are the senders of ResourceHealthChanged in the order
// their entries are listed, as upstream's container manager asks the
// device manager before the DRA manager.
var healthSources = []string{messages.HealthFromDevices, messages.HealthFromDRA}

// withResourceHealth is status with each container's
// allocatedResourcesStatus made of what health holds for it, as
// upstream's generateAPIPodStatus asks its container manager on every
// status; status itself when health holds nothing.
func withResourceHealth(status *v1.PodStatus, health map[string]map[string][]v1.ResourceStatus) *v1.PodStatus {
	empty := true
	for _, byContainer := range health {
		if len(byContainer) > 0 {
			empty = false
		}
	}
	if empty {
		return status
	}
	out := *status
	out.ContainerStatuses = slices.Clone(status.ContainerStatuses)
	for i := range out.ContainerStatuses {
		cs := &out.ContainerStatuses[i]
		cs.AllocatedResourcesStatus = nil
		for _, src := range healthSources {
			cs.AllocatedResourcesStatus = append(cs.AllocatedResourcesStatus, health[src][cs.Name]...)
		}
	}
	return &out
}
