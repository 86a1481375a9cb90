// Package eviction holds the eviction actor, upstream's eviction manager:
// every monitoring interval it reads the node's statistics (the
// /stats/summary provider), has the pure evictionpolicy.Manager decide which
// thresholds are met and which node conditions are under pressure, tells
// the pod-manager and the status-reporter those conditions (NodePressure),
// and, when a threshold asks for it, reclaims: for disk, through the gc
// actor first (unused containers and images), then by evicting one pod per
// pass, ranked as upstream, through the pod-manager (EvictPod).
//
// The statistics are read outside the mailbox (supervision.Go); the
// pod-manager and the gc actor answer requests piped back to the mailbox.
package eviction

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/evictionpolicy"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "eviction"

const (
	// DefaultMonitoringInterval is upstream's evictionMonitoringPeriod.
	DefaultMonitoringInterval = 10 * time.Second
	// podCleanupTimeout is how long, at most, the next eviction waits for
	// the last evicted pod to be gone, as upstream's.
	podCleanupTimeout = 30 * time.Second
	// reclaimTimeout bounds the wait for the gc actor's passes.
	reclaimTimeout = 5 * time.Minute
	// listTimeout bounds the wait for the pod-manager's pods.
	listTimeout = 5 * time.Second
	// statsTimeout bounds one reading of the statistics.
	statsTimeout = time.Minute
)

// Stats reads the node's /stats/summary; *stats.Provider does.
type Stats interface {
	Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error)
}

// Params configure the eviction actor.
type Params struct {
	Stats  Stats
	Config evictionpolicy.Config
	// LocalStorageCapacityIsolation: pods over their ephemeral-storage
	// limits or emptyDir size limits are evicted at every pass
	// (localStorageCapacityIsolation).
	LocalStorageCapacityIsolation bool
	// DedicatedImageFs: the runtime's images are on another filesystem
	// than the root directory's, which changes what each disk signal
	// counts of a pod (evictionpolicy.Rank).
	DedicatedImageFs bool
	// PodManager answers ListPods and takes EvictPod and NodePressure;
	// StatusReporter takes NodePressure; GC, when set, reclaims disk space
	// before pods go.
	PodManager, StatusReporter, GC *actor.PID
	// Events receives upstream's events: EvictionThresholdMet on the node,
	// Evicted on a pod.
	Events   record.EventRecorder
	NodeName string
	// MonitoringInterval is the time between passes; zero is upstream's.
	MonitoringInterval time.Duration
	// Registry, when set, shows the conditions under pressure and the
	// thresholds met on the dashboard as the actor's state.
	Registry *supervision.Registry
	Log      zerolog.Logger
}

// stage is where a pass stands.
type stage int

const (
	idle stage = iota
	observing
	reclaiming
	reobserving
	listing
)

// Actor is the eviction actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger
	m   *evictionpolicy.Manager

	stage stage
	// The pass under way: what it reclaims, what it observed; reclaimed:
	// the node reclaimed disk space of its own in it.
	reclaimed bool
	reclaim   *evictionpolicy.Reclaim
	obs       evictionpolicy.Observations
	summary   *statsapi.Summary

	conditions []v1.NodeConditionType
	met        string
	// evicted holds when each pod was evicted, until it is gone.
	evicted map[types.UID]time.Time
	// cancelPass stops the timer of the next pass (at a restart: the new
	// instance starts its own).
	cancelPass func() bool
}

// New returns a producer of eviction actors.
func New(p Params) actor.Producer {
	if p.MonitoringInterval <= 0 {
		p.MonitoringInterval = DefaultMonitoringInterval
	}
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.m = evictionpolicy.NewManager(a.p.Config)
		a.evicted = map[types.UID]time.Time{}
		a.publish(ctx, nil)
		if len(a.p.Config.Thresholds) == 0 && !a.p.LocalStorageCapacityIsolation {
			a.log.Info().Msg("no eviction thresholds and no local storage isolation: the eviction manager is off")
			return
		}
		th := make([]string, len(a.p.Config.Thresholds))
		for i, t := range a.p.Config.Thresholds {
			th[i] = t.String()
		}
		a.log.Info().Strs("thresholds", th).Bool("localStorageCapacityIsolation", a.p.LocalStorageCapacityIsolation).
			Dur("monitoringInterval", a.p.MonitoringInterval).
			Dur("pressureTransitionPeriod", a.p.Config.PressureTransitionPeriod).Msg("eviction manager started")
		// The first pass comes an interval after the start, as upstream's
		// manager starts once the runtime is up: the pods the node runs
		// already are taken in again before the conditions can refuse
		// them, and then ranked for eviction like any.
		a.cancelPass = supervision.After(ctx, a.p.MonitoringInterval, &messages.EvictionPass{})
	case *actor.Restarting, *actor.Stopping:
		if a.cancelPass != nil {
			a.cancelPass()
		}
	case *messages.EvictionPass:
		a.pass(ctx)
	case *messages.SignalsObserved:
		a.observed(ctx, m)
	case *messages.DiskSpaceReclaimed:
		if a.stage == reclaiming {
			a.log.Info().Int("imagesRemoved", m.ImagesRemoved).Uint64("bytesFreed", m.BytesFreed).Msg("node-level disk space reclaimed")
			a.observe(ctx, true)
		}
	case *messages.PodList:
		if a.stage == listing {
			a.listed(ctx, m)
		}
	case *actor.DeadLetterResponse, error:
		// A request piped back failed (timeout, receiver gone).
		switch a.stage {
		case reclaiming:
			a.log.Warn().Interface("reason", m).Msg("no answer from the gc actor: evicting anyway")
			a.observe(ctx, true)
		case listing:
			a.log.Warn().Interface("reason", m).Msg("no pod list from the pod-manager: no eviction this pass")
			a.done(ctx)
		}
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: Kind, Healthy: true, LastActivity: time.Now(), Detail: a.detail()})
	}
}

// showState puts the pressure and the thresholds met on the dashboard.
func (a *Actor) showState(ctx actor.Context) {
	if a.p.Registry == nil {
		return
	}
	state := a.detail()
	if a.met != "" {
		state += "; thresholds met: " + strings.TrimSuffix(a.met, ";")
	}
	a.p.Registry.SetState(ctx.Self().Id, state)
}

func (a *Actor) detail() string {
	if len(a.conditions) == 0 {
		return "no pressure"
	}
	return "under pressure: " + evictionpolicy.ConditionMessage(a.conditions)
}

// pass starts a pass unless one is under way.
func (a *Actor) pass(ctx actor.Context) {
	if a.stage != idle {
		return
	}
	a.observe(ctx, false)
}

// observe reads the statistics outside the mailbox.
func (a *Actor) observe(ctx actor.Context, afterReclaim bool) {
	a.stage = observing
	if afterReclaim {
		a.stage = reobserving
	}
	st := a.p.Stats
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, statsTimeout)
		defer cancel()
		s, err := st.Summary(c, false)
		return &messages.SignalsObserved{At: time.Now(), Stats: s, AfterReclaim: afterReclaim, Err: err}
	})
}

// done ends the pass and schedules the next.
func (a *Actor) done(ctx actor.Context) {
	a.stage, a.reclaim, a.obs, a.summary, a.reclaimed = idle, nil, nil, nil, false
	a.cancelPass = supervision.After(ctx, a.p.MonitoringInterval, &messages.EvictionPass{})
}

func (a *Actor) observed(ctx actor.Context, m *messages.SignalsObserved) {
	want := observing
	if m.AfterReclaim {
		want = reobserving
	}
	if a.stage != want {
		return // from before a restart
	}
	if m.Err != nil || m.Stats == nil {
		a.log.Warn().Err(m.Err).Msg("eviction manager: failed to get summary stats")
		a.done(ctx)
		return
	}
	obs := evictionpolicy.Observe(m.Stats)
	if m.AfterReclaim {
		if !evictionpolicy.StillMet(a.reclaim.Threshold, obs) {
			a.log.Info().Str("resource", string(a.reclaim.Resource)).Msg("able to reduce resource pressure without evicting pods")
			a.done(ctx)
			return
		}
		a.obs, a.summary, a.reclaimed = obs, m.Stats, true
		a.list(ctx)
		return
	}
	var reclaim *evictionpolicy.Reclaim
	for _, c := range a.m.Step(evictionpolicy.EvObserved{Observations: obs}, m.At) {
		switch c := c.(type) {
		case evictionpolicy.CmdPressure:
			a.publish(ctx, c.Conditions)
		case evictionpolicy.CmdThresholdsMet:
			a.logMet(ctx, c.Met, obs)
		case evictionpolicy.CmdReclaim:
			reclaim = c.Reclaim
		}
	}
	a.reclaim, a.obs, a.summary = reclaim, obs, m.Stats
	if reclaim == nil && !a.p.LocalStorageCapacityIsolation {
		a.done(ctx)
		return
	}
	// The pods: first for their local storage limits, then to rank.
	a.list(ctx)
}

// reclaimFor starts reclaiming for the pass's threshold: disk space
// through the gc actor first for a disk signal, else a pod.
func (a *Actor) reclaimFor(ctx actor.Context, list *messages.PodList) {
	r := a.reclaim
	a.log.Info().Str("resource", string(r.Resource)).Str("threshold", r.Threshold.String()).Msg("attempting to reclaim")
	if a.p.Events != nil {
		a.p.Events.Eventf(a.nodeRef(), v1.EventTypeWarning, events.EvictionThresholdMet, "Attempting to reclaim %s", r.Resource)
	}
	if r.Threshold.Signal.IsDisk() && a.p.GC != nil {
		a.stage = reclaiming
		ctx.RequestFuture(a.p.GC, &messages.ReclaimDiskSpace{}, reclaimTimeout).PipeTo(ctx.Self())
		return
	}
	a.evict(ctx, list)
}

// listed handles the pod-manager's pods: local storage limits first, as
// upstream (every offending pod goes, and nothing else this pass), then
// the threshold to reclaim for.
func (a *Actor) listed(ctx actor.Context, list *messages.PodList) {
	if a.reclaimed {
		a.evict(ctx, list)
		return
	}
	pods := activePods(list)
	if a.p.LocalStorageCapacityIsolation {
		stats := evictionpolicy.StatsByUID(a.summary.Pods)
		if vs := evictionpolicy.LocalStorageViolations(pods, stats, a.p.DedicatedImageFs); len(vs) > 0 {
			for _, v := range vs {
				if evictionpolicy.IsCritical(v.Pod) {
					a.log.Error().Str("pod", v.Pod.Namespace+"/"+v.Pod.Name).Msg("cannot evict a critical pod")
					continue
				}
				a.evictPod(ctx, v.Pod, 0, v.Message, v.Signal)
			}
			a.done(ctx)
			return
		}
	}
	if a.reclaim == nil {
		a.done(ctx)
		return
	}
	a.reclaimFor(ctx, list)
}

// activePods are the pods of list with a live worker that are neither
// deleted nor ended.
func activePods(list *messages.PodList) []*v1.Pod {
	active := map[types.UID]bool{}
	for _, uid := range list.Active {
		active[uid] = true
	}
	var pods []*v1.Pod
	for i := range list.Pods {
		p := &list.Pods[i]
		if !active[p.UID] || p.DeletionTimestamp != nil || p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			continue
		}
		pods = append(pods, p)
	}
	return pods
}

func (a *Actor) list(ctx actor.Context) {
	if a.p.PodManager == nil {
		a.done(ctx)
		return
	}
	a.stage = listing
	ctx.RequestFuture(a.p.PodManager, &messages.ListPods{}, listTimeout).PipeTo(ctx.Self())
}

// publish tells the pod-manager and the status-reporter the conditions
// under pressure at every pass: the set is the whole state, and a
// restarted receiver has lost it.
func (a *Actor) publish(ctx actor.Context, conditions []v1.NodeConditionType) {
	if changed := !slices.Equal(conditions, a.conditions); changed {
		a.log.Info().Interface("conditions", conditions).Msg("node pressure changed")
	}
	a.conditions = slices.Clone(conditions)
	a.showState(ctx)
	for _, pid := range []*actor.PID{a.p.PodManager, a.p.StatusReporter} {
		if pid != nil {
			supervision.Tell(ctx, pid, &messages.NodePressure{Conditions: slices.Clone(conditions)})
		}
	}
}

// logMet logs the thresholds met when they change.
func (a *Actor) logMet(ctx actor.Context, met []evictionpolicy.Threshold, obs evictionpolicy.Observations) {
	s := ""
	for _, t := range met {
		s += t.String() + ";"
	}
	if s == a.met {
		return
	}
	a.met = s
	a.showState(ctx)
	ev := a.log.Info()
	for _, t := range met {
		if o, ok := obs[t.Signal]; ok {
			q := t.Value.Of(o.Capacity)
			ev = ev.Str(string(t.Signal), "available "+o.Available.String()+", threshold "+q.String())
		}
	}
	ev.Int("thresholdsMet", len(met)).Msg("eviction thresholds met changed")
}

// evict ranks the active pods and evicts the first that may go: one pod
// per pass, as upstream.
func (a *Actor) evict(ctx actor.Context, list *messages.PodList) {
	defer a.done(ctx)
	now := time.Now()
	active := map[types.UID]bool{}
	for _, uid := range list.Active {
		active[uid] = true
	}
	for uid, at := range a.evicted {
		if !active[uid] || now.Sub(at) > podCleanupTimeout {
			delete(a.evicted, uid)
			continue
		}
		a.log.Info().Str("uid", string(uid)).Msg("waiting for the evicted pod to be cleaned up before evicting another")
		return
	}
	pods := activePods(list)
	if len(pods) == 0 {
		a.log.Error().Msg("eviction thresholds have been met, but no pods are active to evict")
		return
	}
	r := a.reclaim
	stats := evictionpolicy.StatsByUID(a.summary.Pods)
	evictionpolicy.Rank(r.Threshold.Signal, pods, stats, a.p.DedicatedImageFs)
	ranked := make([]string, len(pods))
	for i, p := range pods {
		ranked[i] = p.Namespace + "/" + p.Name
	}
	a.log.Info().Strs("pods", ranked).Msg("pods ranked for eviction")
	for _, t := range r.Thresholds {
		if o, ok := a.obs[t.Signal]; ok && !o.Time.IsZero() {
			metrics.EvictionStatsAge.WithLabelValues(string(t.Signal)).Observe(now.Sub(o.Time).Seconds())
		}
	}
	for _, pod := range pods {
		if evictionpolicy.IsCritical(pod) {
			a.log.Error().Str("pod", pod.Namespace+"/"+pod.Name).Msg("cannot evict a critical pod")
			continue
		}
		a.evictPod(ctx, pod, a.m.PodGracePeriod(r, pod), evictionpolicy.Message(r.Resource, pod, stats, r.Thresholds, a.obs), r.Threshold.Signal)
		return
	}
	a.log.Info().Msg("unable to evict any pods from the node")
}

// evictPod has the pod-manager evict pod, with upstream's event.
func (a *Actor) evictPod(ctx actor.Context, pod *v1.Pod, grace int64, msg string, signal evictionpolicy.Signal) {
	if a.p.Events != nil {
		a.p.Events.Event(pod, v1.EventTypeWarning, events.Evicted, msg)
	}
	a.log.Warn().Str("pod", pod.Namespace+"/"+pod.Name).Str("uid", string(pod.UID)).Int64("gracePeriod", grace).
		Str("message", msg).Msg("evicting pod")
	supervision.Tell(ctx, a.p.PodManager, &messages.EvictPod{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		GracePeriod: grace, Reason: evictionpolicy.Reason, Message: msg})
	a.evicted[pod.UID] = time.Now()
	metrics.Evictions.WithLabelValues(string(signal)).Inc()
}

func (a *Actor) nodeRef() *v1.ObjectReference {
	return &v1.ObjectReference{Kind: "Node", Name: a.p.NodeName, UID: types.UID(a.p.NodeName)}
}
