// Package statusreporter holds the status-reporter actor: it registers the
// node, renews its lease, and writes node and pod status (and mirror pods)
// to the API server.
//
// Every API call runs outside the mailbox (supervision.Go) and comes back as
// a message, so that an unreachable API server never blocks the actor: it
// keeps the latest status of each pod and retries with a backoff capped
// low, so that statuses and the lease catch up within seconds of the API
// server's return. Without an API client (standalone mode) it only tracks.
package statusreporter

import (
	"context"
	"errors"
	"net"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/oomwatch"
	"github.com/actorlet/actorlet/internal/retry"
	"github.com/actorlet/actorlet/internal/version"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "status-reporter"

const (
	// podWriters bounds the pod status writes in flight: enough that many
	// pods started at once get their statuses out fast, few enough not to
	// flood the API server.
	podWriters = 8
	// callTimeout bounds one round of API calls, so that a hung API server
	// costs one timeout, never a stuck writer.
	callTimeout = 10 * time.Second
	// plegTimeout bounds the wait for PLEG's health report.
	plegTimeout = 2 * time.Second
	// retryCap caps every retry backoff, so that the node catches up within
	// seconds once the API server is back (upstream registers with 7s).
	retryCap = 5 * time.Second
	// nodeRetryCap caps the lease's and node status's retries.
	nodeRetryCap = 2 * time.Second
)

// Params configures the status-reporter actor.
type Params struct {
	// Kube is nil in standalone mode: the actor then tracks, writes nothing.
	Kube kubernetes.Interface
	// Heartbeat renews the lease and writes the node status: upstream's
	// heartbeat client, with a rate budget of its own so that other traffic
	// cannot delay the heartbeats. Nil: Kube.
	Heartbeat kubernetes.Interface
	NodeName  string
	NodeIP    net.IP
	// Config gives registerNode, registerWithTaints, providerID, port,
	// nodeStatusUpdateFrequency, nodeStatusReportFrequency,
	// nodeLeaseDurationSeconds, nodeStatusMaxImages and evictionHard.
	Config *kubeletconfigv1beta1.KubeletConfiguration
	// NodeLabels are --node-labels, set when the Node is created.
	NodeLabels map[string]string
	// Capacity and Allocatable hold cpu, memory, pods and hugepages-<size>;
	// the actor adds ephemeral-storage (from RootDir's filesystem) and
	// takes the huge pages off allocatable memory.
	Capacity, Allocatable v1.ResourceList
	RootDir               string
	RuntimeVersion        *runtimeapi.VersionResponse
	// Runtime answers CRI Status (the runtime and network conditions) and
	// Images lists node.status.images; either may be nil.
	Runtime runtimeapi.RuntimeServiceClient
	Images  runtimeapi.ImageServiceClient
	// PLEG answers HealthRequest; nil: PLEG is not consulted.
	PLEG *actor.PID
	// PodManager receives the Node as admission needs it (NodeChanged);
	// nil: nobody does.
	PodManager *actor.PID
	// VolumeManager answers VolumesInUseRequest, which the Node's
	// status.volumesInUse lists; nil: it is not asked.
	VolumeManager *actor.PID
	// PluginManager answers StorageStateRequest: the node is not Ready
	// until its CSINode is made; nil: it is not asked.
	PluginManager *actor.PID
	Events        record.EventRecorder
	// StartWarnings are the Node's Warning events of the start-up checks
	// (CgroupV1, CheckLimitsForResolvConf,
	// PossibleMemoryBackedVolumesOnDisk), sent after Starting.
	StartWarnings []StartWarning
	Log           zerolog.Logger
}

// StartWarning is a Warning event on the Node that a start-up check calls
// for.
type StartWarning struct{ Reason, Message string }

// Actor is the status-reporter actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p    Params
	log  zerolog.Logger
	spec *nodeSpec
	// baseCapacity and baseAllocatable are the node's own resources, which
	// the device plugins' resources are added to.
	baseCapacity, baseAllocatable v1.ResourceList

	// node is the Node as last read or written; nil until registered.
	node           *v1.Node
	registerRetry  backoff
	updatingStatus bool
	// updateAgain: a node status update was asked for while one ran.
	updateAgain bool
	// cancelTick stops the timer of the next node status update: an
	// update asked for out of turn re-arms it, so one chain of timers
	// runs.
	cancelTick func() bool
	lastReport time.Time
	// statusFailed forces a report on the next update, so that the Ready
	// heartbeat is fresh soon after an API server outage rather than at
	// the next nodeStatusReportFrequency.
	statusFailed bool
	renewing     bool
	leaseRetry   backoff
	// statusRetry paces node status updates after a failure, so that the
	// Ready heartbeat catches up soon after the API server returns.
	statusRetry backoff

	// sentNode is the Node last handed to the pod-manager (admission.go).
	sentNode    *v1.Node
	sentFromAPI bool
	// stopWatch ends the watch of the Node; nil when none runs.
	stopWatch func()

	// writes decides the pod status writes; the actor carries them out.
	writes *writeQueue

	// pressure are the node conditions under pressure, as the eviction
	// actor last said; the next node status update reports them.
	pressure []v1.NodeConditionType
	// shuttingDown: the node-shutdown actor said the node is shutting
	// down; Ready is false while it is. A change is written at once
	// (updateNow).
	shuttingDown bool

	// startedAt and readyOnce drive the fast status updates at the start
	// (fastStatusUpdate).
	startedAt time.Time
	readyOnce bool
	// startup follows the node's start-up for kubelet_node_startup_*.
	startup *metrics.NodeStartupTracker
	// nodeEvents decides the Rebooted and NodeSchedulable events.
	nodeEvents nodeEvents
}

// fastStatusUpdate and nodeReadyGracePeriod are upstream's fast status
// updates at the start: until the node is first reported Ready, or for
// the grace period, its status is updated this often rather than every
// nodeStatusUpdateFrequency, so that a node not Ready at its first update
// (its CSINode not made yet, the network not ready) is Ready as soon as it
// is.
const (
	fastStatusUpdate     = 100 * time.Millisecond
	nodeReadyGracePeriod = 120 * time.Second
)

// New returns a producer of status-reporter actors.
func New(p Params) actor.Producer {
	return func() actor.Actor {
		writers := podWriters
		if p.Kube == nil {
			writers = 0
		}
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger(), writes: newWriteQueue(writers)}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		a.stopWatching()
	case *messages.RegisterNode:
		a.register(ctx)
	case *messages.NodeRegistered:
		a.registered(ctx, m)
	case *messages.NodeStatusTick:
		a.tick(ctx)
	case *messages.NodePressure:
		a.pressure = slices.Clone(m.Conditions)
	case *messages.DevicesChanged:
		a.spec = a.spec.withDevices(a.baseCapacity, a.baseAllocatable, m.Resources)
	case *messages.NodeShuttingDown:
		if m.ShuttingDown != a.shuttingDown {
			// Written at once, as upstream's shutdown manager.
			a.shuttingDown = m.ShuttingDown
			a.updateNow(ctx)
		}
	case *messages.NodeStatusUpdated:
		a.statusUpdated(ctx, m)
	case *messages.KernelOOM:
		if e, ok := oomEvent(m.OOM); ok {
			a.log.Warn().Str("process", m.OOM.Process).Int("pid", m.OOM.PID).Msg("system OOM")
			a.nodeEvent(e)
		}
	case *messages.VolumesInUseChanged:
		a.updateNow(ctx)
	case *messages.RenewLease:
		a.renew(ctx)
	case *messages.LeaseRenewed:
		a.leaseRenewed(ctx, m)
	case *messages.RefreshNode:
		a.refreshNode(ctx)
	case *messages.NodeRead:
		a.nodeRead(ctx, m)
	case *messages.NodeWatched:
		a.nodeWatched(ctx, m)
	case *messages.PodStatusReport:
		if m.Reconcile {
			a.stepWrites(ctx, evReconcile{pod: m.Pod, status: m.Status})
		} else {
			a.stepWrites(ctx, evReport{pod: m.Pod, status: m.Status})
		}
	case *messages.PodFinished:
		a.stepWrites(ctx, evFinish{pod: m.Pod, removed: m.Removed})
	case *messages.CheckMirrorPod:
		a.stepWrites(ctx, evCheckMirror{uid: m.UID})
	case *messages.DeleteMirrorPod:
		a.deleteMirror(ctx, m)
	case *messages.MirrorPodDeleted:
		a.mirrorDeleted(ctx, m)
	case *messages.PodStatusSynced:
		a.stepWrites(ctx, evSynced{m})
	case *messages.RetryPodStatus:
		a.stepWrites(ctx, evRetry{uid: m.UID})
	}
}

func (a *Actor) start(ctx actor.Context) {
	a.startedAt = time.Now()
	a.startup = metrics.NewNodeStartupTracker(bootTime())
	metrics.SetNodeName(a.p.NodeName)
	metrics.SetBuildInfo(version.NodeVersion())
	c := a.p.Config
	spec := &nodeSpec{
		Name: a.p.NodeName, IP: a.p.NodeIP, Labels: a.p.NodeLabels, Taints: c.RegisterWithTaints,
		ProviderID: c.ProviderID, Machine: readMachineInfo(), Port: c.Port, MaxImages: 50,
		ControllerAttachDetach: c.EnableControllerAttachDetach == nil || *c.EnableControllerAttachDetach,
	}
	if c.NodeStatusMaxImages != nil {
		spec.MaxImages = *c.NodeStatusMaxImages
	}
	if v := a.p.RuntimeVersion; v != nil {
		spec.RuntimeVersion = v.RuntimeName + "://" + v.RuntimeVersion
	}
	var err error
	spec.Capacity, spec.Allocatable, err = storageResources(a.p.Capacity, a.p.Allocatable, a.p.RootDir, c.KubeReserved, c.SystemReserved, c.EvictionHard)
	if err != nil {
		// The Node then reports no ephemeral-storage; pods still run.
		a.log.Warn().Err(err).Msg("ephemeral-storage capacity unknown")
	}
	a.spec = spec
	a.baseCapacity, a.baseAllocatable = spec.Capacity, spec.Allocatable
	a.registerRetry = backoff{initial: 100 * time.Millisecond, max: retryCap}
	// The lease and the node status are two calls every retry: they may
	// retry often, so that the node is seen alive again soon after the
	// API server's return.
	a.leaseRetry = backoff{initial: 200 * time.Millisecond, max: nodeRetryCap}
	a.statusRetry = backoff{initial: 200 * time.Millisecond, max: nodeRetryCap}
	if a.p.Kube == nil {
		a.log.Debug().Msg("standalone: tracking pod statuses, writing none")
		return
	}
	if a.p.Events != nil {
		a.p.Events.Eventf(a.nodeRef(), v1.EventTypeNormal, events.StartingKubelet, "Starting kubelet.")
		for _, w := range a.p.StartWarnings {
			a.p.Events.Event(a.nodeRef(), v1.EventTypeWarning, w.Reason, w.Message)
		}
		a.watchKernelOOMs(ctx)
	}
	if c.RegisterNode != nil && !*c.RegisterNode {
		// Someone else registers the Node: read it, for its UID.
		a.log.Info().Msg("registerNode is false: waiting for the Node to exist")
	}
	a.register(ctx)
}

// nodeRef is the Node as events refer to it; upstream uses the node's name
// as its UID there.
func (a *Actor) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: a.p.NodeName, UID: types.UID(a.p.NodeName)}
}

// register makes one registration attempt (with registerNode false: one
// read of the Node) outside the mailbox.
func (a *Actor) register(ctx actor.Context) {
	kube, spec, create := a.p.Kube, a.spec, a.p.Config.RegisterNode == nil || *a.p.Config.RegisterNode
	if create {
		a.startup.Attempt(time.Now())
	}
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, callTimeout)
		defer cancel()
		var node *v1.Node
		var created bool
		var err error
		if create {
			node, created, err = register(c, kube, spec.initialNode())
		} else {
			node, err = getNode(c, kube, spec.Name)
		}
		return &messages.NodeRegistered{Node: node, Err: err, Created: created}
	})
}

func (a *Actor) registered(ctx actor.Context, m *messages.NodeRegistered) {
	if m.Err != nil {
		d := a.registerRetry.next()
		a.log.Warn().Err(m.Err).Dur("retryIn", d).Msg("node registration failed")
		supervision.After(ctx, d, &messages.RegisterNode{})
		return
	}
	a.log.Info().Str("node", m.Node.Name).Str("uid", string(m.Node.UID)).Msg("node registered")
	if m.Created {
		if d, ok := a.startup.Registered(time.Now()); ok {
			a.startup.SetNodeRegistration(d)
		}
	}
	a.node = m.Node
	a.nodeChanged(ctx, m.Node)
	a.watchNode(ctx)
	a.tick(ctx)
	a.renew(ctx)
	a.stepWrites(ctx, evRegistered{})
}

// tick updates the node status, then re-arms itself every
// nodeStatusUpdateFrequency; each tick also re-checks the static pods'
// mirror pods, so that a deleted mirror pod comes back.
func (a *Actor) tick(ctx actor.Context) {
	if a.node == nil || a.updatingStatus {
		return
	}
	a.updatingStatus = true
	kube, spec, p, system, pressure, shuttingDown := a.heartbeat(), a.spec, &a.p, ctx.ActorSystem(), a.pressure, a.shuttingDown
	reportDue := a.statusFailed || time.Since(a.lastReport) >= a.p.Config.NodeStatusReportFrequency.Duration
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, callTimeout)
		defer cancel()
		h := probe(c, system, p, spec.MaxImages)
		h.Pressure = pressure
		if shuttingDown {
			// Upstream's shutdown manager's error, among the
			// readiness errors.
			h.Problems = append(h.Problems, "node is shutting down")
		}
		return updateNodeStatus(c, kube, spec, h, reportDue)
	})
	a.stepWrites(ctx, evCheckMirrors{})
}

// deleteMirror deletes an orphaned mirror pod off the mailbox, conditioned
// on its UID: a mirror pod made since for a static pod back in its source
// is not touched.
func (a *Actor) deleteMirror(ctx actor.Context, m *messages.DeleteMirrorPod) {
	kube := a.p.Kube
	if kube == nil {
		return
	}
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, callTimeout)
		defer cancel()
		return &messages.MirrorPodDeleted{Pod: m.Pod, Attempt: m.Attempt, Err: deletePod(c, kube, m.Pod)}
	})
}

// mirrorDeleted logs the deletion of an orphaned mirror pod, or retries it
// after the backoff of its attempts.
func (a *Actor) mirrorDeleted(ctx actor.Context, m *messages.MirrorPodDeleted) {
	log := a.log.With().Str("pod", m.Pod.Namespace+"/"+m.Pod.Name).Str("uid", string(m.Pod.UID)).Logger()
	if m.Err == nil {
		log.Info().Msg("orphaned mirror pod deleted")
		return
	}
	d := retry.Backoff{Initial: 200 * time.Millisecond, Max: retryCap}.After(m.Attempt + 1)
	log.Warn().Err(m.Err).Dur("retryIn", d).Msg("deleting an orphaned mirror pod failed")
	supervision.After(ctx, d, &messages.DeleteMirrorPod{Pod: m.Pod, Attempt: m.Attempt + 1})
}

// pressureEvents records upstream's events of the pressure conditions that
// changed between two versions of the Node (NodeHasInsufficientMemory,
// NodeHasSufficientMemory, ...).
func (a *Actor) pressureEvents(old, cur *v1.Node) {
	if a.p.Events == nil || cur == nil {
		return
	}
	status := func(n *v1.Node, t v1.NodeConditionType) v1.ConditionStatus {
		if n == nil {
			return ""
		}
		for _, c := range n.Status.Conditions {
			if c.Type == t {
				return c.Status
			}
		}
		return ""
	}
	for _, e := range pressureEvents {
		before, now := status(old, e.typ), status(cur, e.typ)
		if before == now || now == "" || before == "" && now == v1.ConditionFalse {
			continue
		}
		reason := e.onFalse
		if now == v1.ConditionTrue {
			reason = e.onTrue
		}
		a.p.Events.Eventf(a.nodeRef(), v1.EventTypeNormal, reason, events.NodeStatusMessage, a.p.NodeName, reason)
	}
}

// updateNow updates the node status out of turn (a pod's set-up waits
// for its volumes to be listed in use), or right after the update that
// runs.
func (a *Actor) updateNow(ctx actor.Context) {
	if a.updatingStatus {
		a.updateAgain = true
		return
	}
	a.tick(ctx)
}

// armTick sets the timer of the next node status update, replacing the
// one set.
func (a *Actor) armTick(ctx actor.Context, after time.Duration) {
	if a.cancelTick != nil {
		a.cancelTick()
	}
	a.cancelTick = supervision.After(ctx, after, &messages.NodeStatusTick{})
}

func (a *Actor) statusUpdated(ctx actor.Context, m *messages.NodeStatusUpdated) {
	a.updatingStatus = false
	next := a.p.Config.NodeStatusUpdateFrequency.Duration
	a.statusFailed = m.Err != nil
	again := a.updateAgain
	a.updateAgain = false
	if m.Err != nil {
		next = min(a.statusRetry.next(), next)
		a.armTick(ctx, next)
		a.log.Warn().Err(m.Err).Dur("retryIn", next).Msg("node status update failed")
		return
	}
	if a.p.VolumeManager != nil && m.Node != nil {
		// As upstream's MarkVolumesAsReportedInUse: set-ups waiting for
		// their volumes to be listed go on.
		supervision.Tell(ctx, a.p.VolumeManager, &messages.VolumesReportedInUse{Names: m.Node.Status.VolumesInUse})
	}
	a.statusRetry.reset()
	if m.Patched && nodeReady(m.Node) {
		if d, ok := a.startup.Ready(time.Now()); ok {
			a.startup.SetNodeReady(d)
		}
	}
	if !a.readyOnce {
		if nodeReady(m.Node) {
			a.readyOnce = true
		} else if time.Since(a.startedAt) < nodeReadyGracePeriod {
			next = fastStatusUpdate
		}
	}
	if again {
		next = 0
	}
	a.armTick(ctx, next)
	a.pressureEvents(a.node, m.Node)
	a.node = m.Node
	a.nodeChanged(ctx, m.Node)
	if m.Patched {
		a.lastReport = time.Now()
	}
	if m.ReadyTransition != nil && a.p.Events != nil {
		reason := events.NodeNotReady
		if *m.ReadyTransition == v1.ConditionTrue {
			reason = events.NodeReady
		}
		a.p.Events.Eventf(a.nodeRef(), v1.EventTypeNormal, reason, events.NodeStatusMessage, a.p.NodeName, reason)
	}
	for _, e := range a.nodeEvents.step(a.p.NodeName, a.spec.Machine.BootID, m.PreviousBootID, m.Node) {
		a.nodeEvent(e)
	}
}

// nodeEvent records e on the Node.
func (a *Actor) nodeEvent(e nodeEvent) {
	if a.p.Events != nil {
		a.p.Events.Event(a.nodeRef(), e.Type, e.Reason, e.Message)
	}
}

// kmsgPath is the kernel's log, where OOM kills show.
const kmsgPath = "/dev/kmsg"

// watchKernelOOMs reads the kernel's log for OOM kills until the actor
// stops, as upstream's OOM watcher: a log it cannot read is logged once,
// and the kubelet goes on without SystemOOM events.
func (a *Actor) watchKernelOOMs(ctx actor.Context) {
	system, self, log, lctx := ctx.ActorSystem(), ctx.Self(), a.log, a.Context()
	go func() {
		err := oomwatch.Watch(lctx, kmsgPath, func(o oomwatch.OOM) {
			supervision.TellFromOutside(system, self, &messages.KernelOOM{OOM: o})
		})
		if err != nil {
			log.Warn().Err(err).Str("path", kmsgPath).Msg("cannot read the kernel's log: no SystemOOM events")
		}
	}()
}

// nodeReady says whether node's Ready condition is True.
func nodeReady(node *v1.Node) bool {
	if node == nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// heartbeat is the client of the lease and the node status.
func (a *Actor) heartbeat() kubernetes.Interface {
	if a.p.Heartbeat != nil {
		return a.p.Heartbeat
	}
	return a.p.Kube
}

// renew renews the lease outside the mailbox.
func (a *Actor) renew(ctx actor.Context) {
	if a.node == nil || a.renewing {
		return
	}
	a.renewing = true
	kube, name, uid, duration := a.heartbeat(), a.p.NodeName, a.node.UID, a.p.Config.NodeLeaseDurationSeconds
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, callTimeout)
		defer cancel()
		return &messages.LeaseRenewed{Err: renewLease(c, kube, name, uid, duration, time.Now())}
	})
}

// leaseRenewed re-arms the renewal: every nodeLeaseDurationSeconds/4, as
// upstream, or sooner with a backoff after a failure.
func (a *Actor) leaseRenewed(ctx actor.Context, m *messages.LeaseRenewed) {
	a.renewing = false
	interval := time.Duration(a.p.Config.NodeLeaseDurationSeconds) * time.Second / 4
	if m.Err != nil {
		interval = min(a.leaseRetry.next(), interval)
		a.log.Warn().Err(m.Err).Dur("retryIn", interval).Msg("lease renewal failed")
	} else {
		a.leaseRetry.reset()
	}
	supervision.After(ctx, interval, &messages.RenewLease{})
}

// write starts the pod status writes the queue returned, each outside the
// mailbox; its outcome comes back as PodStatusSynced.
func (a *Actor) write(ctx actor.Context, works []podWork) {
	for _, w := range works {
		w.nodeName = a.p.NodeName
		if a.node != nil {
			w.nodeUID = a.node.UID
		}
		kube := a.p.Kube
		supervision.Go(ctx, func(life context.Context) messages.Message {
			c, cancel := context.WithTimeout(life, callTimeout)
			defer cancel()
			if isStatic(w.pod) {
				return syncStaticPod(c, kube, w)
			}
			return syncAPIPod(c, kube, w)
		})
	}
}

// stepWrites feeds one event to the write queue and carries out its
// commands: the writes start together, after any retry is scheduled.
func (a *Actor) stepWrites(ctx actor.Context, ev writeEvent) {
	var works []podWork
	for _, c := range a.writes.Step(ev, time.Now()) {
		switch c := c.(type) {
		case podWork:
			works = append(works, c)
		case writeRetry:
			level := zerolog.WarnLevel
			if errors.Is(c.err, errNotRegistered) {
				level = zerolog.DebugLevel // a mirror pod waits for the Node's UID: routine at start-up
			}
			a.log.WithLevel(level).Err(c.err).Str("pod", c.pod.Namespace+"/"+c.pod.Name).Dur("retryIn", c.in).Msg("pod status write failed")
			supervision.After(ctx, c.in, &messages.RetryPodStatus{UID: c.uid})
		case statusWritten:
			metrics.PodStatusSyncDuration.Observe(c.took.Seconds())
		case containersTerminated:
			for _, t := range c {
				metrics.TerminatedContainers.WithLabelValues(t.containerType, t.exitCode, t.reason).Inc()
			}
		}
	}
	a.write(ctx, works)
}

// backoff is the status-reporter's retry.Backoff: from initial doubling to
// max, as upstream's registration loop, and reset by a success rather than
// by a stable period, so that it needs no clock.
type backoff struct {
	initial, max time.Duration
	failures     int
}

func (b *backoff) next() time.Duration {
	b.failures++
	return retry.Backoff{Initial: b.initial, Max: b.max}.After(b.failures)
}

func (b *backoff) reset() { b.failures = 0 }

// bootTime is when the machine booted, from its uptime (zero: unknown),
// for the start-up figures from the boot.
func bootTime() time.Time {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return time.Time{}
	}
	return time.Now().Add(-time.Duration(info.Uptime) * time.Second).Truncate(time.Second)
}
