package podworker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/messages"
)

// Phase is where a pod-worker is in its pod's life. It only moves forward:
// syncing → terminating → terminated, once per pod UID, as upstream's pod
// workers.
type Phase int

const (
	// Syncing: the pod should run; each sync pass moves the runtime toward
	// the spec.
	Syncing Phase = iota
	// Terminating: the pod must go; its containers are being stopped.
	Terminating
	// Terminated: containers and sandbox are gone; the worker is done.
	Terminated
)

func (p Phase) String() string {
	switch p {
	case Syncing:
		return "syncing"
	case Terminating:
		return "terminating"
	case Terminated:
		return "terminated"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// op is the runtime operation a worker has in flight; at most one at a time,
// so that a kill never races a sync that is still creating containers.
type op int

const (
	opNone op = iota
	opSync
	opKill
)

// Delays the machine chooses by itself (the runtime chooses crash-loop and
// image-pull backoffs).
const (
	// SyncErrorRetry is the wait after a sync pass failed without a backoff
	// of its own, as upstream's pod worker back-off period.
	SyncErrorRetry = 10 * time.Second
	// KillErrorRetry is the wait before trying a failed kill again.
	KillErrorRetry = 2 * time.Second
	// DefaultGracePeriod applies when neither the pod nor the request says.
	DefaultGracePeriod int64 = 30
)

// State is a pod-worker's state: a value, changed only by Step.
type State struct {
	Phase Phase
	// Pod is the latest desired pod; nil for an orphan found in the runtime
	// that no source knows.
	Pod *v1.Pod
	// inFlight is the operation running; gen numbers it, so that the outcome
	// of a cancelled operation is told from the current one.
	inFlight op
	gen      uint64
	// dirty: something changed while a sync ran; sync again when it ends.
	dirty bool
	// grace is the termination grace period in seconds, set on termination
	// and only ever shrinking.
	grace *int64
	// stopped: a kill has stopped every container and the sandbox; what is
	// left is removal, which a shorter grace period cannot hasten.
	stopped bool
	// retryGen identifies the retry timer that is due to wake the worker;
	// zero when none is.
	retryGen uint64
	// observed is the runtime as the last sync pass left it, when that
	// pass had nothing more to do (see EvSynced.Observed): runtime changes
	// it already shows were made by that pass and need no sync.
	observed map[string]string
	// changedMeanwhile and pending: runtime changes that came while a sync
	// ran, judged against what that sync observes once it ends.
	changedMeanwhile bool
	pending          []messages.PodLifecycleEvent
	// volumes are the pod's volumes once the volume-manager set them up;
	// until then a pod that has volumes is only observed, never acted on.
	volumes messages.PodVolumes
	// probes are the results of the pod's probes, by container instance;
	// replaced, never changed in place, so that a state stays a value.
	probes results.Pod
	// status is the status last reported (CmdReportStatus), never changed
	// in place: the base of a terminating pod's readiness changes, which
	// no sync pass reports.
	status *v1.PodStatus
	// devices are the CDI device IDs of each container once the
	// dra-manager prepared the pod's ResourceClaims; until then a pod
	// with claims is only observed, as one waiting for its volumes.
	// claimsAsked: the dra-manager was asked (by this incarnation).
	devices     map[string][]string
	claimsAsked bool
	// unpreparing: the kill ended and the pod's claims are being
	// unprepared; the worker is done once they are, as upstream
	// unprepares before the pod's final status and deletion.
	unpreparing bool
}

// Event is what happens to a worker; one type per kind.
type Event interface{ isEvent() }

// EvUpdate: a new or changed spec.
type EvUpdate struct{ Pod *v1.Pod }

// EvTerminate: the pod must go, within Grace seconds (nil: the pod's own).
// Pod, when set, becomes the worker's pod first: a worker told to terminate
// a pod that ended before it started gets its spec this way, and never
// syncs it.
type EvTerminate struct {
	Grace *int64
	Pod   *v1.Pod
}

// EvRuntimeChanged: PLEG saw the pod's containers or sandbox change.
type EvRuntimeChanged struct{ Events []messages.PodLifecycleEvent }

// EvRetry: a retry timer fired.
type EvRetry struct{ Gen uint64 }

// EvSynced: a sync pass ended. Terminal: the pod reached Succeeded or
// Failed, so nothing of it will run again. Observed (runtime ID → CRI
// state) is set when the pass left the pod where its spec wants it, nil
// otherwise. Status, when set, is the pod's status as the pass saw it: it
// is reported if the pass is the current one, and dropped if not.
type EvSynced struct {
	Gen        uint64
	RetryAfter time.Duration
	Err        error
	Terminal   bool
	Observed   map[string]string
	Status     *v1.PodStatus
}

// EvStopped: the kill in flight has stopped everything and goes on to
// remove it. Status, when set, is the pod's terminal status.
type EvStopped struct {
	Gen    uint64
	Status *v1.PodStatus
}

// EvVolumesReady: every volume of the pod is set up.
type EvVolumesReady struct{ Volumes messages.PodVolumes }

// EvClaimsPrepared: the pod's ResourceClaims are prepared; Devices are
// each container's CDI device IDs.
type EvClaimsPrepared struct{ Devices map[string][]string }

// EvClaimsUnprepared: the pod's ResourceClaims are unprepared.
type EvClaimsUnprepared struct{}

// EvProbeResult: the prober found a probe's result for a container
// instance changed.
type EvProbeResult struct {
	ContainerID string
	Kind        results.Kind
	Result      results.Result
}

// EvKilled: a kill ended.
type EvKilled struct {
	Gen uint64
	Err error
}

func (EvUpdate) isEvent()           {}
func (EvTerminate) isEvent()        {}
func (EvRuntimeChanged) isEvent()   {}
func (EvRetry) isEvent()            {}
func (EvSynced) isEvent()           {}
func (EvStopped) isEvent()          {}
func (EvKilled) isEvent()           {}
func (EvVolumesReady) isEvent()     {}
func (EvProbeResult) isEvent()      {}
func (EvClaimsPrepared) isEvent()   {}
func (EvClaimsUnprepared) isEvent() {}

// Command is what the actor must do at the edge after a step.
type Command interface{ isCommand() }

// CmdStartSync: run one sync pass of Pod, numbered Gen, its containers
// mounting Volumes. WaitingForVolumes: the pod has volumes that are not
// set up yet; the pass only observes the pod and reports its status
// (containers not created show ContainerCreating), as upstream's sync
// waits for the volume manager before it creates anything.
type CmdStartSync struct {
	Gen               uint64
	Pod               *v1.Pod
	Volumes           messages.PodVolumes
	WaitingForVolumes bool
	// Devices are each container's CDI device IDs from the pod's
	// prepared ResourceClaims.
	Devices map[string][]string
	// Probes are the probe results the pass decides on.
	Probes results.Pod
}

// CmdCancelSync: cancel the sync pass in flight (its outcome still comes).
type CmdCancelSync struct{}

// CmdStartKill: stop the pod's containers within Grace seconds, then remove
// its sandbox; numbered Gen.
type CmdStartKill struct {
	Gen   uint64
	Grace int64
}

// CmdCancelKill: cancel the kill in flight; a shorter one follows.
type CmdCancelKill struct{}

// CmdScheduleRetry: send EvRetry{Gen} after After.
type CmdScheduleRetry struct {
	Gen   uint64
	After time.Duration
}

// CmdReportStatus: the current sync pass saw the pod with Status; tell the
// pod-manager. The machine alone knows which pass is current: the outcome
// of a superseded pass (an older operation's, or a previous incarnation's)
// never reaches the pod-manager; that of a pass a termination cancelled
// does, since nothing newer was seen.
type CmdReportStatus struct{ Status *v1.PodStatus }

// CmdSetProbeTargets: tell the prober what to probe: Pod with Status as
// the current sync pass saw it; Terminating, its readiness probes only
// (the pod is being stopped); nothing (Pod nil) once its containers have
// stopped.
type CmdSetProbeTargets struct {
	Pod         *v1.Pod
	Status      *v1.PodStatus
	Terminating bool
}

// CmdKillFailed: the current kill failed with Err and will be retried; the
// outcome of a cancelled kill, which fails by design, is not one.
type CmdKillFailed struct{ Err error }

// CmdReportStopped: nothing of the pod runs any more; tell the pod-manager,
// so that a pod being deleted can go from the API.
type CmdReportStopped struct{}

// CmdFinish: the pod is terminated and cleaned up; tell the pod-manager.
type CmdFinish struct{}

// CmdPrepareClaims: ask the dra-manager to prepare Pod's ResourceClaims.
type CmdPrepareClaims struct{ Pod *v1.Pod }

// CmdUnprepareClaims: ask the dra-manager to unprepare Pod's claims.
type CmdUnprepareClaims struct{ Pod *v1.Pod }

func (CmdStartSync) isCommand()       {}
func (CmdCancelSync) isCommand()      {}
func (CmdStartKill) isCommand()       {}
func (CmdCancelKill) isCommand()      {}
func (CmdScheduleRetry) isCommand()   {}
func (CmdReportStatus) isCommand()    {}
func (CmdKillFailed) isCommand()      {}
func (CmdSetProbeTargets) isCommand() {}
func (CmdReportStopped) isCommand()   {}
func (CmdFinish) isCommand()          {}
func (CmdPrepareClaims) isCommand()   {}
func (CmdUnprepareClaims) isCommand() {}

// Step applies ev, which the actor handles at now, and returns the
// commands to carry out, in order. It is the only way the state changes; it
// does no I/O and reads no clock. A State is a value: a copy taken before
// Step is left as it was.
func (s *State) Step(ev Event, now time.Time) []Command {
	next, cmds := s.step(ev, now)
	*s = next
	return cmds
}

// step hands ev to its handler. A terminated worker takes no more events.
func (s State) step(ev Event, now time.Time) (State, []Command) {
	if s.Phase == Terminated {
		return s, nil
	}
	switch e := ev.(type) {
	case EvUpdate:
		return s.onUpdate(e)
	case EvRuntimeChanged:
		return s.onRuntimeChanged(e)
	case EvRetry:
		return s.onRetry(e)
	case EvTerminate:
		return s.onTerminate(e)
	case EvSynced:
		return s.onSynced(e, now)
	case EvStopped:
		return s.onStopped(e)
	case EvVolumesReady:
		return s.onVolumesReady(e)
	case EvProbeResult:
		return s.onProbeResult(e, now)
	case EvKilled:
		return s.onKilled(e)
	case EvClaimsPrepared:
		return s.onClaimsPrepared(e)
	case EvClaimsUnprepared:
		if !s.unpreparing {
			return s, nil
		}
		s.unpreparing, s.Phase = false, Terminated
		return s, []Command{CmdFinish{}}
	}
	panic(fmt.Sprintf("podworker: unknown event %T", ev))
}

func (s State) onUpdate(e EvUpdate) (State, []Command) {
	s.Pod = e.Pod
	if s.Phase == Syncing && s.claimsAsked && s.devices == nil {
		// The newer pod may name the claim its template made.
		s, cmds := s.syncOrMarkDirty()
		return s, append([]Command{CmdPrepareClaims(e)}, cmds...)
	}
	if s.Phase == Syncing {
		return s.syncOrMarkDirty()
	}
	return s, nil
}

func (s State) onRuntimeChanged(e EvRuntimeChanged) (State, []Command) {
	switch {
	case s.Phase != Syncing:
	case s.inFlight == opSync:
		// Most likely the pass in flight made these changes: what it
		// observes when it ends tells.
		s.changedMeanwhile = true
		s.pending = append(slices.Clip(s.pending), e.Events...)
	case !explained(s.observed, e.Events):
		return s.syncOrMarkDirty()
	}
	return s, nil
}

func (s State) onRetry(e EvRetry) (State, []Command) {
	if e.Gen != s.retryGen || s.retryGen == 0 {
		return s, nil // superseded by a newer timer or operation
	}
	s.retryGen = 0
	switch {
	case s.Phase == Syncing:
		return s.syncOrMarkDirty()
	case s.inFlight == opNone:
		return s.startKill()
	}
	return s, nil
}

func (s State) onTerminate(e EvTerminate) (State, []Command) {
	if e.Pod != nil {
		s.Pod = e.Pod
	}
	return s.terminate(e.Grace)
}

// onSynced takes the outcome of a sync pass: the current pass's status is
// reported, and the worker goes on to what came meanwhile (a termination,
// a change, a retry). now is the transition time of a readiness change the
// status of a pass a termination cancelled is brought up to.
func (s State) onSynced(e EvSynced, now time.Time) (State, []Command) {
	if s.inFlight != opSync || e.Gen != s.gen {
		return s, nil
	}
	s.inFlight = opNone
	s.observed = e.Observed
	if e.Status != nil && e.Err == nil {
		// A failed pass may not have seen the containers at all.
		s.probes = keepProbes(s.probes, e.Status)
	}
	status := e.Status
	if status != nil && s.Phase == Terminating {
		// A pass a termination cancelled decided on the readiness
		// results given when it started; those that came since still
		// count, and no later pass will show them.
		if applied, changed := podruntime.ApplyReadiness(s.Pod, *status, s.probes, now); changed {
			status = &applied
		}
	}
	wasSyncing := s.Phase == Syncing
	if status != nil {
		s.status = status
	}
	changed := s.changedMeanwhile && !explained(s.observed, s.pending)
	s.changedMeanwhile, s.pending = false, nil
	var cmds []Command
	switch {
	case s.Phase == Terminating:
		s, cmds = s.startKill() // the termination that cancelled this pass
	case e.Terminal:
		// As upstream's pod workers: a pod that reached a terminal phase
		// is terminated, so that its sandbox goes and its final phase is
		// written once nothing of it can run any more.
		s, cmds = s.terminate(nil)
	case s.dirty || changed:
		s, cmds = s.startSync()
	case e.RetryAfter > 0:
		s, cmds = s.scheduleRetry(e.RetryAfter)
	case e.Err != nil:
		s, cmds = s.scheduleRetry(SyncErrorRetry)
	}
	if status == nil {
		return s, cmds
	}
	cmds = append(cmds, CmdReportStatus{Status: status})
	// The prober probes what the pass saw; a pass that found the pod
	// terminal has had its termination tell the prober.
	switch {
	case !hasProbes(s.Pod):
	case s.Phase == Syncing:
		cmds = append(cmds, CmdSetProbeTargets{Pod: s.Pod, Status: status})
	case s.Phase == Terminating && !wasSyncing && !s.stopped:
		cmds = append(cmds, CmdSetProbeTargets{Pod: s.Pod, Status: status, Terminating: true})
	}
	return s, cmds
}

func (s State) onStopped(e EvStopped) (State, []Command) {
	if s.inFlight != opKill || e.Gen != s.gen || s.stopped {
		return s, nil
	}
	s.stopped = true
	var cmds []Command
	if e.Status != nil {
		// The pod's last word, before it may go from the API: a terminal
		// phase and its containers terminated, as upstream's
		// SyncTerminatingPod reports once killPod returned.
		s.status = e.Status
		cmds = append(cmds, CmdReportStatus{Status: e.Status})
	}
	if hasProbes(s.Pod) {
		// Nothing runs to probe any more, as upstream's RemovePod once
		// killPod returned.
		cmds = append(cmds, CmdSetProbeTargets{})
	}
	return s, append(cmds, CmdReportStopped{})
}

func (s State) onVolumesReady(e EvVolumesReady) (State, []Command) {
	if s.volumes != nil {
		return s, nil // set once; their content changes in place
	}
	s.volumes = e.Volumes
	if s.Phase == Syncing {
		return s.syncOrMarkDirty()
	}
	return s, nil
}

func (s State) onProbeResult(e EvProbeResult, now time.Time) (State, []Command) {
	if s.probes.Of(e.ContainerID).Get(e.Kind) == e.Result {
		return s, nil
	}
	switch {
	case s.Phase == Syncing:
		s.probes = withResult(s.probes, e)
		return s.syncOrMarkDirty()
	case s.Phase == Terminating && e.Kind == results.Readiness && !s.stopped:
		// A terminating pod is never synced (nor restarted for a liveness
		// or startup failure), but its readiness still shows, as
		// upstream's status manager sets it: the new result goes straight
		// into the last status reported.
		s.probes = withResult(s.probes, e)
		if s.status == nil {
			return s, nil
		}
		applied, changed := podruntime.ApplyReadiness(s.Pod, *s.status, s.probes, now)
		if !changed {
			return s, nil
		}
		s.status = &applied
		return s, []Command{CmdReportStatus{Status: &applied}}
	}
	return s, nil
}

func (s State) onKilled(e EvKilled) (State, []Command) {
	if s.inFlight != opKill || e.Gen != s.gen {
		return s, nil
	}
	s.inFlight = opNone
	if e.Err != nil {
		s, cmds := s.scheduleRetry(KillErrorRetry)
		return s, append([]Command{CmdKillFailed{Err: e.Err}}, cmds...)
	}
	if s.claimsAsked || HasClaims(s.Pod) {
		// A worker that never asked (it restarted) may still have
		// claims prepared by its predecessor.
		s.unpreparing = true
		return s, []Command{CmdUnprepareClaims{Pod: s.Pod}}
	}
	s.Phase = Terminated
	return s, []Command{CmdFinish{}}
}

func (s State) onClaimsPrepared(e EvClaimsPrepared) (State, []Command) {
	if s.devices != nil || !s.claimsAsked {
		return s, nil
	}
	s.devices = e.Devices
	if s.devices == nil {
		s.devices = map[string][]string{}
	}
	if s.Phase == Syncing {
		return s.syncOrMarkDirty()
	}
	return s, nil
}

// HasClaims tells whether the pod has ResourceClaims for the dra-manager
// to prepare.
func HasClaims(pod *v1.Pod) bool {
	return pod != nil && (len(pod.Spec.ResourceClaims) > 0 || pod.Status.ExtendedResourceClaimStatus != nil)
}

// explained reports whether every runtime change is already in what the last
// sync pass observed, so that syncing again would find nothing to do: a
// container or sandbox in the state observed, or a removed one the pass no
// longer saw. Nothing observed explains nothing. The runtime events of the
// worker's own calls are explained; a container that died since is not.
func explained(observed map[string]string, events []messages.PodLifecycleEvent) bool {
	if observed == nil {
		return false
	}
	for _, e := range events {
		state, seen := observed[e.ID]
		if e.State == "" && seen || e.State != "" && state != e.State {
			return false
		}
	}
	return true
}

func (s State) syncOrMarkDirty() (State, []Command) {
	if s.inFlight != opNone {
		s.dirty = true
		return s, nil
	}
	return s.startSync()
}

func (s State) startSync() (State, []Command) {
	if s.Pod == nil {
		return s, nil // an orphan has nothing to sync toward
	}
	s.gen++
	s.inFlight, s.dirty, s.retryGen = opSync, false, 0
	var cmds []Command
	if HasClaims(s.Pod) && !s.claimsAsked {
		s.claimsAsked = true
		cmds = append(cmds, CmdPrepareClaims{Pod: s.Pod})
	}
	waiting := len(s.Pod.Spec.Volumes) > 0 && s.volumes == nil || HasClaims(s.Pod) && s.devices == nil
	return s, append(cmds, CmdStartSync{Gen: s.gen, Pod: s.Pod, Volumes: s.volumes, WaitingForVolumes: waiting, Devices: s.devices, Probes: s.probes})
}

func (s State) startKill() (State, []Command) {
	s.gen++
	s.inFlight, s.retryGen = opKill, 0
	return s, []Command{CmdStartKill{Gen: s.gen, Grace: *s.grace}}
}

func (s State) scheduleRetry(after time.Duration) (State, []Command) {
	s.gen++
	s.retryGen = s.gen
	return s, []Command{CmdScheduleRetry{Gen: s.gen, After: after}}
}

// terminate moves the worker to terminating, or shortens the grace period
// of a termination under way. A grace period only ever shrinks.
func (s State) terminate(requested *int64) (State, []Command) {
	g := s.podGrace()
	if requested != nil {
		g = max(*requested, 0)
	}
	if s.grace != nil && *s.grace <= g || s.stopped {
		// Not shorter, or nothing left to stop: cancelling the removal
		// under way would only make it collide with its successor.
		return s, nil
	}
	s.grace = &g
	first := s.Phase == Syncing
	s.Phase, s.dirty, s.retryGen = Terminating, false, 0
	var cmds []Command
	if first && hasProbes(s.Pod) {
		// As upstream's SyncTerminatingPod: the liveness and startup
		// probes stop (their verdict could only restart a container that
		// is going anyway), the readiness probes go on until the
		// containers stop, so that a container can show not ready during
		// its graceful shutdown. Without a status, nothing is known to run.
		if s.status != nil {
			cmds = append(cmds, CmdSetProbeTargets{Pod: s.Pod, Status: s.status, Terminating: true})
		} else {
			cmds = append(cmds, CmdSetProbeTargets{})
		}
	}
	switch s.inFlight {
	case opSync:
		if first {
			return s, append(cmds, CmdCancelSync{})
		}
		return s, cmds
	case opKill:
		s, kill := s.startKill()
		return s, append(append(cmds, CmdCancelKill{}), kill...)
	}
	s, kill := s.startKill()
	return s, append(cmds, kill...)
}

// hasProbes reports whether any container of pod has a probe.
func hasProbes(pod *v1.Pod) bool {
	if pod == nil {
		return false
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].LivenessProbe != nil || cs[i].ReadinessProbe != nil || cs[i].StartupProbe != nil {
				return true
			}
		}
	}
	return false
}

// withResult is probes with e's result, a copy: a state's probes are
// never changed in place.
func withResult(probes results.Pod, e EvProbeResult) results.Pod {
	next := make(results.Pod, len(probes)+1)
	for id, r := range probes {
		next[id] = r
	}
	next[e.ContainerID] = probes.Of(e.ContainerID).Set(e.Kind, e.Result)
	return next
}

// keepProbes drops the results of container instances status no longer
// shows: they are gone, and their IDs never come back.
func keepProbes(probes results.Pod, status *v1.PodStatus) results.Pod {
	if len(probes) == 0 {
		return probes
	}
	live := map[string]bool{}
	for _, list := range [][]v1.ContainerStatus{status.InitContainerStatuses, status.ContainerStatuses, status.EphemeralContainerStatuses} {
		for _, c := range list {
			if _, id, ok := strings.Cut(c.ContainerID, "://"); ok {
				live[id] = true
			}
		}
	}
	var kept results.Pod
	for id, r := range probes {
		if live[id] {
			if kept == nil {
				kept = results.Pod{}
			}
			kept[id] = r
		}
	}
	if len(kept) == len(probes) {
		return probes
	}
	return kept
}

func (s State) podGrace() int64 {
	if s.Pod != nil && s.Pod.Spec.TerminationGracePeriodSeconds != nil {
		return *s.Pod.Spec.TerminationGracePeriodSeconds
	}
	return DefaultGracePeriod
}
