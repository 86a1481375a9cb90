// Package podmanager holds the pod-manager actor. It owns the desired set of
// pods: it merges the pod sources, admits or rejects each new pod, spawns one
// supervised pod-worker per pod UID, routes spec changes, terminations and
// runtime events to the workers, and stops a worker once its pod is
// terminated and cleaned up. Pods found in the runtime that no source wants
// (a manifest removed while actorlet was down) get a worker that only
// terminates them.
//
// Its decisions are a Machine (machine.go): each pod's Phase and every
// transition, a deterministic function of the events and the time given,
// with no I/O. The actor (this file) turns messages into the machine's
// events and carries out the commands that come back: spawning and
// stopping workers, telling them, reporting to the status-reporter, and
// listing the runtime off the mailbox.
//
// Mirror pods (the API server's reflection of a static pod) are kept apart
// and never run, as upstream's pod manager keeps them; a pod whose API phase
// is already Succeeded or Failed is never started again, only stopped (see
// ended.go).
package podmanager

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/actors/podworker"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "pod-manager"

// Runtime is what the pod-manager and its workers need of the container
// runtime (podruntime.Runtime).
type Runtime interface {
	SyncPod(ctx context.Context, pod *v1.Pod, vols map[string]volume.Mounted, backoff *podruntime.Backoff, probes results.Pod) podruntime.SyncResult
	SyncNewPod(ctx context.Context, pod *v1.Pod, vols map[string]volume.Mounted, backoff *podruntime.Backoff, probes results.Pod) podruntime.SyncResult
	ObservePod(ctx context.Context, pod *v1.Pod, fresh bool) podruntime.SyncResult
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
	// RootDir holds the checkpoint of the pods' allocations
	// (AllocatedPodsStateFile); empty (in tests) keeps none.
	RootDir string
	// Sysctls are the sysctls pods may set (the safe ones and
	// allowedUnsafeSysctls); nil: the safe set.
	Sysctls *SysctlAllowlist
	// AppArmor is why AppArmor profiles cannot be enforced (AppArmorHost);
	// nil: they can.
	AppArmor error
	// ImageVolumes is why the container runtime cannot mount image
	// volumes (ImageVolumeRuntime); nil: it can.
	ImageVolumes error
	// DRAManager prepares pods' ResourceClaims for their workers; nil:
	// none (no API server), and a pod with claims is refused.
	DRAManager *actor.PID
	// CPUManager, when set, has admission give exclusive CPUs (cpus.go);
	// nil (in tests): no CPU manager.
	CPUManager *CPUManager
	// MemoryManager, when set, has admission pin Guaranteed pods' memory
	// to NUMA nodes (memory.go); nil (in tests): none.
	MemoryManager *MemoryManager
	// AwaitNode: admission waits for the Node from the status-reporter
	// (asked for with RefreshNode at start); false in tests without one.
	AwaitNode bool
	// Events records the pods' events (rejections, resizes); nil: none.
	Events record.EventRecorder
	// StatusReporter receives every pod's status, and each pod's end.
	StatusReporter *actor.PID
	// ConfigSource is asked to send every source's pods again when the
	// pod-manager restarts, since a restart loses the desired set.
	ConfigSource *actor.PID
	// VolumeManager sets up the volumes of pods that have any; nil (in
	// tests) takes every pod's volumes for ready, with none set up.
	VolumeManager *actor.PID
	// Prober, when set, makes each pod-worker's prober (actors/prober);
	// nil (in tests) probes nothing.
	Prober *actor.Props
	// Tracer makes the pod-workers' sync spans; nil: none.
	Tracer trace.Tracer
	Log    zerolog.Logger
}

// Actor is the pod-manager actor: it routes messages into its Machine as
// events and carries out the commands that come back.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger
	m   *Machine
	// workers are the live workers, by pod UID.
	workers map[types.UID]*actor.PID
	// first: this is the first incarnation of the pod-manager under its
	// Props.
	first bool
	// cpuReconciling: a reconcile of the containers' cpusets is under
	// way; cpuApplied is the cpuset each running container was last
	// given, by container ID.
	cpuReconciling bool
	cpuApplied     map[string]string
	// stepStarted is when the running step of the machine began.
	stepStarted time.Time
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
		allocations := Allocations{}
		if a.p.RootDir != "" {
			var err error
			if allocations, err = LoadAllocations(a.p.RootDir); err != nil {
				a.log.Warn().Err(err).Msg("starting without the pods' allocations: running pods are admitted at their specs' resources")
			}
		}
		cfg := Config{Sources: a.p.Sources, MaxPods: a.p.MaxPods, Allocatable: a.p.Allocatable, Allocations: allocations,
			Sysctls: a.p.Sysctls, AppArmor: a.p.AppArmor, ImageVolumes: a.p.ImageVolumes, DRA: a.p.DRAManager != nil, AwaitNode: a.p.AwaitNode}
		if a.p.CPUManager != nil {
			cpus, err := a.p.CPUManager.Open(a.p.RootDir)
			if err != nil {
				// Bootstrap opened it before: the file changed under us.
				// Admitting without it would break the CPUs' exclusivity.
				panic(err)
			}
			cfg.CPUs, cfg.Topology = cpus, a.p.CPUManager.TopologyManager
		}
		if a.p.MemoryManager != nil {
			mem, err := a.p.MemoryManager.Open(a.p.RootDir)
			if err != nil {
				// As the CPU manager's: bootstrap opened it before.
				panic(err)
			}
			cfg.Memory = mem
		}
		a.m = NewMachine(cfg)
		a.workers = map[types.UID]*actor.PID{}
		a.startCPUs(ctx)
		a.startMemory()
		a.step(ctx, EvStarted{First: a.first})
		if a.p.AwaitNode && a.p.StatusReporter != nil {
			// A restart lost the Node: ask for it (the status-reporter also
			// sends it whenever it changes).
			supervision.Tell(ctx, a.p.StatusReporter, &messages.RefreshNode{})
		}
	case *messages.RuntimePodsListed:
		if m.Err != nil {
			a.log.Debug().Err(m.Err).Msg("listing the runtime's pods failed: every pod's first pass lists it")
			return
		}
		a.step(ctx, EvRuntimeListed{UIDs: m.UIDs})
	case *messages.PodUpdate:
		a.step(ctx, EvSourceSet{Source: m.Source, Pods: m.Pods})
		a.recordPodCounts()
	case *messages.PodWorkerStarted:
		a.step(ctx, EvWorkerStarted{UID: m.UID})
	case *messages.PodStatusChanged:
		a.step(ctx, EvWorkerStatus{UID: m.UID, Status: m.Status})
	case *messages.PodWorkerStopped:
		a.step(ctx, EvWorkerStopped{UID: m.UID})
	case *messages.PodWorkerDone:
		a.step(ctx, EvWorkerDone{UID: m.UID})
		a.recordPodCounts()
	case *messages.PodLifecycleEvents:
		a.step(ctx, EvRuntimeEvents{Events: m.Events})
	case *messages.OrphansFound:
		a.step(ctx, EvOrphansFound{Pods: m.Pods, Err: m.Err})
	case *messages.FindOrphansDue:
		a.step(ctx, EvFindOrphansDue{})
	case *messages.KillDeadline:
		a.step(ctx, EvKillDeadline{UID: m.UID})
	case *messages.VolumesReady:
		a.step(ctx, EvVolumesReady{UID: m.UID, Volumes: m.Volumes})
	case *messages.VolumeManagerRestarted:
		a.step(ctx, EvVolumeManagerRestarted{})
	case *messages.VolumesUnmounted:
		a.step(ctx, EvVolumesUnmounted{UID: m.UID})
	case *messages.EvictPod:
		a.step(ctx, EvEvict{UID: m.UID, GracePeriod: m.GracePeriod, Reason: m.Reason, Message: m.Message})
	case *messages.NodeChanged:
		a.step(ctx, EvNode{Node: m.Node, FromAPI: m.FromAPI})
		a.recordPodCounts()
	case *messages.NodePressure:
		a.step(ctx, EvNodePressure{Conditions: m.Conditions})
	case *messages.DevicesChanged:
		alloc := map[v1.ResourceName]int64{}
		for name, c := range m.Resources {
			alloc[name] = c.Allocatable
		}
		a.step(ctx, EvDevices{Allocatable: alloc, Holders: m.Holders})
	case *messages.NodeShuttingDown:
		a.step(ctx, EvNodeShuttingDown{ShuttingDown: m.ShuttingDown})
	case *messages.ReconcileCPUs:
		a.reconcileCPUs(ctx)
	case *messages.CPUsReconciled:
		a.cpusReconciled(ctx, m)
	case *messages.ResourceHealthChanged:
		// Handed on as it is: the worker keeps it, across its restarts.
		if pid, ok := a.workers[m.UID]; ok {
			supervision.Tell(ctx, pid, m)
		}
	case *messages.ListPods:
		ctx.Respond(a.m.List())
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: Kind, Healthy: true, LastActivity: time.Now(), Detail: a.m.Summary()})
	}
}

// step feeds one event to the machine and carries out its commands.
func (a *Actor) step(ctx actor.Context, ev Event) {
	a.stepStarted = time.Now()
	var failed []types.UID
	for _, c := range a.m.Step(ev, time.Now()) {
		if uid, ok := a.execute(ctx, c); !ok {
			failed = append(failed, uid)
		}
	}
	for _, uid := range failed {
		a.step(ctx, EvSpawnFailed{UID: uid})
	}
}

// execute carries out one command at the edge; it returns false, with the
// pod's UID, when a worker could not be spawned.
func (a *Actor) execute(ctx actor.Context, c Command) (types.UID, bool) {
	switch c := c.(type) {
	case CmdResendPods:
		if a.p.ConfigSource != nil {
			supervision.Tell(ctx, a.p.ConfigSource, &messages.ResendPods{})
		}
	case CmdListRuntime:
		a.listRuntime(ctx)
	case CmdFindOrphans:
		a.findOrphans(ctx, c.Desired)
	case CmdFindOrphansLater:
		supervision.After(ctx, c.After, &messages.FindOrphansDue{})
	case CmdKillDeadline:
		supervision.After(ctx, c.After, &messages.KillDeadline{UID: c.UID})
	case CmdSpawnWorker:
		if !a.spawn(ctx, c) {
			return c.UID, false
		}
	case CmdStopWorker:
		if pid, ok := a.workers[c.UID]; ok {
			ctx.Stop(pid)
			delete(a.workers, c.UID)
		}
	case CmdTell:
		// A worker that could not be spawned has no PID: what was meant
		// for it goes with the pod's next update.
		if pid, ok := a.workers[c.UID]; ok {
			supervision.Tell(ctx, pid, c.Message)
		}
	case CmdSaveAllocations:
		// A small file, written at once: the next decision must find it
		// written, as upstream's checkpoint is before a resize goes on.
		if a.p.RootDir != "" {
			if err := SaveAllocations(a.p.RootDir, c.All); err != nil {
				a.log.Error().Err(err).Msg("checkpointing the pods' allocations failed")
			}
		}
	case CmdSaveCPUs:
		a.saveCPUs(c.State)
	case CmdCountResources:
		a.countResources(c)
	case CmdSaveMemory:
		a.saveMemory(c.State)
	case CmdReportStatus:
		supervision.Tell(ctx, a.p.StatusReporter, &messages.PodStatusReport{Pod: c.Pod, Status: c.Status, Reconcile: c.Reconcile})
	case CmdReportFinished:
		supervision.Tell(ctx, a.p.StatusReporter, &messages.PodFinished{Pod: c.Pod, Removed: c.Removed})
	case CmdCheckMirror:
		supervision.Tell(ctx, a.p.StatusReporter, &messages.CheckMirrorPod{UID: c.UID})
	case CmdDeleteMirror:
		supervision.Tell(ctx, a.p.StatusReporter, &messages.DeleteMirrorPod{Pod: c.Pod})
	case CmdLog:
		a.log.WithLevel(c.Level).Fields(c.Fields).Msg(c.Message)
	case CmdRefreshNode:
		if a.p.StatusReporter != nil {
			supervision.Tell(ctx, a.p.StatusReporter, &messages.RefreshNode{})
		}
	case CmdEvent:
		podruntime.PodEvent(a.p.Events, c.Pod, c.Type, c.Reason, c.Message)
	case CmdCountPreemption:
		metrics.Preemptions.WithLabelValues(string(c.Resource)).Inc()
	case CmdCountAdmission:
		metrics.PodLevelResourcesAdmission.WithLabelValues(c.ConfigMode, c.QOSClass).Inc()
	case CmdMountVolumes:
		if a.p.VolumeManager == nil {
			supervision.Tell(ctx, ctx.Self(), &messages.VolumesReady{UID: c.Pod.UID, Volumes: messages.PodVolumes{}})
			break
		}
		supervision.Tell(ctx, a.p.VolumeManager, &messages.MountVolumes{Pod: c.Pod})
	case CmdUnmountVolumes:
		if a.p.VolumeManager == nil {
			supervision.Tell(ctx, ctx.Self(), &messages.VolumesUnmounted{UID: c.UID})
			break
		}
		supervision.Tell(ctx, a.p.VolumeManager, &messages.UnmountVolumes{UID: c.UID})
	}
	return "", true
}

// spawn starts a pod's worker with a runtime of its own, whose crash-loop
// backoff the worker's Props keep across its restarts.
func (a *Actor) spawn(ctx actor.Context, c CmdSpawnWorker) bool {
	wr := &workerRuntime{rt: a.p.Runtime, orphan: c.Orphan,
		crashLoop: podruntime.NewCrashLoopBackoff(a.p.MaxContainerRestartPeriod, time.Now)}
	wr.fresh.Store(c.Fresh)
	params := podworker.Params{UID: c.UID, Name: c.Name, Namespace: c.Namespace, Log: a.p.Log, Registry: a.p.Registry, Runtime: wr, DRA: a.p.DRAManager, Tracer: a.p.Tracer}
	if !wr.orphan {
		params.Prober = a.p.Prober
	}
	// A worker's prober restarts on its own, with the backoff of workers.
	props := a.p.Registry.Props(podworker.Kind, podworker.New(params), WorkerStrategy(a.p.Registry))
	pid, err := ctx.SpawnNamed(props, workerName(c.UID, c.Name, c.Namespace))
	if err != nil {
		// The name is unique per UID: a clash means a worker of this UID is
		// still stopping. Its PodWorkerDone will be followed by this pod's
		// next update.
		a.log.Error().Err(err).Str("pod", c.Namespace+"/"+c.Name).Msg("spawn pod-worker")
		return false
	}
	a.workers[c.UID] = pid
	return true
}

// listRuntime lists the UIDs the runtime holds, for the machine to tell
// new pods.
func (a *Actor) listRuntime(ctx actor.Context) {
	rt := a.p.Runtime
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, time.Minute)
		defer cancel()
		uids, err := rt.PodUIDs(c)
		if err == nil && uids == nil {
			uids = map[types.UID]bool{}
		}
		return &messages.RuntimePodsListed{UIDs: uids, Err: err}
	})
}

// findOrphans lists the runtime's pods and sends back those not desired.
func (a *Actor) findOrphans(ctx actor.Context, desired map[types.UID]bool) {
	rt := a.p.Runtime
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, time.Minute)
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

// workerName names a worker by its pod, as the dashboard shows it; the UID
// prefix keeps two incarnations of one pod name apart.
func workerName(uid types.UID, name, namespace string) string {
	short := string(uid)
	if len(short) > 8 {
		short = short[:8]
	}
	return namespace + "/" + name + "@" + short
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

func (w *workerRuntime) SyncPod(ctx context.Context, pod *v1.Pod, vols messages.PodVolumes, probes results.Pod) podworker.SyncOutcome {
	var r podruntime.SyncResult
	if w.fresh.CompareAndSwap(true, false) {
		r = w.rt.SyncNewPod(ctx, pod, vols, w.crashLoop, probes)
	} else {
		r = w.rt.SyncPod(ctx, pod, vols, w.crashLoop, probes)
	}
	return outcome(r)
}

// ObservePod reports the status of a pod whose volumes are not ready; the
// runtime still holds nothing of a fresh pod afterwards.
func (w *workerRuntime) ObservePod(ctx context.Context, pod *v1.Pod) podworker.SyncOutcome {
	return outcome(w.rt.ObservePod(ctx, pod, w.fresh.Load()))
}

func outcome(r podruntime.SyncResult) podworker.SyncOutcome {
	out := podworker.SyncOutcome{Status: r.APIStatus, RetryAfter: r.RetryAfter, Err: r.Err}
	if r.Settled {
		out.Observed = r.Status.States()
	}
	return out
}

func (w *workerRuntime) KillPod(ctx context.Context, pod *v1.Pod, uid types.UID, name, namespace string, grace int64, stopped func(final *v1.PodStatus)) error {
	k := podruntime.Kill{UID: uid, Name: name, Namespace: namespace, GracePeriod: &grace}
	k.Stopped = func(final *podruntime.PodStatus) {
		if final == nil || pod == nil || w.orphan {
			stopped(nil)
			return
		}
		s := podruntime.TerminalAPIStatus(pod, final, &pod.Status, time.Now())
		stopped(&s)
	}
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
