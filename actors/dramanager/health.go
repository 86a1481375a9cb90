package dramanager

import (
	"context"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	drahealthv1 "k8s.io/kubelet/pkg/apis/dra-health/v1"

	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// healthRestartDelay is upstream's wait before a health stream that ended
// is opened again.
const healthRestartDelay = 5 * time.Second

// healthStream is one driver's NodeWatchResources stream, run through the
// endpoint and service the registry gave when it started.
type healthStream struct {
	driver dra.Driver
	gen    int
	cancel context.CancelFunc
	// ended: the stream is not running; it starts again at restartAt,
	// or, when the driver does not implement the service (zero
	// restartAt), once the driver registers again.
	ended     bool
	restartAt time.Time
}

// health is the dra-manager's device health: the drivers' streams, what
// they reported, the pods to show it for and what each was last shown.
type health struct {
	cache   dra.Health
	streams map[string]*healthStream
	gen     int
	// pods are the pods that asked for their claims, as last asked.
	pods map[types.UID]*v1.Pod
	sent map[types.UID]map[string][]v1.ResourceStatus
	// due is when the timer set last fires (zero: none set).
	due time.Time
}

func newHealth() *health {
	return &health{cache: dra.Health{}, streams: map[string]*healthStream{},
		pods: map[types.UID]*v1.Pod{}, sent: map[types.UID]map[string][]v1.ResourceStatus{}}
}

// syncStreams starts a stream for each registered driver that offers the
// health service and has none running through its endpoint (or one
// ended whose restart is due), and stops those of drivers gone. again:
// the registry changed, so a driver that did not implement the service
// may since.
func (a *Actor) syncStreams(ctx actor.Context, now time.Time, again bool) {
	if !a.p.Health || a.p.Drivers == nil {
		return
	}
	want := map[string]dra.Driver{}
	for _, d := range a.p.Drivers.List() {
		if d.HealthService != "" {
			want[d.Name] = d
		}
	}
	for name, s := range a.h.streams {
		if d, ok := want[name]; !ok || d != s.driver {
			a.stopStream(name)
		}
	}
	for name, d := range want {
		s := a.h.streams[name]
		if s != nil && (!s.ended || (s.restartAt.IsZero() && !again) || now.Before(s.restartAt)) {
			continue
		}
		a.startStream(ctx, d)
	}
}

func (a *Actor) startStream(ctx actor.Context, d dra.Driver) {
	a.h.gen++
	gen := a.h.gen
	life, cancel := context.WithCancel(a.Context())
	a.h.streams[d.Name] = &healthStream{driver: d, gen: gen, cancel: cancel}
	self, system := ctx.Self(), ctx.ActorSystem()
	a.log.Info().Str("driver", d.Name).Str("service", d.HealthService).Msg("starting WatchResources health stream")
	go func() {
		defer cancel()
		err := dra.WatchHealth(life, d, func(devs []*drahealthv1.DeviceHealth) {
			supervision.TellFromOutside(system, self, &messages.DRAHealthReport{Driver: d.Name, Gen: gen, Devices: devs})
		})
		if life.Err() == nil {
			supervision.TellFromOutside(system, self, &messages.DRAHealthStreamEnded{Driver: d.Name, Gen: gen, Err: err})
		}
	}()
}

// stopStream ends a driver's stream and forgets its health, as upstream
// clears a driver's health when its stream exits.
func (a *Actor) stopStream(name string) {
	if s := a.h.streams[name]; s != nil && s.cancel != nil {
		s.cancel()
	}
	delete(a.h.streams, name)
	a.h.cache.ClearDriver(name)
}

func (a *Actor) onHealthReport(ctx actor.Context, m *messages.DRAHealthReport) {
	s := a.h.streams[m.Driver]
	if s == nil || s.gen != m.Gen || s.ended {
		return
	}
	devs := make([]dra.DeviceHealth, 0, len(m.Devices))
	for _, d := range m.Devices {
		devs = append(devs, dra.DeviceHealthFromProto(d))
	}
	if changed := a.h.cache.Update(m.Driver, devs, time.Now()); len(changed) > 0 {
		a.log.Info().Str("driver", m.Driver).Strs("devices", changed).Msg("device health changed")
	}
	a.pushHealth(ctx)
}

func (a *Actor) onHealthStreamEnded(ctx actor.Context, m *messages.DRAHealthStreamEnded) {
	s := a.h.streams[m.Driver]
	if s == nil || s.gen != m.Gen {
		return
	}
	s.ended = true
	a.h.cache.ClearDriver(m.Driver)
	if status.Code(m.Err) == codes.Unimplemented {
		// Upstream stops watching a driver that lists the service but
		// does not implement it, until it registers again.
		a.log.Info().Str("driver", m.Driver).Msg("driver does not support WatchResources health stream, stopping")
	} else {
		a.log.Info().Str("driver", m.Driver).AnErr("err", m.Err).Stringer("retryIn", healthRestartDelay).Msg("WatchResources health stream has ended")
		s.restartAt = time.Now().Add(healthRestartDelay)
		a.wakeAt(ctx, s.restartAt)
	}
	a.pushHealth(ctx)
}

// pushHealth tells the pod-manager, for each pod, the containers'
// allocatedResourcesStatus whenever it differs from what the pod was last
// shown, and sets the timer for the next device whose health will time
// out.
func (a *Actor) pushHealth(ctx actor.Context) {
	if !a.p.Health || a.p.PodManager == nil {
		return
	}
	now := time.Now()
	for uid, pod := range a.h.pods {
		claim := func(name string) (dra.ClaimInfoState, bool) { return a.m.Claim(pod.Namespace, name) }
		st := dra.ContainerResourceStatus(pod, claim, a.h.cache, now, a.p.HealthMessage)
		old := a.h.sent[uid]
		if len(st) == 0 && len(old) == 0 || apiequality.Semantic.DeepEqual(st, old) {
			continue
		}
		a.h.sent[uid] = st
		supervision.Tell(ctx, a.p.PodManager, &messages.ResourceHealthChanged{UID: uid, Source: messages.HealthFromDRA, Containers: st})
	}
	if next := a.h.cache.NextExpiry(now); !next.IsZero() {
		a.wakeAt(ctx, next.Add(time.Second))
	}
}

// wakeAt sets the timer to fire at t unless it fires earlier.
func (a *Actor) wakeAt(ctx actor.Context, t time.Time) {
	now := time.Now()
	if !a.h.due.IsZero() && a.h.due.After(now) && !a.h.due.After(t) {
		return
	}
	a.h.due = t
	supervision.After(ctx, t.Sub(now), &messages.DRAHealthDue{})
}

func (a *Actor) onHealthDue(ctx actor.Context) {
	now := time.Now()
	if !a.h.due.After(now) {
		a.h.due = time.Time{}
	}
	a.syncStreams(ctx, now, false)
	// A restart due later than the timer that fired keeps its own.
	for _, s := range a.h.streams {
		if s.ended && s.restartAt.After(now) {
			a.wakeAt(ctx, s.restartAt)
		}
	}
	a.pushHealth(ctx)
}

// forgetPod drops a pod whose claims were unprepared.
func (a *Actor) forgetPod(uid types.UID) {
	delete(a.h.pods, uid)
	delete(a.h.sent, uid)
}
