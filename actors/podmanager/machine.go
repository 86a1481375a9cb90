package podmanager

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/internal/retry"
	"github.com/actorlet/actorlet/internal/topologymanager"
	"github.com/actorlet/actorlet/messages"
)

// recentlyDoneFor is how long the UID of a pod whose worker finished is
// remembered, so that the runtime events of its own removal do not make it
// look like an orphan.
const recentlyDoneFor = time.Minute

// Phase is where the pod-manager holds one pod. Every phase but Finished
// has a live worker.
type Phase int

const (
	// Running: admitted; its worker syncs it toward its spec.
	Running Phase = iota
	// Ending: its phase in the API is Succeeded or Failed; its worker only
	// stops what is left of it and never syncs it.
	Ending
	// Terminating: deleted, or dropped by its source; its worker kills it.
	Terminating
	// Orphaned: found in the runtime, wanted by no source; its worker kills
	// it with the grace period recorded on its containers.
	Orphaned
	// Finished: it ran to completion, or had ended; no worker. It keeps its
	// final status until its source drops it.
	Finished
)

func (p Phase) String() string {
	switch p {
	case Running:
		return "running"
	case Ending:
		return "ending"
	case Terminating:
		return "terminating"
	case Orphaned:
		return "orphaned"
	case Finished:
		return "finished"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// PodState is one pod the pod-manager holds.
type PodState struct {
	Phase Phase
	// Pod is the latest spec its source sent; nil for an orphan.
	Pod    *v1.Pod
	Source string
	// Status is the latest status its worker reported with a phase.
	Status v1.PodStatus
	// Terminate is the termination asked of its worker, resent to a
	// restarted worker.
	Terminate *messages.TerminatePod
	// End stops a pod whose phase in the API is terminal; resent to a
	// restarted worker (it carries the pod).
	End *messages.TerminatePod
	// ReportedGone: the status-reporter was told the pod is finished and
	// removed when its worker stopped it, before the removal ended.
	ReportedGone bool
	// Stopped: its worker stopped every container and the sandbox (the
	// removal may go on): it no longer counts against the node.
	Stopped bool
	// VolumesAsked: the volume-manager was asked to set up the pod's
	// volumes; it is told to tear them down when the worker is done.
	VolumesAsked bool
	// Volumes are the pod's volumes once the volume-manager set them up,
	// resent to a restarted worker.
	Volumes messages.PodVolumes
	// Evicted is set once the eviction manager evicted the pod: every
	// status reported from then on is Failed with its reason.
	Evicted *Eviction
}

// hasWorker reports whether the pod has a live worker.
func (p *PodState) hasWorker() bool { return p.Phase != Finished }

// Config is what the pod-manager's decisions depend on that never changes.
type Config struct {
	// Sources are the pod sources configured; until each has sent its first
	// set, no pod in the runtime is taken for an orphan.
	Sources     []string
	MaxPods     int
	Allocatable v1.ResourceList
	// Allocations are the allocations checkpointed by an earlier run: a
	// pod admitted then is admitted again at what was allocated to it.
	Allocations Allocations
	// Sysctls are the sysctls pods may set; nil: the safe set.
	Sysctls *SysctlAllowlist
	// AppArmor is why AppArmor profiles cannot be enforced; nil: they can.
	AppArmor error
	// ImageVolumes is why the runtime cannot mount image volumes; nil: it
	// can.
	ImageVolumes error
	// DRA: a dra-manager prepares pods' ResourceClaims.
	DRA bool
	// CPUs is the CPU manager, whose state the machine then owns; nil: no
	// CPU manager (tests). Topology is the topology manager's policy and
	// scope, with the CPU manager as its hint provider.
	CPUs     *cpumanager.Manager
	Topology topologymanager.Config
	// Memory is the memory manager, whose state the machine then owns,
	// the topology manager's hint provider after the CPU manager; nil:
	// none (tests).
	Memory *memorymanager.Manager
	// AwaitNode: the Node comes as EvNode (from the status-reporter); no
	// pod is admitted before the first, and no API pod before one read
	// from the API, as upstream waits for its node informer. False (in
	// tests): admission runs against a Node with no labels or taints.
	AwaitNode bool
}

// Machine is the pod-manager's state and its transition function. It owns
// the desired set of pods: the sources' sets merged, each pod's phase, the
// pods admission refused, and what is known of the runtime.
type Machine struct {
	cfg Config

	pods map[types.UID]*PodState
	// rejected are pods admission refused: they fail, with no worker.
	rejected map[types.UID]*v1.Pod
	// waiting are new pods held before admission (see admitOrWait).
	waiting map[types.UID]*waitingPod
	// waitSeq orders the waiting pods by arrival.
	waitSeq int
	// node is the Node admission decides against; nil until EvNode.
	node *v1.Node
	// nodeFromAPI: node was read from the API server.
	nodeFromAPI bool
	// refreshing: the Node was asked for afresh (CmdRefreshNode) and has
	// not come yet.
	refreshing bool
	// pressure are the node conditions under pressure (EvNodePressure).
	pressure []v1.NodeConditionType
	// devices are the healthy devices of each device plugin resource
	// (EvDevices).
	devices map[v1.ResourceName]int64
	// deviceHolders are the pods holding devices of each resource.
	deviceHolders map[v1.ResourceName][]types.UID
	// shuttingDown: the node is shutting down (EvNodeShuttingDown).
	shuttingDown bool
	bySource     map[string]map[types.UID]bool
	seen         map[string]bool
	// ready: every source has sent its first set.
	ready bool
	// orphansListed: the runtime's pods have been listed since ready, and
	// those no source wants adopted as orphans. Until then a pod the
	// runtime still runs may have no worker, so nothing is said to be
	// complete (List). orphanFailures counts the listings that failed in
	// a row, for the retry's backoff.
	orphansListed  bool
	orphanFailures int
	// recentlyDone holds when each recently forgotten pod was forgotten.
	recentlyDone map[types.UID]time.Time
	// mirrors are the mirror pods in the API server's last set, by full
	// name (namespace/name, shared with their static pod).
	mirrors map[string]*v1.Pod
	// mirrorsDeleting are the UIDs of the orphaned mirror pods whose
	// deletion was asked (CmdDeleteMirror).
	mirrorsDeleting map[types.UID]bool
	// unmounting holds the pods whose volumes are being torn down; those
	// deleted from the API wait in goneAfterUnmount to be reported gone
	// until it is done, as upstream deletes a pod only once its volumes are
	// unmounted.
	unmounting       map[types.UID]bool
	goneAfterUnmount map[types.UID]*v1.Pod
	// inRuntime holds the UIDs the runtime had when the pod-manager first
	// started; nil until it is answered (or when it failed): no pod is then
	// taken for new.
	inRuntime map[types.UID]bool

	// alloc holds the resources admitted for each running pod (resize.go);
	// pending, the resizes that wait, with their reason.
	alloc   Allocations
	pending map[types.UID]*ResizePending

	// cpus is the CPU manager's state and decisions (cpus.go); nil: none.
	cpus *cpumanager.Manager
	// mem is the memory manager's state and decisions (memory.go); nil:
	// none.
	mem *memorymanager.Manager

	// cmds collects the commands of the step under way.
	cmds []Command
}

// NewMachine returns the state of a pod-manager that knows of no pod.
func NewMachine(cfg Config) *Machine {
	m := &Machine{
		cfg:          cfg,
		pods:         map[types.UID]*PodState{},
		rejected:     map[types.UID]*v1.Pod{},
		waiting:      map[types.UID]*waitingPod{},
		bySource:     map[string]map[types.UID]bool{},
		seen:         map[string]bool{},
		recentlyDone: map[types.UID]time.Time{},
		mirrors:      map[string]*v1.Pod{},
		alloc:        Allocations{},
		pending:      map[types.UID]*ResizePending{},
		cpus:         cfg.CPUs,
		mem:          cfg.Memory,

		unmounting:       map[types.UID]bool{},
		goneAfterUnmount: map[types.UID]*v1.Pod{},
	}
	maps.Copy(m.alloc, cfg.Allocations)
	return m
}

// Event is what happens to the pod-manager; one type per kind.
type Event interface{ isEvent() }

// EvStarted: the pod-manager (re)started with no state. First: this is its
// first start, when the runtime's pods are listed (after a restart, the
// stopped workers' last CRI calls may still be landing); after a restart,
// the sources are asked for their sets again.
type EvStarted struct{ First bool }

// EvRuntimeListed: the UIDs of the pods the runtime holds (nil when the
// listing failed).
type EvRuntimeListed struct{ UIDs map[types.UID]bool }

// EvSourceSet: a source's whole set of pods.
type EvSourceSet struct {
	Source string
	Pods   []*v1.Pod
}

// EvWorkerStarted: a pod's worker (re)started and asks for its pod.
type EvWorkerStarted struct{ UID types.UID }

// EvWorkerStatus: a pod's worker reported the pod's status.
type EvWorkerStatus struct {
	UID    types.UID
	Status v1.PodStatus
}

// EvWorkerStopped: nothing of a terminating pod runs any more; its removal
// goes on.
type EvWorkerStopped struct{ UID types.UID }

// EvWorkerDone: a pod's worker is done: the pod terminated, or ran to
// completion.
type EvWorkerDone struct{ UID types.UID }

// EvRuntimeEvents: PLEG saw the runtime change.
type EvRuntimeEvents struct{ Events []messages.PodLifecycleEvent }

// EvOrphansFound: the pods the runtime held that no source wanted once
// every source had sent its set; Err: the runtime could not be listed.
type EvOrphansFound struct {
	Pods []messages.PodRef
	Err  error
}

// EvFindOrphansDue: the wait after a failed search for orphans is over.
type EvFindOrphansDue struct{}

// EvSpawnFailed: a worker could not be spawned (one of the same UID is
// still stopping); the pod's next update brings it back.
type EvSpawnFailed struct{ UID types.UID }

// EvVolumesReady: the volume-manager set up every volume of the pod.
type EvVolumesReady struct {
	UID     types.UID
	Volumes messages.PodVolumes
}

// EvVolumeManagerRestarted: the volume-manager lost what it knew.
type EvVolumeManagerRestarted struct{}

// EvVolumesUnmounted: the volume-manager tore the pod's volumes down.
type EvVolumesUnmounted struct{ UID types.UID }

func (EvStarted) isEvent()        {}
func (EvRuntimeListed) isEvent()  {}
func (EvSourceSet) isEvent()      {}
func (EvWorkerStarted) isEvent()  {}
func (EvWorkerStatus) isEvent()   {}
func (EvWorkerStopped) isEvent()  {}
func (EvWorkerDone) isEvent()     {}
func (EvRuntimeEvents) isEvent()  {}
func (EvOrphansFound) isEvent()   {}
func (EvFindOrphansDue) isEvent() {}
func (EvSpawnFailed) isEvent()    {}
func (EvVolumesReady) isEvent()   {}

// EvNode: the Node admission decides against changed (or was read again
// on CmdRefreshNode). FromAPI: it was read from the API server; otherwise
// it is the Node built from the configuration.
type EvNode struct {
	Node    *v1.Node
	FromAPI bool
}

// EvNodePressure: the node conditions under pressure now (none: empty).
type EvNodePressure struct{ Conditions []v1.NodeConditionType }

// EvDevices: the healthy devices of each device plugin resource now, and
// the pods holding devices of each.
type EvDevices struct {
	Allocatable map[v1.ResourceName]int64
	Holders     map[v1.ResourceName][]types.UID
}

func (EvDevices) isEvent() {}

// EvNodeShuttingDown: whether the node is shutting down now.
type EvNodeShuttingDown struct{ ShuttingDown bool }

func (EvNodeShuttingDown) isEvent() {}

func (EvVolumeManagerRestarted) isEvent() {}
func (EvVolumesUnmounted) isEvent()       {}
func (EvNode) isEvent()                   {}
func (EvNodePressure) isEvent()           {}

// Command is what the actor must do at the edge after a step.
type Command interface{ isCommand() }

// CmdResendPods: ask every source to send its pods again.
type CmdResendPods struct{}

// CmdListRuntime: list the UIDs the runtime holds; EvRuntimeListed follows.
type CmdListRuntime struct{}

// CmdFindOrphans: list the runtime's pods and send back, as
// EvOrphansFound, those not in Desired.
type CmdFindOrphans struct{ Desired map[types.UID]bool }

// CmdFindOrphansLater: the runtime could not be listed; EvFindOrphansDue
// after After.
type CmdFindOrphansLater struct{ After time.Duration }

// CmdSpawnWorker: spawn the pod's worker. Orphan: no spec, the grace
// periods recorded on the containers apply. Fresh: the runtime holds
// nothing of the pod, so its first pass need not list it.
type CmdSpawnWorker struct {
	UID             types.UID
	Name, Namespace string
	Orphan, Fresh   bool
}

// CmdStopWorker: stop the pod's worker, which is done.
type CmdStopWorker struct{ UID types.UID }

// CmdTell: send Message (UpdatePod, TerminatePod, RuntimeChanged) to the
// pod's worker.
type CmdTell struct {
	UID     types.UID
	Message messages.Message
}

// CmdReportStatus: hand the pod's status to the status-reporter;
// Reconcile: the API shows another one (messages.PodStatusReport).
type CmdReportStatus struct {
	Pod       *v1.Pod
	Status    v1.PodStatus
	Reconcile bool
}

// CmdReportFinished: tell the status-reporter nothing of the pod runs any
// more (Removed: and it is gone for good, so it may go from the API).
type CmdReportFinished struct {
	Pod     *v1.Pod
	Removed bool
}

// CmdCheckMirror: the mirror pod of this running static pod went; have the
// status-reporter check it now.
type CmdCheckMirror struct{ UID types.UID }

// CmdDeleteMirror: have the status-reporter delete this orphaned mirror
// pod.
type CmdDeleteMirror struct{ Pod *v1.Pod }

// CmdMountVolumes: ask the volume-manager to set up the pod's volumes (or
// to refresh them: the pod's metadata changed).
type CmdMountVolumes struct{ Pod *v1.Pod }

// CmdUnmountVolumes: nothing of the pod runs any more; have the
// volume-manager tear its volumes down.
type CmdUnmountVolumes struct{ UID types.UID }

// CmdRefreshNode: read the Node from the API server again; EvNode
// follows, changed or not.
type CmdRefreshNode struct{}

// CmdEvent: record an event about the pod.
type CmdEvent struct {
	Pod                   *v1.Pod
	Type, Reason, Message string
}

// CmdLog: log Message about a pod at Level, with Fields.
type CmdLog struct {
	Level   zerolog.Level
	Message string
	Fields  map[string]any
}

func (CmdRefreshNode) isCommand()      {}
func (CmdEvent) isCommand()            {}
func (CmdResendPods) isCommand()       {}
func (CmdListRuntime) isCommand()      {}
func (CmdFindOrphans) isCommand()      {}
func (CmdFindOrphansLater) isCommand() {}
func (CmdSpawnWorker) isCommand()      {}
func (CmdStopWorker) isCommand()       {}
func (CmdTell) isCommand()             {}
func (CmdReportStatus) isCommand()     {}
func (CmdReportFinished) isCommand()   {}
func (CmdCheckMirror) isCommand()      {}
func (CmdDeleteMirror) isCommand()     {}
func (CmdLog) isCommand()              {}
func (CmdMountVolumes) isCommand()     {}
func (CmdUnmountVolumes) isCommand()   {}

// Step applies ev, which the actor handles at now, and returns the
// commands to carry out, in order. It is the only way the machine changes;
// it does no I/O and reads no clock, and the same events at the same times
// give the same commands. It changes the machine in place, as etcd raft's
// Step does: copying every pod on every event would buy nothing.
func (m *Machine) Step(ev Event, now time.Time) []Command {
	m.cmds = nil
	m.step(ev, now)
	cmds := m.cmds
	m.cmds = nil
	return cmds
}

// step hands ev to its handler, which emits its commands.
func (m *Machine) step(ev Event, now time.Time) {
	switch e := ev.(type) {
	case EvStarted:
		m.onStarted(e)
	case EvRuntimeListed:
		m.inRuntime = e.UIDs
	case EvSourceSet:
		m.onSourceSet(e, now)
	case EvWorkerStarted:
		m.resume(e.UID)
	case EvWorkerStatus:
		m.onWorkerStatus(e, now)
	case EvWorkerStopped:
		m.onWorkerStopped(e, now)
	case EvWorkerDone:
		m.done(e.UID, now)
	case EvRuntimeEvents:
		m.route(e.Events, now)
	case EvOrphansFound:
		m.onOrphansFound(e)
	case EvFindOrphansDue:
		m.onFindOrphansDue()
	case EvSpawnFailed:
		m.onSpawnFailed(e)
	case EvVolumesReady:
		m.onVolumesReady(e)
	case EvVolumeManagerRestarted:
		m.onVolumeManagerRestarted()
	case EvKillDeadline:
		m.killDeadline(e.UID)
	case EvEvict:
		m.evict(e, metav1.NewTime(now))
	case EvNode:
		m.onNode(e, now)
	case EvNodePressure:
		m.pressure = slices.Clone(e.Conditions)
	case EvDevices:
		m.devices, m.deviceHolders = maps.Clone(e.Allocatable), maps.Clone(e.Holders)
	case EvNodeShuttingDown:
		m.shuttingDown = e.ShuttingDown
	case EvVolumesUnmounted:
		m.onVolumesUnmounted(e)
	default:
		panic(fmt.Sprintf("podmanager: unknown event %T", ev))
	}
}

func (m *Machine) onStarted(e EvStarted) {
	if e.First {
		// The config-source, spawned after the pod-manager, sends every
		// source's first set by itself. Asking it now could reach it in
		// the instant protoactor has registered its PID but not yet its
		// mailbox's dispatcher: the send panics here and leaves its
		// mailbox scheduled with no one to run it, so that no pod would
		// ever come.
		m.emit(CmdListRuntime{})
	} else {
		// A restart lost the desired set: the sources send it again.
		m.emit(CmdResendPods{})
	}
	m.markReadyIfAllSeen()
}

func (m *Machine) onSourceSet(e EvSourceSet, now time.Time) {
	m.setSource(e.Source, e.Pods, now)
	m.seen[e.Source] = true
	m.markReadyIfAllSeen()
}

// onWorkerStatus hands a worker's status on to the status-reporter, as
// the status of an evicted pod once it was evicted.
func (m *Machine) onWorkerStatus(e EvWorkerStatus, now time.Time) {
	// A worker reports its phase before its first sync has observed
	// anything (and an ended pod's worker never syncs): a status without a
	// phase is no status, and writing it would blank the API's phase.
	p, ok := m.pods[e.UID]
	if !ok || e.Status.Phase == "" {
		return
	}
	if p.Evicted != nil && p.Phase == Finished {
		// Its final status is set (nothing of it runs); the worker
		// repeats its last one as it ends.
		return
	}
	p.Status = e.Status
	if p.Evicted != nil && p.Pod != nil {
		p.Status = evictedStatus(p.Pod, e.Status, p.Evicted, metav1.NewTime(now), false)
	}
	if p.Pod != nil {
		m.emit(CmdReportStatus{Pod: p.Pod, Status: withResizePending(p.Status, m.pending[e.UID])})
	}
}

func (m *Machine) onWorkerStopped(e EvWorkerStopped, now time.Time) {
	p, ok := m.pods[e.UID]
	if !ok {
		return
	}
	// Nothing of the pod runs: its volumes go, and it no longer holds
	// what admission counts.
	p.Stopped = true
	m.unmount(e.UID, p)
	m.admitPreempting(now)
	// A pod deleted from the API goes from it once nothing of it runs and
	// its volumes are unmounted, as upstream; its removal from the runtime
	// goes on.
	if p.Terminate != nil && p.Pod != nil && p.Pod.DeletionTimestamp != nil && !p.ReportedGone {
		p.ReportedGone = true
		m.reportGone(e.UID, p.Pod)
	}
}

func (m *Machine) onOrphansFound(e EvOrphansFound) {
	if e.Err != nil {
		// A pod the runtime still runs, that no source wants, has no
		// worker yet: its directories must not be taken for an orphaned
		// pod's and torn down under its containers. List says the set is
		// incomplete until a listing succeeds.
		m.orphanFailures++
		after := orphanSearchBackoff.After(m.orphanFailures)
		m.log(zerolog.WarnLevel, "listing the runtime's pods failed: orphaned pods and their directories are left alone until it succeeds",
			map[string]any{"error": e.Err.Error(), "retryIn": after.String()})
		m.emit(CmdFindOrphansLater{After: after})
		return
	}
	m.orphansListed, m.orphanFailures = true, 0
	for _, o := range e.Pods {
		m.adoptOrphan(o.UID, o.Name, o.Namespace)
	}
}

func (m *Machine) onFindOrphansDue() {
	if !m.orphansListed {
		m.emit(CmdFindOrphans{Desired: m.desired()})
	}
}

func (m *Machine) onSpawnFailed(e EvSpawnFailed) {
	if p, ok := m.pods[e.UID]; ok {
		// Its next update asks for its volumes again.
		m.unmount(e.UID, p)
	}
	delete(m.pods, e.UID)
}

func (m *Machine) onVolumesReady(e EvVolumesReady) {
	p, ok := m.pods[e.UID]
	if !ok || !p.VolumesAsked || p.Volumes != nil {
		return
	}
	p.Volumes = e.Volumes
	if p.Phase == Running {
		m.tell(e.UID, &messages.VolumesReady{UID: e.UID, Volumes: e.Volumes})
	}
}

// onVolumeManagerRestarted asks again what the volume-manager lost, in
// the order it was asked: a pod whose teardown is unconfirmed and that asks
// for its volumes again was given back (or respawned) after that teardown
// was asked for. The volume-manager sets up a pod's volumes asked for during
// their teardown once that is done; asked the other way round, it would
// tear down the volumes of a running pod, whose worker is then told they
// are ready.
func (m *Machine) onVolumeManagerRestarted() {
	for _, uid := range slices.Sorted(maps.Keys(m.unmounting)) {
		m.emit(CmdUnmountVolumes{UID: uid})
	}
	for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
		if p := m.pods[uid]; p.VolumesAsked && p.Phase == Running {
			m.emit(CmdMountVolumes{Pod: p.Pod})
		}
	}
}

func (m *Machine) onNode(e EvNode, now time.Time) {
	m.node, m.refreshing = e.Node, false
	if e.FromAPI {
		m.nodeFromAPI = true
	}
	m.admitWaiting(now)
}

func (m *Machine) onVolumesUnmounted(e EvVolumesUnmounted) {
	delete(m.unmounting, e.UID)
	if pod, ok := m.goneAfterUnmount[e.UID]; ok {
		delete(m.goneAfterUnmount, e.UID)
		m.emit(CmdReportFinished{Pod: pod, Removed: true})
	}
}

func (m *Machine) emit(c Command) { m.cmds = append(m.cmds, c) }

func (m *Machine) tell(uid types.UID, msg messages.Message) {
	m.emit(CmdTell{UID: uid, Message: msg})
}

func (m *Machine) log(level zerolog.Level, msg string, fields map[string]any) {
	m.emit(CmdLog{Level: level, Message: msg, Fields: fields})
}

// setSource applies one source's set to the desired set. The API server's
// mirror pods are set apart first: they are not pods to run.
func (m *Machine) setSource(source string, pods []*v1.Pod, now time.Time) {
	var mirrors []*v1.Pod
	if source == messages.SourceAPI {
		pods, mirrors = splitMirrors(pods)
	}
	known := m.bySource[source]
	if known == nil {
		known = map[types.UID]bool{}
		m.bySource[source] = known
	}
	wanted := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		wanted[p.UID] = true
	}
	// Every set of the API server (each status write echoed) comes here:
	// only the pods it drops are sorted, for the order of their commands.
	var dropped []types.UID
	for uid := range known {
		if !wanted[uid] {
			dropped = append(dropped, uid)
		}
	}
	slices.Sort(dropped)
	for _, uid := range dropped {
		m.remove(source, uid, "removed from source "+source, now)
	}
	for _, p := range pods {
		m.upsert(source, p, now)
	}
	if source == messages.SourceAPI {
		m.setMirrors(mirrors)
	}
}

// upsert starts a new pod (after admission) or hands a changed spec to its
// worker.
func (m *Machine) upsert(source string, pod *v1.Pod, now time.Time) {
	uid := pod.UID
	m.bySource[source][uid] = true
	if pod.DeletionTimestamp != nil {
		// Graceful deletion in the API: terminate with the grace period the
		// deletion asked for. A pod already being deleted when first seen
		// gets a worker too, which finds nothing to stop and lets the
		// status-reporter finish the deletion.
		delete(m.rejected, uid)
		delete(m.waiting, uid)
		p, ok := m.pods[uid]
		if !ok {
			if at, done := m.recentlyDone[uid]; done && now.Sub(at) < recentlyDoneFor {
				// Its termination is complete; the updates that follow (our
				// own status writes, until the API deletes the pod) need
				// no new worker and no new kill.
				return
			}
			p = &PodState{Phase: Running, Pod: pod, Source: source}
			m.spawn(p, uid, pod.Name, pod.Namespace)
		}
		p.Pod = pod
		if p.Phase == Orphaned {
			// A source claims the orphan as it deletes it: the pod is
			// reported as any pod deleted.
			p.Phase = Terminating
		}
		if p.Phase == Finished {
			// Nothing runs any more: the deletion can complete at once.
			m.forget(uid, p, true, now)
			return
		}
		if p.Terminate == nil || !sameGrace(p.Terminate.GracePeriod, pod.DeletionGracePeriodSeconds) {
			m.terminate(uid, p, pod.DeletionGracePeriodSeconds, "deleted")
		}
		return
	}
	if p, ok := m.pods[uid]; ok {
		if p.Phase == Running && source == messages.SourceAPI && p.Pod != nil && p.Pod.ResourceVersion != pod.ResourceVersion &&
			p.Status.Phase != "" && !ended(pod) && statusDiverged(pod.Status, p.Status) {
			// Someone else changed what the node reports (the
			// node-lifecycle controller marks the pods of a node it lost
			// not Ready): the node's status is written again, as
			// upstream's status manager reconciles.
			m.emit(CmdReportStatus{Pod: pod, Status: withResizePending(p.Status, m.pending[uid]), Reconcile: true})
		}
		switch {
		case p.Phase == Orphaned:
		case p.Phase == Running && ended(pod):
			// Something other than this node ended the pod (the kubelet
			// writes a terminal phase only once its worker is done): as
			// upstream, it is torn down and not run again.
			p.Pod = pod
			m.endPod(uid, p)
		case p.Phase == Running && specChanged(p.Pod, pod):
			refresh := p.VolumesAsked
			p.Pod = pod
			// A changed container's resources are a resize: the worker
			// gets the pod at what the node allocates to it.
			before := m.alloc[uid]
			m.resize(uid, p, now)
			m.tell(uid, &messages.UpdatePod{Pod: m.workerPod(uid, p)})
			if shrank(before, m.alloc[uid]) {
				m.retryDeferred(now)
			}
			if refresh {
				m.emit(CmdMountVolumes{Pod: pod})
			}
		case p.Phase == Running && metadataChanged(p.Pod, pod):
			// The pod's labels and annotations reach its containers
			// through env fieldRefs and subPathExpr (the worker's next
			// container uses them) and downward API volumes.
			p.Pod = pod
			m.tell(uid, &messages.UpdatePod{Pod: m.workerPod(uid, p)})
			if p.VolumesAsked {
				m.emit(CmdMountVolumes{Pod: pod})
			}
		case p.Phase == Running && readinessGatesChanged(p.Pod, pod):
			// Others set the conditions of the pod's readiness gates
			// through the API; its Ready condition follows them.
			p.Pod = pod
			m.tell(uid, &messages.UpdatePod{Pod: m.workerPod(uid, p)})
		default:
			p.Pod = pod
		}
		return
	}
	if _, ok := m.rejected[uid]; ok {
		return
	}
	if w, ok := m.waiting[uid]; ok && !ended(pod) {
		w.source, w.pod = source, pod
		return
	}
	delete(m.waiting, uid)
	if ended(pod) {
		// Ended before this pod-manager saw it (before a restart of
		// actorlet, or rejected at admission): never admitted, never run.
		m.startEnded(source, pod)
		return
	}
	m.admitOrWait(source, pod, false, now)
}

// admitOrWait admits a new pod, rejects it, or holds it (waiting) until
// admission can decide: while the Node is unknown (for an API pod, until
// it is read from the API), and, when node affinity alone fails, until
// the Node is read again (retried then: the second failure rejects it).
func (m *Machine) admitOrWait(source string, pod *v1.Pod, retried bool, now time.Time) {
	uid := pod.UID
	if m.cfg.AwaitNode && (m.node == nil || (!isStaticSource(source) && !m.nodeFromAPI)) {
		m.wait(source, pod, false)
		return
	}
	r := m.decide(source, pod)
	if r != nil {
		// What admission allocated before the refusal goes back; a pod
		// admitted later allocates again.
		m.releaseCPUs(string(uid))
		m.releaseMemory(string(uid))
	}
	if r != nil && r.AffinityOnly && !retried && m.cfg.AwaitNode {
		m.wait(source, pod, true)
		if !m.refreshing {
			m.refreshing = true
			m.emit(CmdRefreshNode{})
		}
		return
	}
	if r != nil && r.Preempt {
		m.preemptFor(source, pod, r.Shortfalls, now)
		return
	}
	delete(m.waiting, uid)
	if r != nil {
		m.reject(pod, r)
		return
	}
	p := &PodState{Phase: Running, Pod: pod, Source: source}
	m.emit(admissionCount(pod))
	m.spawn(p, uid, pod.Name, pod.Namespace)
	if _, ok := m.alloc[uid]; !ok {
		m.alloc[uid] = allocationOf(pod)
		m.saveAllocations()
	} else {
		m.resize(uid, p, now)
	}
	if len(pod.Spec.Volumes) > 0 {
		// Its worker creates no container before the volumes are ready.
		p.VolumesAsked = true
		m.emit(CmdMountVolumes{Pod: pod})
	}
}

// waitingPod is a new pod held before admission.
type waitingPod struct {
	source string
	pod    *v1.Pod
	seq    int
	// affinity: node affinity alone failed; the Node is being read again.
	affinity bool
	// preempting: a critical pod waits for pods stopped to make room.
	preempting bool
}

// wait holds a pod before admission, keeping its place in the order of
// arrival.
func (m *Machine) wait(source string, pod *v1.Pod, affinity bool) {
	w, ok := m.waiting[pod.UID]
	if !ok {
		m.waitSeq++
		w = &waitingPod{seq: m.waitSeq}
		m.waiting[pod.UID] = w
	}
	w.source, w.pod, w.affinity = source, pod, affinity
}

// admitWaiting admits (or rejects, or holds again) the waiting pods in
// their order of arrival, as upstream admits new pods by creation time.
func (m *Machine) admitWaiting(now time.Time) {
	for _, w := range m.waitingInOrder() {
		if m.waiting[w.pod.UID] != w {
			continue
		}
		m.admitOrWait(w.source, w.pod, w.affinity, now)
	}
}

// waitingInOrder are the waiting pods in their order of arrival.
func (m *Machine) waitingInOrder() []*waitingPod {
	ws := slices.Collect(maps.Values(m.waiting))
	slices.SortFunc(ws, func(a, b *waitingPod) int { return a.seq - b.seq })
	return ws
}

// decide runs admission; a panic in it rejects the pod (upstream's
// UnexpectedAdmissionError) rather than failing the pod-manager.
func (m *Machine) decide(source string, pod *v1.Pod) (r *Rejection) {
	defer func() {
		if err := recover(); err != nil {
			r = &Rejection{Reason: ReasonUnexpected, Message: fmt.Sprintf("Unexpected error while attempting to admit the pod: %v", err)}
		}
	}()
	// A pod admitted by an earlier run is admitted at what was allocated
	// to it then, as upstream's AddPod; its spec may have been resized since.
	return admit(AllocatedPod(pod, m.alloc[pod.UID]), m.admitted(), Admission{Node: m.node, MaxPods: m.cfg.MaxPods, Allocatable: m.cfg.Allocatable,
		Sysctls: m.cfg.Sysctls, AppArmor: m.cfg.AppArmor, ImageVolumes: m.cfg.ImageVolumes, DRA: m.cfg.DRA, Pressure: m.pressure, Devices: m.devices, DeviceHolders: m.deviceHolders, Static: isStaticSource(source),
		ShuttingDown: m.shuttingDown, AllocateResources: m.allocateResources()})
}

// reject fails a pod admission refused, as upstream's rejectPod: a Warning
// event, and the phase Failed with the reason and "Pod was rejected: "
// before the message. In the API the pod stays Failed, so that it is never
// admitted again, even after a restart (see ended).
func (m *Machine) reject(pod *v1.Pod, r *Rejection) {
	m.log(zerolog.WarnLevel, "pod rejected: "+r.Message, map[string]any{"pod": fullName(pod), "reason": r.Reason})
	m.emit(CmdEvent{Pod: pod, Type: v1.EventTypeWarning, Reason: r.Reason, Message: r.Message})
	rejected := pod.DeepCopy()
	rejected.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: r.Reason, Message: "Pod was rejected: " + r.Message,
		QOSClass: cgroups.QOSClass(pod), ObservedGeneration: pod.Generation}
	m.rejected[pod.UID] = rejected
	m.emit(CmdReportStatus{Pod: pod, Status: rejected.Status})
	// Nothing of it runs: the status-reporter may write its terminal
	// phase, which it refuses for a pod that could have containers.
	m.emit(CmdReportFinished{Pod: pod})
}

// admitted returns the pods admission counts against the node: those that
// run, and those being stopped (their resources and host ports are still
// taken) until nothing of them runs, as upstream's active pods (a pod its
// worker terminated is inactive, and a deleted one leaves the API then: a
// preemptor the scheduler binds in its place must fit).
func (m *Machine) admitted() []*v1.Pod {
	out := make([]*v1.Pod, 0, len(m.pods))
	for uid, p := range m.pods {
		if counts(p) {
			// At what the node allocated, not what the spec asks for.
			out = append(out, m.workerPod(uid, p))
		}
	}
	return out
}

// counts reports whether a pod counts against the node: it runs, or is
// being stopped (deleted, evicted or preempted) and something of it still
// runs. A pod that ended by itself (its phase terminal) takes no room: its
// containers have exited, as upstream finds a terminal pod's at a restart.
func counts(p *PodState) bool {
	switch p.Phase {
	case Running:
		return true
	case Terminating:
		return p.Pod != nil && !p.Stopped
	case Ending:
		return p.Pod != nil && p.Evicted != nil && !p.Stopped
	}
	return false
}

// remove terminates a pod its source no longer wants, with the grace
// period recorded on its containers.
func (m *Machine) remove(source string, uid types.UID, reason string, now time.Time) {
	delete(m.bySource[source], uid)
	if rejected, ok := m.rejected[uid]; ok {
		// Its Failed status was reported: the status-reporter keeps it
		// until told the pod is gone. A Failed pod leaves the API at once,
		// with no update showing its deletion first.
		delete(m.rejected, uid)
		m.reportGone(uid, rejected)
	}
	delete(m.waiting, uid)
	p, ok := m.pods[uid]
	switch {
	case !ok:
	case p.Phase == Finished:
		m.forget(uid, p, true, now)
	default:
		m.terminate(uid, p, nil, reason)
	}
}

func sameGrace(a, b *int64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// terminate asks a pod's worker to terminate it; repeated requests are
// passed on, since a later one may shorten the grace period.
func (m *Machine) terminate(uid types.UID, p *PodState, grace *int64, reason string) {
	if !p.hasWorker() {
		return
	}
	p.Terminate = &messages.TerminatePod{GracePeriod: grace, Reason: reason}
	if p.Pod != nil {
		p.Phase = Terminating
	}
	m.tell(uid, m.termination(uid, p))
}

// termination is the pod's termination as its worker is told it: with the
// pod, as upstream's pod workers get every kill with the pod. A worker
// just spawned or restarted has no pod until it asks for it
// (EvWorkerStarted); told to terminate before that, without the pod, it
// would kill the pod as an orphan, without its spec (no preStop hooks, no
// sidecar order) and with no terminal status to report, and the pod would
// leave the API with none.
func (m *Machine) termination(uid types.UID, p *PodState) *messages.TerminatePod {
	t := *p.Terminate
	if p.Pod != nil {
		t.Pod = m.workerPod(uid, p)
	}
	return &t
}

// spawn takes the pod in with a new worker.
func (m *Machine) spawn(p *PodState, uid types.UID, name, namespace string) {
	m.emit(CmdSpawnWorker{UID: uid, Name: name, Namespace: namespace, Orphan: p.Pod == nil, Fresh: m.isNew(p, uid)})
	m.pods[uid] = p
}

// isNew tells whether the runtime holds nothing of a pod about to get its
// worker: the runtime did not have it when this pod-manager started, and
// no worker of this pod-manager has run it. Only pods of the API server
// qualify: their UIDs are never reused, while a static pod's UID is its
// manifest's hash and comes back with the manifest, its last run's remains
// maybe still in the runtime.
func (m *Machine) isNew(p *PodState, uid types.UID) bool {
	if p.Pod == nil || p.Source != messages.SourceAPI || p.Pod.DeletionTimestamp != nil || m.inRuntime == nil || m.inRuntime[uid] {
		return false
	}
	_, done := m.recentlyDone[uid]
	return !done
}

// resume answers a worker's start with its pod or termination.
func (m *Machine) resume(uid types.UID) {
	p, ok := m.pods[uid]
	if !ok || !p.hasWorker() {
		return
	}
	switch {
	case p.End != nil:
		m.tell(uid, p.End)
	case p.Terminate != nil && p.Pod != nil:
		// A pod to terminate is never synced first: the termination
		// carries the pod, so that a pod deleted before its worker started
		// (or while it restarted) gets no sandbox on the way out.
		m.tell(uid, m.termination(uid, p))
		return
	case p.Pod != nil:
		m.tell(uid, &messages.UpdatePod{Pod: m.workerPod(uid, p)})
		if p.Volumes != nil && p.Phase == Running {
			m.tell(uid, &messages.VolumesReady{UID: uid, Volumes: p.Volumes})
		}
	}
	if p.Terminate != nil {
		m.tell(uid, p.Terminate)
	}
}

// done stops a pod's worker. A pod that ran to completion (or had ended)
// stays, finished; any other is forgotten, and started afresh if its
// source gave it back meanwhile.
func (m *Machine) done(uid types.UID, now time.Time) {
	p, ok := m.pods[uid]
	if !ok || !p.hasWorker() {
		return
	}
	m.emit(CmdStopWorker{UID: uid})
	// Nothing of it runs: its exclusive CPUs go back to the shared pool.
	m.releaseCPUs(string(uid))
	m.releaseMemory(string(uid))
	if p.Phase == Orphaned {
		// An orphan's volumes may be there from an earlier actorlet.
		p.VolumesAsked = true
	}
	m.unmount(uid, p)
	if p.Phase == Running || p.Phase == Ending {
		// The pod ran to completion: it stays, with its final status, for
		// as long as its source has it, and is not started again. A pod
		// that had ended before has its final status in the API already.
		p.Phase = Finished
		if p.Evicted != nil {
			// Its final status: Failed, Evicted, nothing running.
			p.Status = evictedStatus(p.Pod, p.Status, p.Evicted, metav1.NewTime(now), true)
			m.emit(CmdReportStatus{Pod: p.Pod, Status: p.Status})
		}
		if p.End == nil || p.Evicted != nil {
			m.emit(CmdReportFinished{Pod: p.Pod})
		}
		// It no longer counts against the node.
		m.admitPreempting(now)
		m.retryDeferred(now)
		return
	}
	m.forget(uid, p, p.Pod != nil, now)
	// A pod its source gave back while it was terminating (removed, then
	// re-added with the same UID) is started afresh.
	if p.Pod == nil || p.Pod.DeletionTimestamp != nil {
		return
	}
	for _, source := range slices.Sorted(maps.Keys(m.bySource)) {
		if m.bySource[source][uid] {
			m.upsert(source, p.Pod, now)
			return
		}
	}
}

// forget drops a pod whose worker is gone, telling the status-reporter when
// the pod was wanted by a source (an orphan was never reported).
func (m *Machine) forget(uid types.UID, p *PodState, report bool, now time.Time) {
	delete(m.pods, uid)
	m.admitPreempting(now)
	m.recentlyDone[uid] = now
	if report && !p.ReportedGone {
		m.reportGone(uid, p.Pod)
	}
	delete(m.pending, uid)
	m.releaseCPUs(string(uid))
	m.releaseMemory(string(uid))
	if _, ok := m.alloc[uid]; ok {
		delete(m.alloc, uid)
		m.saveAllocations()
		m.retryDeferred(now)
	}
}

// unmount has the volume-manager tear down a pod's volumes once nothing of
// the pod runs.
func (m *Machine) unmount(uid types.UID, p *PodState) {
	if !p.VolumesAsked {
		return
	}
	m.emit(CmdUnmountVolumes{UID: uid})
	p.VolumesAsked, p.Volumes = false, nil
	m.unmounting[uid] = true
}

// reportGone tells the status-reporter that the pod is gone for good, or,
// while its volumes are being torn down, once they are.
func (m *Machine) reportGone(uid types.UID, pod *v1.Pod) {
	if m.unmounting[uid] {
		m.goneAfterUnmount[uid] = pod
		return
	}
	m.emit(CmdReportFinished{Pod: pod, Removed: true})
}

// route hands runtime events to the pods' workers; events of pods nobody
// wants reveal orphans once every source has been heard from.
func (m *Machine) route(events []messages.PodLifecycleEvent, now time.Time) {
	var order []types.UID
	byPod := map[types.UID][]messages.PodLifecycleEvent{}
	for _, ev := range events {
		if _, ok := byPod[ev.PodUID]; !ok {
			order = append(order, ev.PodUID)
		}
		byPod[ev.PodUID] = append(byPod[ev.PodUID], ev)
	}
	for uid, at := range m.recentlyDone {
		if now.Sub(at) > recentlyDoneFor {
			delete(m.recentlyDone, uid)
		}
	}
	for _, uid := range order {
		evs := byPod[uid]
		if p, ok := m.pods[uid]; ok {
			if p.hasWorker() { // a finished pod has none: nothing to sync
				m.tell(uid, &messages.RuntimeChanged{Events: evs})
			}
			continue
		}
		if _, ok := m.waiting[uid]; ok {
			// Admission has not decided yet: it is no orphan.
			continue
		}
		if !m.ready || m.recentlyDone[uid].After(now.Add(-recentlyDoneFor)) {
			continue
		}
		// Only a start or a sandbox appearing reveals a live orphan: the
		// remains of a finished pod that GC removes are not one.
		for _, ev := range evs {
			if ev.Type == messages.ContainerStarted || ev.Type == messages.SandboxChanged {
				m.adoptOrphan(uid, ev.PodName, ev.PodNamespace)
				break
			}
		}
	}
}

// adoptOrphan gives a pod that no source wants a worker that terminates it
// with the grace period recorded on its containers.
func (m *Machine) adoptOrphan(uid types.UID, name, namespace string) {
	if _, ok := m.pods[uid]; ok {
		return
	}
	if _, ok := m.waiting[uid]; ok {
		// Wanted, admission not decided yet: no orphan.
		return
	}
	m.log(zerolog.InfoLevel, "no source wants this pod any more: terminating it",
		map[string]any{"pod": namespace + "/" + name, "uid": string(uid)})
	m.spawn(&PodState{Phase: Orphaned, Terminate: &messages.TerminatePod{Reason: "orphaned: no source wants this pod"}}, uid, name, namespace)
}

// orphanSearchBackoff spaces the searches for orphans after a failed
// listing of the runtime: upstream's housekeeping tries again every two
// seconds; a runtime that keeps failing is asked less often.
var orphanSearchBackoff = retry.Backoff{Initial: 2 * time.Second, Max: 30 * time.Second}

// markReadyIfAllSeen looks for orphans once every source has sent its first
// set: only then is the desired set complete.
func (m *Machine) markReadyIfAllSeen() {
	if m.ready {
		return
	}
	for _, s := range m.cfg.Sources {
		if !m.seen[s] {
			return
		}
	}
	m.ready = true
	// The allocations of an earlier run's pods that no source gave back
	// go, as upstream's RemoveOrphanedPods (a pod waiting for admission
	// keeps its own).
	pruned := false
	for uid := range m.alloc {
		if _, waiting := m.waiting[uid]; waiting {
			continue
		}
		if p, ok := m.pods[uid]; !ok || p.Phase != Running {
			delete(m.alloc, uid)
			pruned = true
		}
	}
	if pruned {
		m.saveAllocations()
	}
	m.pruneCPUs()
	m.pruneMemory()
	m.emit(CmdFindOrphans{Desired: m.desired()})
	m.deleteOrphanedMirrors()
}

// desired are the UIDs of the pods some source wants: the pods known and
// those waiting for admission.
func (m *Machine) desired() map[types.UID]bool {
	desired := make(map[types.UID]bool, len(m.pods)+len(m.waiting))
	for uid := range m.pods {
		desired[uid] = true
	}
	for uid := range m.waiting {
		desired[uid] = true
	}
	return desired
}

// List returns the pods with their latest status, for /pods.
func (m *Machine) List() *messages.PodList {
	out := &messages.PodList{SourcesReady: m.ready && m.orphansListed}
	for uid, p := range m.pods {
		if p.hasWorker() {
			out.Active = append(out.Active, uid)
		}
		if p.Pod == nil {
			continue
		}
		pod := p.Pod.DeepCopy()
		pod.Status = *p.Status.DeepCopy()
		out.Pods = append(out.Pods, *pod)
	}
	for _, p := range m.rejected {
		out.Pods = append(out.Pods, *p.DeepCopy())
	}
	for _, w := range m.waiting {
		out.Pods = append(out.Pods, *w.pod.DeepCopy())
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		return out.Pods[i].Namespace+"/"+out.Pods[i].Name < out.Pods[j].Namespace+"/"+out.Pods[j].Name
	})
	return out
}

// Summary is the pod-manager's health detail.
func (m *Machine) Summary() string {
	return fmt.Sprintf("%d pods, %d rejected, %d awaiting admission", len(m.pods), len(m.rejected), len(m.waiting))
}

// Pod returns the state of one pod; nil when
// the pod-manager holds no such pod.
func (m *Machine) Pod(uid types.UID) *PodState { return m.pods[uid] }

// readinessGatesChanged reports whether the status of a condition one of
// the pod's readiness gates names differs.
func readinessGatesChanged(old, cur *v1.Pod) bool {
	status := func(p *v1.Pod, t v1.PodConditionType) v1.ConditionStatus {
		for _, c := range p.Status.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}
	for _, g := range cur.Spec.ReadinessGates {
		if status(old, g.ConditionType) != status(cur, g.ConditionType) {
			return true
		}
	}
	return false
}

// metadataChanged reports whether the pod's labels or annotations differ.
func metadataChanged(old, cur *v1.Pod) bool {
	return !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations)
}

// statusDiverged reports whether the API's status of a pod differs from
// the node's in what the node owns and others change: the phase, the
// status of the conditions the kubelet owns, and each container's ID,
// readiness and restarts. Times are not compared: the API keeps them to
// the second. A stale echo of an earlier write of ours may diverge too;
// the status-reporter then reads the pod before writing, and writes
// nothing when the API has it right.
func statusDiverged(api, node v1.PodStatus) bool {
	if api.Phase != node.Phase {
		return true
	}
	for _, c := range node.Conditions {
		if !kubeletCondition[c.Type] {
			continue
		}
		i := slices.IndexFunc(api.Conditions, func(a v1.PodCondition) bool { return a.Type == c.Type })
		if i < 0 || api.Conditions[i].Status != c.Status {
			return true
		}
	}
	return containersDiverged(api.ContainerStatuses, node.ContainerStatuses) ||
		containersDiverged(api.InitContainerStatuses, node.InitContainerStatuses)
}

// kubeletCondition are the pod conditions whose status statusDiverged
// compares: those the kubelet sets on every pod.
var kubeletCondition = map[v1.PodConditionType]bool{
	v1.PodReady: true, v1.ContainersReady: true, v1.PodInitialized: true,
	v1.PodScheduled: true, v1.PodReadyToStartContainers: true,
}

func containersDiverged(api, node []v1.ContainerStatus) bool {
	if len(api) != len(node) {
		return true
	}
	for _, n := range node {
		i := slices.IndexFunc(api, func(a v1.ContainerStatus) bool { return a.Name == n.Name })
		if i < 0 {
			return true
		}
		a := api[i]
		if a.ContainerID != n.ContainerID || a.Ready != n.Ready || a.RestartCount != n.RestartCount {
			return true
		}
	}
	return false
}
