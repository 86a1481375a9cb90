// Package devicemanager holds the device-manager actor, upstream's device
// manager (pkg/kubelet/cm/devicemanager): it serves the device plugins'
// registration socket, <root-dir>/device-plugins/kubelet.sock, follows
// each registered plugin's devices, tells the status-reporter and the
// pod-manager how many each resource has (the Node's capacity and
// allocatable, admission), allocates devices to each container that asks
// for them when it is about to be created, keeps the allocations in
// upstream's checkpoint across restarts, and serves the podresources API
// on <root-dir>/pod-resources/kubelet.sock.
//
// Its decisions are a Machine (machine.go), with no I/O; the actor turns
// messages into events and carries out the commands, every plugin call
// off its mailbox.
package devicemanager

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/deviceplugin"
	"github.com/actorlet/actorlet/internal/deviceplugin/checkpoint"
	"github.com/actorlet/actorlet/internal/podresources"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "device-manager"

// callTimeout bounds each call to a plugin and the read of the pods.
const callTimeout = 30 * time.Second

// resyncPeriod is how often the devices of pods gone are freed (besides
// before each allocation) and DevicesChanged sent again.
const resyncPeriod = 10 * time.Second

// Params configure the device-manager.
type Params struct {
	RootDir string
	// PodManager answers ListPods (the active pods, whose devices stay);
	// StatusReporter and PodManager receive DevicesChanged.
	PodManager, StatusReporter *actor.PID
	// PodResources serves the podresources API; false serves none (unit
	// tests).
	PodResources bool
	// Grace is StopGrace; zero: StopGrace.
	Grace time.Duration
	// Health: the ResourceHealthStatus gate; the health of each pod's
	// devices is told to the PodManager for its containers'
	// allocatedResourcesStatus.
	Health bool
	Log    zerolog.Logger
}

// Actor is the device-manager actor.
type Actor struct {
	supervision.Lifetime
	p         Params
	log       zerolog.Logger
	m         *Machine
	server    *deviceplugin.Server
	resources *podresources.Server
	gen       int
	endpoints map[string]map[int]*deviceplugin.Endpoint
	writer    *checkpointWriter
	// healthSent is the allocatedResourcesStatus each pod was last told.
	healthSent map[types.UID]map[string][]v1.ResourceStatus
}

// New returns a producer of the device-manager.
func New(p Params) actor.Producer {
	if p.Grace <= 0 {
		p.Grace = StopGrace
	}
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Receive handles one message.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *actor.Stopping, *actor.Restarting:
		a.stop()
	case *messages.DevicePluginConnected:
		a.gen++
		e := m.Endpoint.(*deviceplugin.Endpoint)
		if a.endpoints[m.Resource] == nil {
			a.endpoints[m.Resource] = map[int]*deviceplugin.Endpoint{}
		}
		a.endpoints[m.Resource][a.gen] = e
		a.log.Info().Str("resource", m.Resource).Str("socket", e.Socket).Msg("device plugin registered")
		a.step(ctx, EvConnected{Resource: m.Resource, Gen: a.gen, PreStart: m.PreStart, Preferred: m.Preferred})
	case *messages.DevicesListed:
		a.step(ctx, EvDevices{Resource: m.Resource, Gen: m.Gen, Devices: m.Devices})
	case *messages.DevicePluginStreamEnded:
		a.log.Info().Str("resource", m.Resource).AnErr("err", m.Err).Msg("device plugin's ListAndWatch ended: its devices are unhealthy")
		a.step(ctx, EvStreamEnded{Resource: m.Resource, Gen: m.Gen})
	case *messages.DeviceGraceOver:
		a.step(ctx, EvGraceOver{Resource: m.Resource, Gen: m.Gen})
	case *messages.AllocateDevices:
		a.step(ctx, EvAllocate{Pod: m.Pod, Container: m.Container, ReplyTo: ctx.Sender()})
	case *messages.DevicePodsListed:
		a.step(ctx, EvActivePods{Active: m.Active})
	case *messages.DevicePreferred:
		a.step(ctx, EvPreferred{ID: m.ID, Resource: m.Resource, IDs: m.IDs, Err: m.Err})
	case *messages.DevicesAllocated:
		a.step(ctx, EvAllocated{ID: m.ID, Responses: m.Responses, Err: m.Err})
	case *messages.DevicesResync:
		a.execute(ctx, []Command{CmdListPods{}, CmdPublish{Msg: &messages.DevicesChanged{Resources: a.m.Counts(), Holders: a.m.Holders()}}})
		supervision.After(ctx, resyncPeriod, &messages.DevicesResync{})
	case *messages.ListDeviceAllocations:
		ctx.Respond(a.m.Allocations())
	case *messages.HealthRequest:
		ctx.Respond(&messages.HealthReport{Name: Kind, Healthy: true, LastActivity: time.Now()})
	}
}

func (a *Actor) start(ctx actor.Context) {
	a.endpoints = map[string]map[int]*deviceplugin.Endpoint{}
	dir := deviceplugin.Dir(a.p.RootDir)
	// The checkpoint is read before anything can ask for devices: a
	// restarted node's running pods keep theirs.
	entries, registered, err := checkpoint.Read(dir)
	if err != nil {
		// As upstream: a corrupt checkpoint is left behind and the
		// allocations start empty.
		a.log.Error().Err(err).Msg("device manager checkpoint unreadable: starting without its allocations")
	}
	resps := map[int]*api.ContainerAllocateResponse{}
	for i, e := range entries {
		if len(e.AllocResp) == 0 {
			continue
		}
		r := &api.ContainerAllocateResponse{}
		if err := proto.Unmarshal(e.AllocResp, r); err == nil {
			resps[i] = r
		}
	}
	m, cmds := NewMachine(entries, resps, registered)
	a.m = m
	a.writer = newCheckpointWriter(dir, a.log)
	a.execute(ctx, cmds)
	// The pod-manager, spawned after this actor, hears the counts at the
	// first resync.
	supervision.After(ctx, time.Second, &messages.DevicesResync{})
	self, system := ctx.Self(), ctx.ActorSystem()
	a.server, err = deviceplugin.Serve(dir, func(e *deviceplugin.Endpoint) {
		supervision.TellFromOutside(system, self, &messages.DevicePluginConnected{Resource: e.Resource, Endpoint: e,
			PreStart: e.Options.GetPreStartRequired(), Preferred: e.Options.GetGetPreferredAllocationAvailable()})
	})
	if err != nil {
		// No device plugin can register; pods asking for no device run.
		a.log.Error().Err(err).Str("dir", dir).Msg("device plugin registration server failed to start")
	}
	if a.p.PodResources {
		a.resources, err = podresources.Serve(podresources.SocketPath(a.p.RootDir), &podSource{system: system, devices: self, pods: a.p.PodManager}, nil)
		if err != nil {
			a.log.Error().Err(err).Msg("podresources API failed to start")
		}
	}
}

func (a *Actor) stop() {
	if a.server != nil {
		a.server.Stop()
		a.server = nil
	}
	if a.resources != nil {
		a.resources.Stop()
		a.resources = nil
	}
	for _, gens := range a.endpoints {
		for _, e := range gens {
			e.Close()
		}
	}
	a.endpoints = nil
	if a.writer != nil {
		a.writer.close()
	}
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	a.execute(ctx, a.m.Step(ev))
	a.pushHealth(ctx)
}

// pushHealth tells the pod-manager each pod's allocatedResourcesStatus of
// its devices whenever it changed, as upstream's device manager asks for
// a pod's status update when one of its devices' health changed.
func (a *Actor) pushHealth(ctx actor.Context) {
	if !a.p.Health || a.p.PodManager == nil {
		return
	}
	if a.healthSent == nil {
		a.healthSent = map[types.UID]map[string][]v1.ResourceStatus{}
	}
	held := map[types.UID]bool{}
	for _, uid := range a.m.Pods() {
		held[uid] = true
		st := a.m.ResourceHealth(uid)
		if old, ok := a.healthSent[uid]; ok && apiequality.Semantic.DeepEqual(st, old) {
			continue
		}
		a.healthSent[uid] = st
		supervision.Tell(ctx, a.p.PodManager, &messages.ResourceHealthChanged{UID: uid, Source: messages.HealthFromDevices, Containers: st})
	}
	for uid := range a.healthSent {
		if !held[uid] {
			delete(a.healthSent, uid)
		}
	}
}

func (a *Actor) endpoint(res string, gen int) *deviceplugin.Endpoint { return a.endpoints[res][gen] }

func (a *Actor) execute(ctx actor.Context, cmds []Command) {
	for _, c := range cmds {
		switch c := c.(type) {
		case CmdWatch:
			a.watch(ctx, c.Resource, c.Gen)
		case CmdClose:
			if e := a.endpoint(c.Resource, c.Gen); e != nil {
				e.Close()
				delete(a.endpoints[c.Resource], c.Gen)
			}
		case CmdGraceTimer:
			supervision.After(ctx, a.p.Grace, &messages.DeviceGraceOver{Resource: c.Resource, Gen: c.Gen})
		case CmdListPods:
			a.listPods(ctx)
		case CmdPrefer:
			e := a.endpoint(c.Resource, c.Gen)
			supervision.Go(ctx, func(life context.Context) messages.Message {
				if e == nil {
					return &messages.DevicePreferred{ID: c.ID, Resource: c.Resource, Err: errors.New("endpoint not found in cache for a registered resource: " + c.Resource)}
				}
				call, cancel := context.WithTimeout(life, callTimeout)
				defer cancel()
				ids, err := e.Preferred(call, c.Available, c.MustInclude, c.Size)
				return &messages.DevicePreferred{ID: c.ID, Resource: c.Resource, IDs: ids, Err: err}
			})
		case CmdAllocate:
			a.allocate(ctx, c)
		case CmdReply:
			if pid, ok := c.To.(*actor.PID); ok && pid != nil {
				ctx.Send(pid, c.Reply)
			}
		case CmdCheckpoint:
			a.writer.save(c.Entries, c.Registered)
		case CmdPublish:
			for _, pid := range []*actor.PID{a.p.StatusReporter, a.p.PodManager} {
				if pid != nil {
					supervision.Tell(ctx, pid, &messages.DevicesChanged{Resources: maps.Clone(c.Msg.Resources), Holders: maps.Clone(c.Msg.Holders)})
				}
			}
		}
	}
}

// watch runs a plugin's ListAndWatch until it ends, each list of devices
// a message.
func (a *Actor) watch(ctx actor.Context, res string, gen int) {
	e := a.endpoint(res, gen)
	if e == nil {
		return
	}
	self, system, life := ctx.Self(), ctx.ActorSystem(), a.Context()
	go func() {
		err := e.Watch(life, func(devs []*api.Device) {
			supervision.TellFromOutside(system, self, &messages.DevicesListed{Resource: res, Gen: gen, Devices: devs})
		})
		if life.Err() == nil {
			supervision.TellFromOutside(system, self, &messages.DevicePluginStreamEnded{Resource: res, Gen: gen, Err: err})
		}
	}()
}

// listPods reads the active pods from the pod-manager: those with a live
// worker, less the finished ones, once the pod sources are all read.
func (a *Actor) listPods(ctx actor.Context) {
	pm, system := a.p.PodManager, ctx.ActorSystem()
	supervision.Go(ctx, func(context.Context) messages.Message {
		if pm == nil {
			return &messages.DevicePodsListed{}
		}
		res, err := system.Root.RequestFuture(pm, &messages.ListPods{}, callTimeout).Result()
		list, ok := res.(*messages.PodList)
		if err != nil || !ok || !list.SourcesReady {
			return &messages.DevicePodsListed{}
		}
		return &messages.DevicePodsListed{Active: activePods(list)}
	})
}

func activePods(list *messages.PodList) map[types.UID]bool {
	active := map[types.UID]bool{}
	for _, uid := range list.Active {
		active[uid] = true
	}
	for _, p := range list.Pods {
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			delete(active, p.UID)
		}
	}
	return active
}

// allocate calls the plugins: Allocate for each resource's new devices,
// in the order of their names, then PreStartContainer where required.
func (a *Actor) allocate(ctx actor.Context, c CmdAllocate) {
	eps := map[string]*deviceplugin.Endpoint{}
	for res, gen := range c.Gens {
		eps[res] = a.endpoint(res, gen)
	}
	supervision.Go(ctx, func(life context.Context) messages.Message {
		out := &messages.DevicesAllocated{ID: c.ID, Responses: map[string]*api.ContainerAllocateResponse{}}
		for _, res := range slices.Sorted(maps.Keys(c.Allocate)) {
			e := eps[res]
			if e == nil {
				out.Err = errors.New("unknown Device Plugin " + res)
				return out
			}
			call, cancel := context.WithTimeout(life, callTimeout)
			r, err := e.Allocate(call, c.Allocate[res])
			cancel()
			if err != nil {
				out.Err = err
				return out
			}
			out.Responses[res] = r
		}
		for _, res := range slices.Sorted(maps.Keys(c.PreStart)) {
			if e := eps[res]; e != nil {
				call, cancel := context.WithTimeout(life, callTimeout)
				err := e.PreStart(call, c.PreStart[res])
				cancel()
				if err != nil {
					out.Err = err
					return out
				}
			}
		}
		return out
	})
}

// Client gives pods' containers their devices from the device-manager:
// podruntime.DevicePlugins, asked from a pod-worker's goroutine.
type Client struct {
	System *actor.ActorSystem
	PID    *actor.PID
}

// ContainerDevices asks the device-manager for container's devices,
// waiting at most until ctx's deadline (callTimeout past the plugins'
// calls without one).
func (c Client) ContainerDevices(ctx context.Context, pod *v1.Pod, container string) ([]*api.ContainerAllocateResponse, error) {
	wait := 3 * callTimeout
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	res, err := c.System.Root.RequestFuture(c.PID, &messages.AllocateDevices{Pod: pod.DeepCopy(), Container: container}, wait).Result()
	if err != nil {
		return nil, err
	}
	r, ok := res.(*messages.ContainerDevices)
	if !ok {
		return nil, fmt.Errorf("devices: unexpected answer %T", res)
	}
	return r.Responses, r.Err
}
