// Package volumemanager holds the volume-manager actor. It owns the volumes
// of every pod on the node: it sets up a pod's volumes before any of its
// containers is created (the pod-worker waits for VolumesReady), keeps
// their content current while the pod runs (configMaps, secrets, downward
// API, service-account tokens), and tears them down once nothing of the
// pod runs. Directories of pods that are gone (actorlet was down when they
// went) are found and removed.
//
// Its decisions are a Machine (machine.go), with no I/O; the actor (this
// file) turns messages into the machine's events and carries out the
// commands, running every mount and API read off its mailbox.
package volumemanager

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "volume-manager"

// Registrar tells the object cache which pods reference which API objects
// (volume/apisource), so that it watches exactly those.
type Registrar interface {
	RegisterPod(pod *v1.Pod)
	UnregisterPod(pod *v1.Pod)
}

// UserNamespaces frees the user namespace range of a pod (userns.Manager).
type UserNamespaces interface {
	Release(uid types.UID)
}

// Params configure the volume-manager.
type Params struct {
	Host *volume.Host
	// Registrar, when set, learns each pod's references before its first
	// set-up, and forgets them at its teardown.
	Registrar Registrar
	// PodManager receives VolumesReady, and answers ListPods.
	PodManager *actor.PID
	// StatusReporter, when set, lists the node's volumes in use and is
	// asked for a node status update (VolumesInUseChanged) when a set-up
	// waits for that: the set-up of an attachable volume goes no further
	// until the Node lists it (VolumesReportedInUse). Unset, set-ups do
	// not wait.
	StatusReporter *actor.PID
	// Resync is the period of content refreshes and of the search for
	// orphaned pod directories (the kubelet's syncFrequency).
	Resync time.Duration
	// SetUpTimeout bounds one pod's set-up.
	SetUpTimeout time.Duration
	// UserNamespaces, when set, frees a pod's user namespace range once
	// its directory, which records the range, is removed.
	UserNamespaces UserNamespaces
	Events         record.EventRecorder
	Log            zerolog.Logger
}

// Actor is the volume-manager actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p     Params
	log   zerolog.Logger
	m     *Machine
	first bool
	// listing: a ListPods for the orphan search is out, asked at listedAt.
	listing     bool
	listedAt    time.Time
	cancelTimer func() bool
}

// New returns a producer of the volume-manager.
func New(p Params) actor.Producer {
	var incarnations atomic.Int32
	if p.Resync <= 0 {
		p.Resync = time.Minute
	}
	if p.SetUpTimeout <= 0 {
		p.SetUpTimeout = 2 * time.Minute
	}
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger(), first: incarnations.Add(1) == 1}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.m = NewMachine()
		a.cancelTimer = supervision.After(ctx, a.p.Resync, &messages.VolumesResync{})
		if !a.first {
			// Only on a restart: on the first start the pod-manager may not
			// exist yet, and it has sent nothing to lose.
			supervision.Tell(ctx, a.p.PodManager, &messages.VolumeManagerRestarted{})
		}
	case *actor.Stopping, *actor.Restarting:
		if a.cancelTimer != nil {
			a.cancelTimer()
		}
	case *messages.MountVolumes:
		a.step(ctx, EvMount{Pod: m.Pod})
	case *messages.UnmountVolumes:
		a.step(ctx, EvUnmount{UID: m.UID})
	case *messages.VolumesSetUp:
		a.step(ctx, EvSetUp{UID: m.UID, Gen: m.Gen, Volumes: m.Volumes, InUse: m.InUse, Err: m.Err})
	case *messages.VolumesReportedInUse:
		a.step(ctx, EvReportedInUse{Names: m.Names})
	case *messages.VolumesTornDown:
		if m.Err != nil {
			a.log.Warn().Err(m.Err).Str("uid", string(m.UID)).Msg("tearing down a pod's volumes failed; its directory stays until the next search for orphaned pod directories")
		}
		a.step(ctx, EvTornDown{UID: m.UID, Err: m.Err})
	case *messages.VolumeRetryDue:
		a.step(ctx, EvRetry{UID: m.UID, Gen: m.Gen})
	case *messages.VolumeSourceChanged:
		a.step(ctx, EvSourceChanged{Kind: m.Kind, Namespace: m.Namespace, Name: m.Name})
	case *messages.VolumesResync:
		a.cancelTimer = supervision.After(ctx, a.p.Resync, &messages.VolumesResync{})
		a.step(ctx, EvResync{})
		a.findOrphans(ctx)
	case *messages.PodList:
		a.podList(ctx, m)
	case *messages.VolumesInUseRequest:
		ctx.Respond(&messages.VolumesInUse{Names: a.m.VolumesInUse()})
	case error:
		// The ListPods request timed out: the next resync asks again.
		a.listing = false
	case *messages.OrphanedPodDirs:
		if m.Err != nil {
			a.log.Warn().Err(m.Err).Msg("looking for orphaned pod directories failed")
			return
		}
		if len(m.UIDs) > 0 {
			a.log.Info().Int("pods", len(m.UIDs)).Msg("removing the directories of pods that are gone")
		}
		a.step(ctx, EvOrphans{UIDs: m.UIDs})
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	for _, c := range a.m.Step(ev, time.Now()) {
		a.execute(ctx, c)
	}
}

func (a *Actor) execute(ctx actor.Context, c Command) {
	switch c := c.(type) {
	case CmdSetUp:
		host, reg, timeout := a.p.Host, a.p.Registrar, a.p.SetUpTimeout
		var iu *volume.InUse
		if a.p.StatusReporter != nil {
			iu = &volume.InUse{Reported: c.Reported}
		}
		supervision.Go(ctx, func(life context.Context) messages.Message {
			if c.First && reg != nil {
				reg.RegisterPod(c.Pod)
			}
			opCtx, cancel := context.WithTimeout(life, timeout)
			defer cancel()
			if iu != nil {
				opCtx = volume.WithInUse(opCtx, iu)
			}
			vols, err := SetUpPod(opCtx, host, c.Pod)
			out := &messages.VolumesSetUp{UID: c.Pod.UID, Gen: c.Gen, Volumes: vols, Err: err}
			if iu != nil {
				out.InUse = iu.Wanted
			}
			return out
		})
	case CmdReportInUse:
		if a.p.StatusReporter != nil {
			supervision.Tell(ctx, a.p.StatusReporter, &messages.VolumesInUseChanged{})
		}
	case CmdReady:
		a.log.Debug().Str("uid", string(c.UID)).Int("volumes", len(c.Volumes)).Msg("volumes ready")
		supervision.Tell(ctx, a.p.PodManager, &messages.VolumesReady{UID: c.UID, Volumes: c.Volumes})
	case CmdFailed:
		a.failed(c.Pod, c.Err)
	case CmdScheduleRetry:
		supervision.After(ctx, c.After, &messages.VolumeRetryDue{UID: c.UID, Gen: c.Gen})
	case CmdUnmounted:
		supervision.Tell(ctx, a.p.PodManager, &messages.VolumesUnmounted{UID: c.UID})
	case CmdTearDown:
		host, reg, userns := a.p.Host, a.p.Registrar, a.p.UserNamespaces
		supervision.Go(ctx, func(context.Context) messages.Message {
			if c.Pod != nil && reg != nil {
				reg.UnregisterPod(c.Pod)
			}
			err := host.TearDownPod(c.UID)
			if err == nil && userns != nil {
				// Nothing of the pod runs and its record is gone: a
				// restart would not know the range, so it is free.
				userns.Release(c.UID)
			}
			return &messages.VolumesTornDown{UID: c.UID, Err: err}
		})
	}
}

// SetUpPod sets up every volume of pod; every volume is tried, and the
// error joins each one's *volume.SetUpError.
func SetUpPod(ctx context.Context, host *volume.Host, pod *v1.Pod) (messages.PodVolumes, error) {
	vols := make(messages.PodVolumes, len(pod.Spec.Volumes))
	var errs []error
	for i := range pod.Spec.Volumes {
		m, err := host.SetUp(ctx, pod, &pod.Spec.Volumes[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		vols[m.Name] = m
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return vols, nil
}

// failed logs a failed set-up and records an event per volume, as
// upstream's operation executor does: FailedMount, or VolumeResizeFailed
// for a volume in use that could not be grown.
func (a *Actor) failed(pod *v1.Pod, err error) {
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		if awaitsInUse(e) {
			// A wait of one node status update, as upstream's, which
			// logs it and records no event.
			a.log.Debug().Str("pod", pod.Namespace+"/"+pod.Name).Err(e).Msg("waiting for the Node to list a volume in use")
			continue
		}
		a.log.Warn().Str("pod", pod.Namespace+"/"+pod.Name).Err(e).Msg("setting up a volume failed; retrying")
		if a.p.Events != nil {
			a.p.Events.Event(pod, v1.EventTypeWarning, volume.EventReason(e), e.Error())
		}
	}
}

// findOrphans asks the pod-manager which pods it knows; the answer starts
// the search for pod directories that none owns.
func (a *Actor) findOrphans(ctx actor.Context) {
	if a.listing || a.p.PodManager == nil {
		return
	}
	a.listing, a.listedAt = true, time.Now()
	ctx.RequestFuture(a.p.PodManager, &messages.ListPods{}, 30*time.Second).PipeTo(ctx.Self())
}

func (a *Actor) podList(ctx actor.Context, m *messages.PodList) {
	a.listing = false
	if !m.SourcesReady {
		return // a pod not known yet may still come from a source
	}
	known := make(map[types.UID]bool, len(m.Pods)+len(m.Active))
	for _, p := range m.Pods {
		known[p.UID] = true
	}
	for _, uid := range m.Active {
		known[uid] = true
	}
	host, since := a.p.Host, a.listedAt
	supervision.Go(ctx, func(context.Context) messages.Message {
		uids, err := host.PodDirs()
		out := &messages.OrphanedPodDirs{Err: err}
		for _, uid := range uids {
			if known[uid] {
				continue
			}
			// A directory made or changed since the pods were listed may
			// be a pod's that came meanwhile (a pod without volumes makes
			// its own, for its etc-hosts and termination-message files):
			// the next search decides.
			if fi, err := os.Stat(volume.PodDir(host.RootDir, uid)); err == nil && !fi.ModTime().Before(since) {
				continue
			}
			out.UIDs = append(out.UIDs, uid)
		}
		return out
	})
}
