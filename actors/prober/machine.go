package prober

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

// Key names one probe of a pod: a container's probe of one kind.
type Key struct {
	Container string
	Kind      results.Kind
}

func (k Key) String() string { return k.Container + "/" + k.Kind.String() }

// worker is one probe's state, as upstream's probe worker: the container
// instance it probes, the run of equal results, the result decided so far
// and what the pod-worker was told of it.
type worker struct {
	// id is the container instance probed (the runtime ID, without the
	// "containerd://" prefix); startedAt is when it started.
	id        string
	startedAt time.Time
	// gen is the worker's timer or run under way (State.gen): a tick or a
	// result of another gen is stale (the worker was reset, stopped or
	// rescheduled since) and dropped.
	gen uint64
	// inFlight: a run is under way; there is never more than one.
	inFlight bool
	// scheduled: a timer is due to start the next run.
	scheduled bool
	// lastRun is when the last run started; the next one starts a period
	// after it.
	lastRun time.Time
	// last is the last run's result and run how many runs in a row had it.
	last results.Result
	run  int
	// result is the probe's verdict: last, once it held for its threshold.
	result results.Result
	// reported is what the pod-worker was told of this instance's probe
	// (Unknown until told, as the pod-worker starts a new instance);
	// unsure: a restarted prober does not know what its predecessor told.
	reported results.Result
	unsure   bool
	// onHold: the probe stopped deciding for this instance (a liveness
	// failure, a startup verdict), until a new instance starts.
	onHold bool
}

// State is a prober's state: a value, changed only by Step.
type State struct {
	// Pod and Status are the last targets; Pod nil probes nothing.
	// Terminating: the pod is being stopped (see EvTargets).
	Pod         *v1.Pod
	Status      v1.PodStatus
	Terminating bool
	// workers are the live probes; replaced, never changed in place.
	workers map[Key]worker
	// KubeletStart is when the node agent started: a probe that starts
	// within a period of it waits a random part of the period first, so
	// that the probes of every pod found running do not run together.
	KubeletStart time.Time
	// Restarted: this prober replaces one that failed, whose reports the
	// pod-worker still holds; each probe reports its first verdict.
	Restarted bool
	// gen numbers every timer and run of the prober's probes, so that a
	// worker's gen is never one a stopped worker used.
	gen uint64
}

// Event is what happens to a prober; one type per kind.
type Event interface{ isEvent() }

// EvTargets: the pod-worker's targets after a sync pass, or as the pod
// starts terminating. Terminating: only the readiness probes go on, as
// upstream's, so that a container shows not ready during its graceful
// shutdown. Rand draws the jitter of a probe's first run, in [0, 1).
type EvTargets struct {
	Pod         *v1.Pod
	Status      v1.PodStatus
	Terminating bool
	Rand        func() float64
}

// EvTick: the timer of probe Key, gen Gen, fired.
type EvTick struct {
	Key Key
	Gen uint64
}

// EvResult: run Gen of probe Key ended with Result, or with Err (the
// prober could not tell; the result is thrown away, as upstream's).
type EvResult struct {
	Key    Key
	Gen    uint64
	Result results.Result
	Err    error
}

func (EvTargets) isEvent() {}
func (EvTick) isEvent()    {}
func (EvResult) isEvent()  {}

// Command is what Step asks the actor to do; one type per kind.
type Command interface{ isCommand() }

// CmdSchedule: start probe Key's run Gen After from now (replacing its
// timer, if any).
type CmdSchedule struct {
	Key   Key
	Gen   uint64
	After time.Duration
}

// CmdCancel: stop probe Key's timer; its worker stopped.
type CmdCancel struct{ Key Key }

// CmdRun: run probe Key against container instance ContainerID, off the
// mailbox; its result comes back as EvResult with Gen.
type CmdRun struct {
	Key         Key
	Gen         uint64
	Pod         *v1.Pod
	Status      v1.PodStatus
	Container   *v1.Container
	ContainerID string
}

// CmdReport: tell the pod-worker that the probe's result for the
// container instance changed.
type CmdReport struct {
	ContainerID   string
	ContainerName string
	Kind          results.Kind
	Result        results.Result
}

func (CmdSchedule) isCommand() {}
func (CmdCancel) isCommand()   {}
func (CmdRun) isCommand()      {}
func (CmdReport) isCommand()   {}

// Step applies ev, which the actor handles at now, and returns the
// commands to carry out, in order. It is the only way the state changes; it
// does no I/O and reads no clock. A State is a value: a copy taken before
// Step is left as it was (its workers are copied, never changed in place).
func (s *State) Step(ev Event, now time.Time) []Command {
	s.workers = maps.Clone(s.workers)
	if s.workers == nil {
		s.workers = map[Key]worker{}
	}
	return s.step(ev, now)
}

// step hands ev to its handler.
func (s *State) step(ev Event, now time.Time) []Command {
	switch e := ev.(type) {
	case EvTargets:
		return s.onTargets(e, now)
	case EvTick:
		return s.onTick(e, now)
	case EvResult:
		return s.onResult(e, now)
	}
	panic(fmt.Sprintf("prober: unknown event %T", ev))
}

func (s *State) onTargets(e EvTargets, now time.Time) []Command {
	s.Pod, s.Status, s.Terminating = e.Pod, e.Status, e.Terminating
	return s.retarget(now, e.Rand)
}

// onTick starts the run of a probe whose timer fired, unless it was
// rescheduled, stopped or put on hold since.
func (s *State) onTick(e EvTick, now time.Time) []Command {
	w, ok := s.workers[e.Key]
	if !ok || w.gen != e.Gen || !w.scheduled {
		return nil
	}
	w.scheduled = false
	c := s.container(e.Key.Container)
	if c == nil || w.onHold || !s.mayRun(e.Key, w) {
		s.workers[e.Key] = w
		return nil
	}
	s.gen++
	w.gen, w.inFlight, w.lastRun = s.gen, true, now
	s.workers[e.Key] = w
	return []Command{CmdRun{Key: e.Key, Gen: w.gen, Pod: s.Pod, Status: s.Status, Container: c, ContainerID: w.id}}
}

// onResult counts the result of the current run and schedules the next.
func (s *State) onResult(e EvResult, now time.Time) []Command {
	w, ok := s.workers[e.Key]
	if !ok || w.gen != e.Gen || !w.inFlight {
		return nil
	}
	w.inFlight = false
	probe := probeOf(s.container(e.Key.Container), e.Key.Kind)
	if probe == nil {
		s.workers[e.Key] = w
		return nil
	}
	var cmds []Command
	if e.Err == nil {
		cmds = append(cmds, w.decide(e.Key, probe, e.Result)...)
	}
	s.workers[e.Key] = w
	if e.Key.Kind == results.Startup && w.result == results.Success {
		// The container started: its other probes were held back until
		// now; they run at once (past their initial delay), as upstream's
		// status update triggers the readiness probe.
		for _, k := range []results.Kind{results.Readiness, results.Liveness} {
			cmds = append(cmds, s.ensure(Key{Container: e.Key.Container, Kind: k}, now, nil)...)
		}
	}
	return append(cmds, s.ensure(e.Key, now, nil)...)
}

// decide counts result into the worker's run, as upstream's worker: the
// probe's result changes once the run reaches the probe's threshold. It
// returns the report of a change the pod-worker must see.
func (w *worker) decide(k Key, probe *v1.Probe, result results.Result) []Command {
	if result == w.last {
		w.run++
	} else {
		w.last, w.run = result, 1
	}
	if result == results.Failure && w.run < int(threshold(probe.FailureThreshold, 3)) ||
		result == results.Success && w.run < int(threshold(probe.SuccessThreshold)) {
		return nil
	}
	w.result = result
	if k.Kind == results.Liveness && result == results.Failure || k.Kind == results.Startup {
		// The container fails and will be restarted, or its startup
		// probe decided: nothing more to probe until a new instance, as
		// upstream's onHold (no exec into a container being stopped).
		w.onHold, w.run = true, 0
	}
	if !w.unsure && effect(k.Kind, result) == effect(k.Kind, w.reported) {
		return nil
	}
	w.reported, w.unsure = result, false
	return []Command{CmdReport{ContainerID: w.id, ContainerName: k.Container, Kind: k.Kind, Result: result}}
}

// effect is what a result means to the pod-worker: a liveness result
// matters only when it fails (the container is killed), a readiness
// result only when it succeeds (the container is ready), and every startup
// result (started, killed, or neither yet). Results of the same effect are
// not worth a message and a sync: a readiness probe that fails before it
// ever succeeded leaves the container as not ready as it was.
func effect(k results.Kind, r results.Result) results.Result {
	switch k {
	case results.Liveness:
		if r != results.Failure {
			return results.Unknown
		}
	case results.Readiness:
		if r != results.Success {
			return results.Unknown
		}
	}
	return r
}

// retarget brings the workers in line with the pod's spec and status: a
// worker per probe of each running container that is probed (regular
// containers and sidecars), reset when its instance changed; the others
// stop. A terminating pod keeps its readiness probes only.
func (s *State) retarget(now time.Time, rand func() float64) []Command {
	var cmds []Command
	want := map[Key]bool{}
	if s.Pod != nil && s.Status.Phase != v1.PodSucceeded && s.Status.Phase != v1.PodFailed {
		for _, c := range probedContainers(s.Pod) {
			cs := s.status(c.Name)
			id := ""
			if cs != nil && cs.State.Running != nil {
				id = runtimeID(cs.ContainerID)
			}
			for _, k := range []results.Kind{results.Startup, results.Readiness, results.Liveness} {
				probe := probeOf(c, k)
				if probe == nil || id == "" {
					// Not running: nothing to probe until it runs again
					// (as a new instance).
					continue
				}
				key := Key{Container: c.Name, Kind: k}
				w, ok := s.workers[key]
				if k != results.Readiness && s.quiet() {
					// Upstream's quiet shutdown: no liveness or startup
					// probe of a pod being stopped, whose verdict could
					// only restart a container that is going anyway. A
					// startup probe that succeeded for this instance is
					// kept (it is on hold, nothing runs): the readiness
					// probe it let run goes on.
					if k == results.Startup && ok && w.id == id && w.result == results.Success {
						want[key] = true
					}
					continue
				}
				want[key] = true
				if !ok || w.id != id {
					// A new instance: its probe starts over.
					w = worker{id: id, startedAt: cs.State.Running.StartedAt.Time, unsure: s.Restarted}
					s.workers[key] = w
				}
				if k == results.Startup && !w.onHold && cs.Started != nil && *cs.Started {
					// The status says started: a prober before this one
					// saw the startup probe succeed, and it stays done.
					if w.scheduled || w.inFlight {
						cmds = append(cmds, CmdCancel{Key: key})
					}
					w.gen, w.scheduled, w.inFlight = 0, false, false
					w.onHold, w.result, w.reported, w.unsure = true, results.Success, results.Success, false
					s.workers[key] = w
				}
				cmds = append(cmds, s.ensure(key, now, rand)...)
			}
		}
	}
	// In a fixed order (of containers, then kinds), so that a step's
	// commands are the same every time.
	for _, key := range slices.SortedFunc(maps.Keys(s.workers), func(a, b Key) int {
		return cmp.Or(strings.Compare(a.Container, b.Container), cmp.Compare(a.Kind, b.Kind))
	}) {
		if !want[key] {
			delete(s.workers, key)
			cmds = append(cmds, CmdCancel{Key: key})
		}
	}
	return cmds
}

// quiet reports whether the pod is being stopped, so that only its
// readiness probes run: the pod-worker said it terminates, or the pod is
// being deleted (a pod-worker terminates a deleted pod; the deletion may
// show in a spec before it does).
func (s *State) quiet() bool {
	return s.Terminating || s.Pod != nil && s.Pod.DeletionTimestamp != nil
}

// ensure schedules probe key's next run unless it has one coming, one
// under way, is on hold or held back by the startup probe: the first run
// once the initial delay has passed (and, soon after the node agent
// started, a random part of the period later), the next a period after the
// last one started.
func (s *State) ensure(key Key, now time.Time, rand func() float64) []Command {
	w, ok := s.workers[key]
	if !ok || w.scheduled || w.inFlight || w.onHold || !s.mayRun(key, w) {
		return nil
	}
	probe := probeOf(s.container(key.Container), key.Kind)
	if probe == nil {
		return nil
	}
	var at time.Time
	if w.lastRun.IsZero() {
		at = firstRun(w.startedAt, probe, now)
		if p := period(probe); now.Sub(s.KubeletStart) < p && rand != nil {
			at = at.Add(time.Duration(rand() * float64(p)))
		}
	} else {
		at = w.lastRun.Add(period(probe))
	}
	cmd := s.schedule(key, &w, now, at)
	s.workers[key] = w
	return []Command{cmd}
}

// schedule makes w's next run start at at (at once when it is past).
func (s *State) schedule(key Key, w *worker, now, at time.Time) Command {
	s.gen++
	w.gen, w.scheduled = s.gen, true
	return CmdSchedule{Key: key, Gen: w.gen, After: max(at.Sub(now), 0)}
}

// mayRun reports whether probe key may run for w's instance: a liveness
// or readiness probe waits for the container's startup probe to succeed.
func (s *State) mayRun(key Key, w worker) bool {
	if key.Kind == results.Startup {
		return true
	}
	c := s.container(key.Container)
	if c == nil || c.StartupProbe == nil {
		return true
	}
	if st, ok := s.workers[Key{Container: key.Container, Kind: results.Startup}]; ok && st.id == w.id && st.result == results.Success {
		return true
	}
	cs := s.status(key.Container)
	return cs != nil && runtimeID(cs.ContainerID) == w.id && cs.Started != nil && *cs.Started
}

// container is the spec of the pod's probed container name; nil when the
// pod has none by that name.
func (s *State) container(name string) *v1.Container {
	if s.Pod == nil {
		return nil
	}
	for _, c := range probedContainers(s.Pod) {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// status is the status of the pod's container name, nil when it has none.
func (s *State) status(name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{s.Status.ContainerStatuses, s.Status.InitContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// probedContainers are the containers upstream probes: the regular ones
// and the sidecars (init containers with restartPolicy Always).
func probedContainers(pod *v1.Pod) []*v1.Container {
	var out []*v1.Container
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out = append(out, c)
		}
	}
	return out
}

// probeOf is c's probe of kind k; nil when it has none.
func probeOf(c *v1.Container, k results.Kind) *v1.Probe {
	if c == nil {
		return nil
	}
	switch k {
	case results.Liveness:
		return c.LivenessProbe
	case results.Readiness:
		return c.ReadinessProbe
	}
	return c.StartupProbe
}

// firstRun is when a probe first runs for an instance started at started:
// once its initial delay has passed.
func firstRun(started time.Time, probe *v1.Probe, now time.Time) time.Time {
	if probe == nil || started.IsZero() {
		return now
	}
	if at := started.Add(time.Duration(probe.InitialDelaySeconds) * time.Second); at.After(now) {
		return at
	}
	return now
}

// period is the probe's period, with the API's default for an unset one.
func period(probe *v1.Probe) time.Duration {
	return time.Duration(threshold(probe.PeriodSeconds, 10)) * time.Second
}

// threshold is v, or def (1 unless given) when v is not positive: the API
// server defaults every field, but a static pod's spec may leave them
// out.
func threshold(v int32, def ...int32) int32 {
	if v > 0 {
		return v
	}
	if len(def) > 0 {
		return def[0]
	}
	return 1
}

// runtimeID is a status's container ID without its "runtime://" prefix.
func runtimeID(id string) string {
	if _, after, ok := strings.Cut(id, "://"); ok {
		return after
	}
	return id
}
