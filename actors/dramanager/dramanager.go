// Package dramanager holds the dra-manager actor, upstream's DRA manager
// (pkg/kubelet/cm/dra): it owns the claim info cache of the node's
// prepared ResourceClaims and its checkpoint, prepares a pod's claims
// through their DRA drivers (NodePrepareResources) when its worker asks,
// answering with the CDI device IDs of each container, and unprepares them
// (NodeUnprepareResources) once nothing of the pod runs, or once its pod
// is found gone (upstream's reconcile loop, after a restart too). It
// watches each driver's DRAResourceHealth stream (health.go) and tells
// the pod-manager each pod's containers' allocatedResourcesStatus.
//
// Its decisions are a Machine (machine.go), with no I/O; the actor (this
// file) carries out its commands off the mailbox: the API reads, the
// drivers' calls and the checkpoint writes.
package dramanager

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "dra-manager"

// ReconcilePeriod is upstream's period of the reconcile loop.
const ReconcilePeriod = time.Minute

// apiTimeout bounds the reads of one pod's claims.
const apiTimeout = time.Minute

// Upstream's event reason of a failed prepare.

// Params configure the dra-manager.
type Params struct {
	Kube    kubernetes.Interface
	Drivers *dra.Registry
	// RootDir holds the checkpoint.
	RootDir string
	// PodManager answers ListPods, for the reconcile loop.
	PodManager *actor.PID
	Events     record.EventRecorder
	Log        zerolog.Logger
	// Health: the ResourceHealthStatus gate; the drivers' health streams
	// are watched and the pods' allocatedResourcesStatus told to the
	// PodManager. HealthMessage: ResourceHealthStatusMessage, the
	// drivers' messages shown with it.
	Health, HealthMessage bool
}

// Actor is the dra-manager actor.
type Actor struct {
	supervision.Lifetime
	p   Params
	log zerolog.Logger
	m   *Machine
	// askers are the pod-workers waiting for an answer, by pod.
	askers map[types.UID]*actor.PID
	// started is when the try of a pod-worker's request now under way
	// began, by pod: its end is one of upstream's PrepareResources or
	// UnprepareResources operations in dra_operations_duration_seconds.
	started map[types.UID]time.Time
	h       *health
}

// New returns a producer of the dra-manager.
func New(p Params) actor.Producer {
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

func (a *Actor) statePath() string { return filepath.Join(a.p.RootDir, dra.CheckpointName) }

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		// The checkpoint is read before anything is asked: a claim
		// prepared before a restart must be known to be.
		loaded, err := dra.Load(a.statePath())
		if err != nil {
			panic(fmt.Errorf("could not initialize checkpoint manager, please drain node and remove DRA state file, err: %w", err))
		}
		a.m = NewMachine(loaded)
		a.askers = map[types.UID]*actor.PID{}
		a.started = map[types.UID]time.Time{}
		a.h = newHealth()
		a.countInUse()
		a.log.Info().Int("claims", len(loaded)).Msg("DRA claim info cache loaded")
		supervision.After(ctx, ReconcilePeriod, &messages.DRAActivePods{})
		a.syncStreams(ctx, time.Now(), true)
	case *messages.DRADriversChanged:
		a.syncStreams(ctx, time.Now(), true)
		a.pushHealth(ctx)
	case *messages.DRAHealthReport:
		a.onHealthReport(ctx, m)
	case *messages.DRAHealthStreamEnded:
		a.onHealthStreamEnded(ctx, m)
	case *messages.DRAHealthDue:
		a.onHealthDue(ctx)
	case *messages.PrepareClaims:
		if a.p.Health {
			a.h.pods[m.Pod.UID] = m.Pod
		}
		a.ask(ctx, m.Pod.UID)
		a.step(ctx, EvPrepare{Pod: m.Pod})
	case *messages.UnprepareClaims:
		a.ask(ctx, m.Pod.UID)
		a.step(ctx, EvUnprepare{Pod: m.Pod})
	case *messages.DRAWorkDone:
		a.step(ctx, m.Event.(Event))
	case *messages.DRARetryDue:
		if a.askers[m.UID] != nil {
			a.started[m.UID] = time.Now()
		}
		a.step(ctx, EvRetry{UID: m.UID})
	case *messages.DRAActivePods:
		if !m.Listed {
			a.listActive(ctx)
			return
		}
		if m.Ready {
			a.step(ctx, EvActive{UIDs: m.UIDs})
		}
		supervision.After(ctx, ReconcilePeriod, &messages.DRAActivePods{})
	}
}

// listActive asks the pod-manager for the pods with a live worker; the
// answer comes back only once its sources are ready.
func (a *Actor) listActive(ctx actor.Context) {
	pm, system := a.p.PodManager, ctx.ActorSystem()
	supervision.Go(ctx, func(context.Context) messages.Message {
		res, err := system.Root.RequestFuture(pm, &messages.ListPods{}, 30*time.Second).Result()
		list, ok := res.(*messages.PodList)
		if err != nil || !ok {
			return &messages.DRAActivePods{Listed: true} // the next period tries again
		}
		return &messages.DRAActivePods{UIDs: list.Active, Ready: list.SourcesReady, Listed: true}
	})
}

// ask records the pod-worker that asked, and when its try began unless
// one is under way.
func (a *Actor) ask(ctx actor.Context, uid types.UID) {
	a.askers[uid] = ctx.Sender()
	if _, ok := a.started[uid]; !ok {
		a.started[uid] = time.Now()
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	for _, c := range a.m.Step(ev, time.Now()) {
		a.execute(ctx, c)
	}
	a.countInUse()
	a.pushHealth(ctx)
}

// countInUse serves the cache's prepared claims as dra_resource_claims_in_use.
func (a *Actor) countInUse() {
	total, byDriver := a.m.InUse()
	byDriver[metrics.DRAClaimsAnyDriver] = total
	metrics.SetDRAClaimsInUse(byDriver)
}

// observe ends the try of a pod-worker's request for the pod, if one was
// under way, as one upstream operation (metrics.DRAPrepare or
// DRAUnprepare).
func (a *Actor) observe(uid types.UID, operation string, failed bool) {
	start, ok := a.started[uid]
	if !ok {
		return
	}
	delete(a.started, uid)
	metrics.DRAOperationsDuration.WithLabelValues(operation, strconv.FormatBool(failed)).Observe(time.Since(start).Seconds())
}

func (a *Actor) execute(ctx actor.Context, c Command) {
	switch c := c.(type) {
	case CmdValidate:
		kube, drivers := a.p.Kube, a.p.Drivers
		supervision.Go(ctx, func(life context.Context) messages.Message {
			ctx, cancel := context.WithTimeout(life, apiTimeout)
			defer cancel()
			claims, err := validate(ctx, kube, drivers, c.Pod)
			return &messages.DRAWorkDone{Event: EvValidated{UID: c.Pod.UID, Claims: claims, Err: err}}
		})
	case CmdCall:
		path, drivers := a.statePath(), a.p.Drivers
		supervision.Go(ctx, func(life context.Context) messages.Message {
			if err := dra.Save(path, c.State); err != nil {
				return &messages.DRAWorkDone{Event: EvCalled{UID: c.UID, Err: fmt.Errorf("checkpoint ResourceClaim cache: %w", err)}}
			}
			devices, err := callDrivers(life, drivers, c.Prepare, c.Batches)
			return &messages.DRAWorkDone{Event: EvCalled{UID: c.UID, Devices: devices, Err: err}}
		})
	case CmdSave:
		path := a.statePath()
		supervision.Go(ctx, func(context.Context) messages.Message {
			return &messages.DRAWorkDone{Event: EvSaved{UID: c.UID, Err: dra.Save(path, c.State)}}
		})
	case CmdSkipped:
		counter := metrics.DRANodeUnprepareSkips
		if c.Prepare {
			counter = metrics.DRANodePrepareSkips
		}
		for _, d := range c.Drivers {
			counter.WithLabelValues(d).Inc()
		}
	case CmdPrepared:
		a.observe(c.UID, metrics.DRAPrepare, false)
		a.log.Info().Str("podUID", string(c.UID)).Interface("cdiDevices", c.Devices).Msg("claims prepared")
		a.answer(ctx, c.UID, &messages.ClaimsPrepared{UID: c.UID, Devices: c.Devices})
	case CmdUnprepared:
		a.observe(c.UID, metrics.DRAUnprepare, false)
		a.log.Info().Str("podUID", string(c.UID)).Msg("claims unprepared")
		a.forgetPod(c.UID)
		a.answer(ctx, c.UID, &messages.ClaimsUnprepared{UID: c.UID})
	case CmdPrepareFailed:
		a.observe(c.Pod.UID, metrics.DRAPrepare, true)
		err := fmt.Errorf("prepare dynamic resources: %w", c.Err)
		a.log.Warn().Err(err).Str("pod", c.Pod.Namespace+"/"+c.Pod.Name).Stringer("retryIn", c.After).Msg("Failed to prepare dynamic resources")
		podruntime.PodEvent(a.p.Events, c.Pod, v1.EventTypeWarning, events.FailedPrepareDynamicResources, "Failed to prepare dynamic resources: "+err.Error())
		supervision.After(ctx, c.After, &messages.DRARetryDue{UID: c.Pod.UID})
	case CmdUnprepareFailed:
		a.observe(c.UID, metrics.DRAUnprepare, true)
		a.log.Warn().Err(fmt.Errorf("unprepare dynamic resources: %w", c.Err)).Str("podUID", string(c.UID)).
			Stringer("retryIn", c.After).Msg("Unpreparing pod resources failed, will retry")
		supervision.After(ctx, c.After, &messages.DRARetryDue{UID: c.UID})
	}
}

func (a *Actor) answer(ctx actor.Context, uid types.UID, msg messages.Message) {
	pid := a.askers[uid]
	delete(a.askers, uid)
	if pid != nil {
		supervision.Tell(ctx, pid, msg)
	}
}

// validate is upstream's validation pass of prepareResources: every claim
// of the pod read from the API, allocated and reserved for it, one made
// from a template the pod's own, and the driver of each result to prepare
// registered. Nothing changes if anything is wrong, so that a pod that
// cannot be prepared can be deleted without a driver.
func validate(ctx context.Context, kube kubernetes.Interface, drivers *dra.Registry, pod *v1.Pod) ([]dra.ClaimInfoState, error) {
	var out []dra.ClaimInfoState
	for _, pc := range dra.PodClaims(pod) {
		name, mustCheckOwner, err := dra.ClaimName(pod, &pc)
		if err != nil {
			return nil, err
		}
		if name == nil {
			continue
		}
		claim, err := kube.ResourceV1().ResourceClaims(pod.Namespace).Get(ctx, *name, metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("fetch ResourceClaim %s: %w", *name, err)
		}
		if mustCheckOwner {
			if err := dra.IsForPod(pod, claim); err != nil {
				return nil, err
			}
		}
		if !dra.IsReservedForPod(pod, claim) {
			return nil, fmt.Errorf("pod %s (%s) is not allowed to use ResourceClaim %s (%s)", pod.Name, pod.UID, *name, claim.UID)
		}
		info, err := dra.NewClaimInfo(claim)
		if err != nil {
			return nil, fmt.Errorf("ResourceClaim %s: %w", claim.Name, err)
		}
		for _, d := range slices.Sorted(maps.Keys(info.DriverState)) {
			if info.DriverState[d].Skips(resourceapi.SkipNodeOperationNodePrepareResources) {
				continue
			}
			if _, err := drivers.Get(d); err != nil {
				return nil, err
			}
		}
		out = append(out, info)
	}
	return out, nil
}

// callDrivers calls each driver with its batch, in name order, and stops
// at the first failure, as upstream. Devices are what each driver
// prepared, by claim UID then driver.
func callDrivers(ctx context.Context, drivers *dra.Registry, prepare bool, batches map[string][]*drapb.Claim) (map[types.UID]map[string][]dra.Device, error) {
	devices := map[types.UID]map[string][]dra.Device{}
	for _, name := range slices.Sorted(maps.Keys(batches)) {
		claims := batches[name]
		d, err := drivers.Get(name)
		if err != nil {
			return devices, err
		}
		byUID := map[string]*drapb.Claim{}
		for _, c := range claims {
			byUID[c.Uid] = c
		}
		if !prepare {
			resp, err := dra.Unprepare(ctx, d, claims)
			if err != nil {
				return devices, fmt.Errorf("NodeUnprepareResources: %w", err)
			}
			for uid, r := range resp.Claims {
				if byUID[uid] == nil {
					return devices, fmt.Errorf("NodeUnprepareResources returned result for unknown claim UID %s", uid)
				}
				if r.GetError() != "" {
					return devices, fmt.Errorf("NodeUnprepareResources failed for ResourceClaim %s: %s", byUID[uid].Name, r.Error)
				}
			}
			if n := len(claims) - len(resp.Claims); n != 0 {
				return devices, fmt.Errorf("NodeUnprepareResources skipped %d ResourceClaims", n)
			}
			continue
		}
		resp, err := dra.Prepare(ctx, d, claims)
		if err != nil {
			return devices, fmt.Errorf("NodePrepareResources: %w", err)
		}
		for uid, r := range resp.Claims {
			if byUID[uid] == nil {
				return devices, fmt.Errorf("NodePrepareResources returned result for unknown claim UID %s", uid)
			}
			if r.GetError() != "" {
				return devices, fmt.Errorf("NodePrepareResources failed for ResourceClaim %s: %s", byUID[uid].Name, r.Error)
			}
			var devs []dra.Device
			for _, dev := range r.GetDevices() {
				devs = append(devs, dra.Device{PoolName: dev.PoolName, DeviceName: dev.DeviceName,
					ShareID: (*types.UID)(dev.ShareId), RequestNames: dev.RequestNames, CDIDeviceIDs: dev.CdiDeviceIds})
			}
			if devices[types.UID(uid)] == nil {
				devices[types.UID(uid)] = map[string][]dra.Device{}
			}
			devices[types.UID(uid)][name] = devs
		}
		if n := len(claims) - len(resp.Claims); n != 0 {
			return devices, fmt.Errorf("NodePrepareResources skipped %d ResourceClaims", n)
		}
	}
	return devices, nil
}
