// Package podmanager holds the pod-manager actor. It owns the desired set of
// pods: it merges the pod sources, admits or rejects each new pod, spawns one
// supervised pod-worker per pod UID, routes spec changes, terminations and
// runtime events to the workers, and stops a worker once its pod is
// terminated and cleaned up. Pods found in the runtime that no source wants
// (a manifest removed while actorlet was down) get a worker that only
// terminates them.
//
// Mirror pods (the API server's reflection of a static pod) are kept apart
// and never run, as upstream's pod manager keeps them; a pod whose API phase
// is already Succeeded or Failed is never started again, only stopped (see
// ended.go).
package podmanager

import (
	"context"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/actors/podworker"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/podruntime"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "pod-manager"

// recentlyDoneFor is how long the UID of a pod whose worker finished is
// remembered, so that the runtime events of its own removal do not make it
// look like an orphan.
const recentlyDoneFor = time.Minute

// Runtime is what the pod-manager and its workers need of the container
// runtime (podruntime.Runtime).
type Runtime interface {
	SyncPod(ctx context.Context, pod *v1.Pod, backoff *podruntime.Backoff) podruntime.SyncResult
	SyncNewPod(ctx context.Context, pod *v1.Pod, backoff *podruntime.Backoff) podruntime.SyncResult
	Kill(ctx context.Context, k podruntime.Kill) error
	ListPods(ctx context.Context) ([]*podruntime.PodStatus, error)
	PodUIDs(ctx context.Context) (map[types.UID]bool, error)
}

// Params configure the pod-manager.
type Params struct {
	Registry *supervision.Registry
	Runtime  Runtime
	// MaxContainerRestartPeriod caps the crash-loop backoff (5 min upstream).
	MaxContainerRestartPeriod time.Duration
	// Sources are the pod sources configured; until each has sent its first
	// update, no pod in the runtime is taken for an orphan.
	Sources     []string
	MaxPods     int
	Allocatable v1.ResourceList
	// StatusReporter receives every pod's status, and each pod's end.
	StatusReporter *actor.PID
	// ConfigSource is asked to send every source's pods again when the
	// pod-manager (re)starts, since a restart loses the desired set.
	ConfigSource *actor.PID
	Log          zerolog.Logger
}

// Actor is the pod-manager actor.
type Actor struct {
	p   Params
	log zerolog.Logger

	pods     map[types.UID]*podEntry
	bySource map[string]map[types.UID]bool
	seen     map[string]bool
	ready    bool
	// rejected are pods admission refused: they fail, with no worker.
	rejected     map[types.UID]*v1.Pod
	recentlyDone map[types.UID]time.Time
	// mirrors are the mirror pods in the API server's last set, by full
	// name (namespace/name, shared with their static pod).
	mirrors map[string]*v1.Pod

	// first: this is the first incarnation of the pod-manager under its
	// Props. Only then is the runtime listed at start: after a restart,
	// the stopped workers' last CRI calls may still be landing.
	first bool
	// inRuntime holds the UIDs the runtime had at that listing; nil until
	// it is answered (or when it failed): no pod is then taken for new.
	inRuntime map[types.UID]bool
}

// podEntry is one pod with a worker.
type podEntry struct {
	pod    *v1.Pod // nil for an orphan
	source string
	params *podworker.Params
	worker *actor.PID
	status v1.PodStatus
	state  string
	// terminate is the termination requested, resent to a restarted worker.
	terminate *messages.TerminatePod
	// end is set for a pod whose API phase is Succeeded or Failed: its
	// worker never syncs it, only stops what is left of it, and the entry
	// then stays finished. Resent to a restarted worker (it carries the pod).
	end *messages.TerminatePod
	// finished: the pod reached a terminal phase on its own and its worker
	// is done; the entry keeps its final status until a source drops it.
	finished bool
	// reportedGone: the status-reporter was told the pod is finished and
	// removed when its worker stopped it, before the removal ended.
	reportedGone bool
}

// New returns a producer of the pod-manager.
func New(p Params) actor.Producer {
	var incarnations atomic.Int32
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger(), first: incarnations.Add(1) == 1}
	}
}

// WorkerStrategy supervises pod-workers: one-for-one, a failed worker alone
// restarts after 100 ms doubling to 5 min, and is never given up on, since a
// pod must outlive any bug in one sync. It goes on the pod-manager's Props:
// protoactor asks the parent's strategy about a failed child.
func WorkerStrategy(registry *supervision.Registry) actor.SupervisorStrategy {
	return &supervision.Backoff{Initial: 100 * time.Millisecond, Max: 5 * time.Minute, ResetAfter: 10 * time.Minute, Registry: registry}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.pods = map[types.UID]*podEntry{}
		a.bySource = map[string]map[types.UID]bool{}
		a.seen = map[string]bool{}
		a.rejected = map[types.UID]*v1.Pod{}
		a.recentlyDone = map[types.UID]time.Time{}
		a.mirrors = map[string]*v1.Pod{}
		if a.p.ConfigSource != nil {
			supervision.Tell(ctx, a.p.ConfigSource, &messages.ResendPods{})
		}
		if a.first {
			a.listRuntime(ctx)
		}
		a.markReadyIfAllSeen(ctx)
	case *messages.RuntimePodsListed:
		if m.Err != nil {
			a.log.Debug().Err(m.Err).Msg("listing the runtime's pods failed: every pod's first pass lists it")
			return
		}
		a.inRuntime = m.UIDs
	case *messages.PodUpdate:
		a.update(ctx, m)
		a.recordPodCounts()
		a.seen[m.Source] = true
		a.markReadyIfAllSeen(ctx)
	case *messages.PodWorkerStarted:
		a.resume(ctx, m.UID)
	case *messages.PodStatusChanged:
		if e, ok := a.pods[m.UID]; ok {
			e.state = m.WorkerState
			// A worker reports its phase before its first sync has
			// observed anything (and an ended pod's worker never syncs): a
			// status without a phase is no status, and writing it would
			// blank the API's phase.
			if m.Status.Phase != "" {
				e.status = m.Status
				if e.pod != nil {
					supervision.Tell(ctx, a.p.StatusReporter, &messages.PodStatusReport{Pod: e.pod, Status: m.Status})
				}
			}
		}
	case *messages.PodWorkerStopped:
		// A pod deleted from the API goes from it once nothing of it
		// runs, as upstream; its removal from the runtime goes on.
		if e, ok := a.pods[m.UID]; ok && e.terminate != nil && e.pod != nil && e.pod.DeletionTimestamp != nil && !e.reportedGone {
			e.reportedGone = true
			supervision.Tell(ctx, a.p.StatusReporter, &messages.PodFinished{Pod: e.pod, Removed: true})
		}
	case *messages.PodWorkerDone:
		a.done(ctx, m.UID)
		a.recordPodCounts()
	case *messages.PodLifecycleEvents:
		a.route(ctx, m.Events)
	case *messages.OrphansFound:
		for _, o := range m.Pods {
			a.adoptOrphan(ctx, o.UID, o.Name, o.Namespace)
		}
	case *messages.ListPods:
		ctx.Respond(a.list())
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: Kind, Healthy: true, LastActivity: time.Now(),
			Detail: fmt.Sprintf("%d pods, %d rejected", len(a.pods), len(a.rejected))})
	}
}

// update applies one source's update to the desired set. The API server's
// mirror pods are set apart first: they are not pods to run.
func (a *Actor) update(ctx actor.Context, m *messages.PodUpdate) {
	pods := m.Pods
	if m.Source == messages.SourceAPI {
		var mirrors []*v1.Pod
		pods, mirrors = splitMirrors(m.Pods)
		if m.Op == messages.OpSet {
			defer a.setMirrors(ctx, mirrors)
		}
	}
	known := a.bySource[m.Source]
	if known == nil {
		known = map[types.UID]bool{}
		a.bySource[m.Source] = known
	}
	switch m.Op {
	case messages.OpSet:
		wanted := map[types.UID]bool{}
		for _, p := range pods {
			wanted[p.UID] = true
		}
		for uid := range known {
			if !wanted[uid] {
				a.remove(ctx, m.Source, uid, nil, "removed from source "+m.Source)
			}
		}
		for _, p := range pods {
			a.upsert(ctx, m.Source, p)
		}
	case messages.OpAdd, messages.OpUpdate:
		for _, p := range pods {
			a.upsert(ctx, m.Source, p)
		}
	case messages.OpDelete:
		for _, p := range pods {
			a.remove(ctx, m.Source, p.UID, p.DeletionGracePeriodSeconds, "deleted")
		}
	case messages.OpRemove:
		for _, p := range pods {
			a.remove(ctx, m.Source, p.UID, nil, "removed from source "+m.Source)
		}
	case messages.OpReconcile:
		// Status-only changes: the node's own view of status wins.
	}
}

// upsert starts a new pod (after admission) or hands a changed spec to its
// worker.
func (a *Actor) upsert(ctx actor.Context, source string, pod *v1.Pod) {
	a.bySource[source][pod.UID] = true
	if pod.DeletionTimestamp != nil {
		// Graceful deletion in the API: terminate with the grace period the
		// deletion asked for. A pod already being deleted when first seen
		// gets a worker too, which finds nothing to stop and lets the
		// status-reporter finish the deletion.
		if _, ok := a.pods[pod.UID]; !ok {
			if at, done := a.recentlyDone[pod.UID]; done && time.Since(at) < recentlyDoneFor {
				// Its termination is complete; the updates that follow (our
				// own status writes, until the API deletes the pod) need
				// no new worker and no new kill.
				return
			}
			delete(a.rejected, pod.UID)
			a.spawn(ctx, &podEntry{pod: pod, source: source}, pod.UID, pod.Name, pod.Namespace)
		}
		e, ok := a.pods[pod.UID]
		if !ok {
			return
		}
		e.pod = pod
		if e.finished {
			// Nothing runs any more: the deletion can complete at once.
			a.forget(ctx, pod.UID, e, true)
			return
		}
		if e.terminate == nil || !sameGrace(e.terminate.GracePeriod, pod.DeletionGracePeriodSeconds) {
			a.terminate(ctx, e, pod.DeletionGracePeriodSeconds, "deleted")
		}
		return
	}
	if e, ok := a.pods[pod.UID]; ok {
		switch {
		case e.pod == nil:
		case e.terminate == nil && e.end == nil && !e.finished && ended(pod):
			// Something other than this node ended the pod (the kubelet
			// writes a terminal phase only once its worker is done): as
			// upstream, it is torn down and not run again.
			e.pod = pod
			a.endPod(ctx, e)
		case e.terminate == nil && e.end == nil && !e.finished && specChanged(e.pod, pod):
			e.pod = pod
			supervision.Tell(ctx, e.worker, &messages.UpdatePod{Pod: pod})
		default:
			e.pod = pod
		}
		return
	}
	if _, ok := a.rejected[pod.UID]; ok {
		return
	}
	if ended(pod) {
		// Ended before this pod-manager saw it (before a restart of
		// actorlet, or rejected at admission): never admitted, never run.
		a.startEnded(ctx, source, pod)
		return
	}
	if r := admit(pod, a.admitted(), a.p.MaxPods, a.p.Allocatable); r != nil {
		a.log.Warn().Str("pod", pod.Namespace+"/"+pod.Name).Str("reason", r.Reason).Msg(r.Message)
		rejected := pod.DeepCopy()
		rejected.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: r.Reason, Message: "Pod was rejected: " + r.Message}
		a.rejected[pod.UID] = rejected
		supervision.Tell(ctx, a.p.StatusReporter, &messages.PodStatusReport{Pod: pod, Status: rejected.Status})
		// Nothing of it runs: the status-reporter may write its terminal
		// phase, which it refuses for a pod that could have containers.
		supervision.Tell(ctx, a.p.StatusReporter, &messages.PodFinished{Pod: pod})
		return
	}
	if len(pod.Spec.Volumes) > 0 {
		// Said once per pod, so that nobody mistakes a missing mount for a
		// bug in their application.
		a.log.Warn().Str("pod", pod.Namespace+"/"+pod.Name).Int("volumes", len(pod.Spec.Volumes)).
			Msg("volumes are not implemented yet: the pod's containers run without their volume mounts")
	}
	a.spawn(ctx, &podEntry{pod: pod, source: source}, pod.UID, pod.Name, pod.Namespace)
}

func (a *Actor) admitted() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(a.pods))
	for _, e := range a.pods {
		if e.pod != nil && e.terminate == nil && e.end == nil && !e.finished {
			out = append(out, e.pod)
		}
	}
	return out
}

// remove terminates a pod its source no longer wants.
func (a *Actor) remove(ctx actor.Context, source string, uid types.UID, grace *int64, reason string) {
	delete(a.bySource[source], uid)
	delete(a.rejected, uid)
	e, ok := a.pods[uid]
	switch {
	case !ok:
	case e.finished:
		a.forget(ctx, uid, e, true)
	default:
		a.terminate(ctx, e, grace, reason)
	}
}

func sameGrace(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// terminate asks a pod's worker to terminate it; repeated requests are
// passed on, since a later one may shorten the grace period.
func (a *Actor) terminate(ctx actor.Context, e *podEntry, grace *int64, reason string) {
	if e.worker == nil {
		return
	}
	e.terminate = &messages.TerminatePod{GracePeriod: grace, Reason: reason}
	supervision.Tell(ctx, e.worker, e.terminate)
}

func (a *Actor) spawn(ctx actor.Context, e *podEntry, uid types.UID, name, namespace string) {
	wr := &workerRuntime{rt: a.p.Runtime, orphan: e.pod == nil,
		crashLoop: podruntime.NewCrashLoopBackoff(a.p.MaxContainerRestartPeriod, time.Now)}
	wr.fresh.Store(a.isNew(e, uid))
	e.params = &podworker.Params{UID: uid, Name: name, Namespace: namespace, Log: a.p.Log, Registry: a.p.Registry, Runtime: wr}
	props := a.p.Registry.Props(podworker.Kind, podworker.New(e.params), nil)
	pid, err := ctx.SpawnNamed(props, workerName(uid, name, namespace))
	if err != nil {
		// The name is unique per UID: a clash means a worker of this UID is
		// still stopping. Its PodWorkerDone will be followed by this pod's
		// next update.
		a.log.Error().Err(err).Str("pod", namespace+"/"+name).Msg("spawn pod-worker")
		return
	}
	e.worker = pid
	e.state = podworker.Syncing.String()
	a.pods[uid] = e
}

// isNew tells whether the runtime holds nothing of a pod about to get its
// worker: the runtime did not have it when this pod-manager started, and
// no worker of this pod-manager has run it. Only pods of the API server
// qualify: their UIDs are never reused, while a static pod's UID is its
// manifest's hash and comes back with the manifest, its last run's remains
// maybe still in the runtime.
func (a *Actor) isNew(e *podEntry, uid types.UID) bool {
	if e.pod == nil || e.source != messages.SourceAPI || e.pod.DeletionTimestamp != nil || a.inRuntime == nil || a.inRuntime[uid] {
		return false
	}
	_, done := a.recentlyDone[uid]
	return !done
}

// listRuntime lists the UIDs the runtime holds, for isNew.
func (a *Actor) listRuntime(ctx actor.Context) {
	rt := a.p.Runtime
	supervision.Go(ctx, func() messages.Message {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		uids, err := rt.PodUIDs(c)
		if err == nil && uids == nil {
			uids = map[types.UID]bool{}
		}
		return &messages.RuntimePodsListed{UIDs: uids, Err: err}
	})
}

// workerName names a worker by its pod, as the dashboard shows it; the UID
// prefix keeps two incarnations of one pod name apart.
func workerName(uid types.UID, name, namespace string) string {
	short := string(uid)
	if len(short) > 8 {
		short = short[:8]
	}
	return namespace + "/" + name + "@" + short
}

// resume answers a worker's PodWorkerStarted with its pod or termination.
func (a *Actor) resume(ctx actor.Context, uid types.UID) {
	e, ok := a.pods[uid]
	if !ok {
		return
	}
	switch {
	case e.end != nil:
		supervision.Tell(ctx, e.worker, e.end)
	case e.terminate != nil && e.pod != nil:
		// A pod to terminate is never synced first: the termination
		// carries the pod, so that a pod deleted before its worker started
		// (or while it restarted) gets no sandbox on the way out.
		t := *e.terminate
		t.Pod = e.pod
		supervision.Tell(ctx, e.worker, &t)
		return
	case e.pod != nil:
		supervision.Tell(ctx, e.worker, &messages.UpdatePod{Pod: e.pod})
	}
	if e.terminate != nil {
		supervision.Tell(ctx, e.worker, e.terminate)
	}
}

func (a *Actor) done(ctx actor.Context, uid types.UID) {
	e, ok := a.pods[uid]
	if !ok {
		return
	}
	ctx.Stop(e.worker)
	e.worker = nil
	if e.pod != nil && e.terminate == nil {
		// The pod ran to completion: it stays, with its final status, for
		// as long as its source has it, and is not started again. A pod
		// that had ended before has its final status in the API already.
		e.finished = true
		if e.end == nil {
			supervision.Tell(ctx, a.p.StatusReporter, &messages.PodFinished{Pod: e.pod})
		}
		return
	}
	a.forget(ctx, uid, e, e.pod != nil)
	// A pod its source gave back while it was terminating (removed, then
	// re-added with the same UID) is started afresh.
	for source, uids := range a.bySource {
		if uids[uid] && e.pod != nil && e.pod.DeletionTimestamp == nil {
			a.upsert(ctx, source, e.pod)
			return
		}
	}
}

// forget drops a pod whose worker is gone, telling the status-reporter when
// the pod was wanted by a source (an orphan was never reported).
func (a *Actor) forget(ctx actor.Context, uid types.UID, e *podEntry, report bool) {
	delete(a.pods, uid)
	a.recentlyDone[uid] = time.Now()
	if report && !e.reportedGone {
		supervision.Tell(ctx, a.p.StatusReporter, &messages.PodFinished{Pod: e.pod, Removed: true})
	}
}

// route hands runtime events to the pods' workers; events of pods nobody
// wants reveal orphans once every source has been heard from.
func (a *Actor) route(ctx actor.Context, events []messages.PodLifecycleEvent) {
	byPod := map[types.UID][]messages.PodLifecycleEvent{}
	for _, ev := range events {
		byPod[ev.PodUID] = append(byPod[ev.PodUID], ev)
	}
	now := time.Now()
	for uid, at := range a.recentlyDone {
		if now.Sub(at) > recentlyDoneFor {
			delete(a.recentlyDone, uid)
		}
	}
	for uid, evs := range byPod {
		if e, ok := a.pods[uid]; ok {
			if e.worker != nil { // a finished pod has none: nothing to sync
				supervision.Tell(ctx, e.worker, &messages.RuntimeChanged{Events: evs})
			}
			continue
		}
		if !a.ready || a.recentlyDone[uid].After(now.Add(-recentlyDoneFor)) {
			continue
		}
		// Only a start or a sandbox appearing reveals a live orphan: the
		// remains of a finished pod that GC removes are not one.
		for _, ev := range evs {
			if ev.Type == messages.ContainerStarted || ev.Type == messages.SandboxChanged {
				a.adoptOrphan(ctx, uid, ev.PodName, ev.PodNamespace)
				break
			}
		}
	}
}

// adoptOrphan gives a pod that no source wants a worker that terminates it
// with the grace period recorded on its containers.
func (a *Actor) adoptOrphan(ctx actor.Context, uid types.UID, name, namespace string) {
	if _, ok := a.pods[uid]; ok {
		return
	}
	a.log.Info().Str("pod", namespace+"/"+name).Str("uid", string(uid)).Msg("no source wants this pod any more: terminating it")
	e := &podEntry{terminate: &messages.TerminatePod{Reason: "orphaned: no source wants this pod"}}
	a.spawn(ctx, e, uid, name, namespace)
}

// markReadyIfAllSeen looks for orphans once every source has sent its first
// update: only then is the desired set complete.
func (a *Actor) markReadyIfAllSeen(ctx actor.Context) {
	if a.ready {
		return
	}
	for _, s := range a.p.Sources {
		if !a.seen[s] {
			return
		}
	}
	a.ready = true
	desired := map[types.UID]bool{}
	for uid := range a.pods {
		desired[uid] = true
	}
	rt := a.p.Runtime
	supervision.Go(ctx, func() messages.Message {
		c, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		pods, err := rt.ListPods(c)
		found := &messages.OrphansFound{Err: err}
		for _, p := range pods {
			if !desired[p.UID] {
				found.Pods = append(found.Pods, messages.PodRef{UID: p.UID, Name: p.Name, Namespace: p.Namespace})
			}
		}
		return found
	})
}

// list returns the pods with their latest status, for /pods.
func (a *Actor) list() *messages.PodList {
	out := &messages.PodList{SourcesReady: a.ready}
	for uid, e := range a.pods {
		if e.worker != nil {
			out.Active = append(out.Active, uid)
		}
		if e.pod == nil {
			continue
		}
		p := e.pod.DeepCopy()
		p.Status = *e.status.DeepCopy()
		out.Pods = append(out.Pods, *p)
	}
	for _, p := range a.rejected {
		out.Pods = append(out.Pods, *p.DeepCopy())
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		return out.Pods[i].Namespace+"/"+out.Pods[i].Name < out.Pods[j].Namespace+"/"+out.Pods[j].Name
	})
	return out
}

// workerRuntime adapts podruntime to what a pod-worker needs, holding the
// pod's own crash-loop backoff, which outlives the worker's restarts.
type workerRuntime struct {
	rt        Runtime
	crashLoop *podruntime.Backoff
	orphan    bool
	// fresh: the runtime holds nothing of the pod (isNew) until its first
	// pass, which then need not list it. Atomic: a restarted worker's pass
	// may start while its predecessor's last one ends.
	fresh atomic.Bool
}

func (w *workerRuntime) SyncPod(ctx context.Context, pod *v1.Pod) podworker.SyncOutcome {
	var r podruntime.SyncResult
	if w.fresh.CompareAndSwap(true, false) {
		r = w.rt.SyncNewPod(ctx, pod, w.crashLoop)
	} else {
		r = w.rt.SyncPod(ctx, pod, w.crashLoop)
	}
	out := podworker.SyncOutcome{Status: r.APIStatus, RetryAfter: r.RetryAfter, Err: r.Err}
	if r.Settled {
		out.Observed = r.Status.States()
	}
	return out
}

func (w *workerRuntime) KillPod(ctx context.Context, pod *v1.Pod, uid types.UID, name, namespace string, grace int64, stopped func()) error {
	k := podruntime.Kill{UID: uid, Name: name, Namespace: namespace, GracePeriod: &grace, Stopped: stopped}
	if w.orphan {
		// No spec: the grace period recorded on the containers applies.
		k.GracePeriod = nil
	} else {
		// With the spec, the Killing events name each container's field
		// path.
		k.Pod = pod
	}
	return w.rt.Kill(ctx, k)
}

// specChanged reports whether the pod's spec differs. Most updates of a
// running pod are status writes (ours, echoed by the watch), so the cheap
// tests come first: the same resourceVersion, or the same non-zero
// generation (the API server bumps it on every spec change), is the same
// spec.
func specChanged(old, cur *v1.Pod) bool {
	if old.ResourceVersion != "" && old.ResourceVersion == cur.ResourceVersion {
		return false
	}
	if old.Generation > 0 && old.Generation == cur.Generation {
		return false
	}
	return !apiequality.Semantic.DeepEqual(old.Spec, cur.Spec)
}
