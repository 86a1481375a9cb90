// Package pluginmanager holds the plugin-manager actor, upstream's kubelet
// plugin manager: it watches plugins_registry under the root directory,
// and registers each plugin whose socket appears there through the
// registration handshake (GetInfo, then NotifyRegistrationStatus). A CSI
// driver's registration asks the driver for its node info (NodeGetInfo)
// and records it in the API (the node's CSINode, the Node's nodeid
// annotation and topology labels) and in the registry of CSI drivers that
// volume mounts read; it is undone when the socket goes. A DRA driver's
// registration records it in the registry of DRA drivers the dra-manager
// calls; when its last socket goes, its ResourceSlices of the node are
// deleted after WipingDelay unless it comes back, as upstream's. Device
// plugins are refused: actorlet does not implement them yet.
//
// Its decisions are a Machine (machine.go), with no I/O; the actor (this
// file) turns messages into the machine's events and carries out the
// commands, every dial, RPC and API write off its mailbox and bounded in
// time, so that a hung plugin holds up neither another plugin nor the
// actor.
package pluginmanager

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/plugins"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "plugin-manager"

// Upstream's bounds: a CSI driver's NodeGetInfo (csiTimeout), and ours on
// the API writes of one registration or de-registration.
const (
	CSITimeout = 2 * time.Minute
	APITimeout = time.Minute
	// WipingDelay is upstream's wait before the ResourceSlices of a DRA
	// driver that went are deleted: a driver that restarts keeps them.
	WipingDelay = 30 * time.Second
)

// Params configure the plugin-manager.
type Params struct {
	// Dir is the directory plugins put their registration sockets in,
	// ROOT/plugins_registry.
	Dir string
	// NodeInfo writes drivers' node info into the API; nil without an API
	// server (drivers are then registered in Drivers only).
	NodeInfo *csi.NodeInfoManager
	// Drivers is the registry of CSI drivers the actor keeps.
	Drivers *registry.Registry
	// DRADrivers is the registry of DRA drivers the actor keeps; nil:
	// DRA plugins are registered nowhere (no dra-manager).
	DRADrivers *dra.Registry
	// DRAManager is told DRADriversChanged whenever DRADrivers changes,
	// for the drivers' health streams; nil: nobody is.
	DRAManager *actor.PID
	// CSITimeout bounds a driver's NodeGetInfo; APITimeout the API writes
	// of one operation. Zero: the defaults above.
	CSITimeout, APITimeout time.Duration
	Log                    zerolog.Logger
}

// Actor is the plugin-manager actor.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started, the watch included, ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger
	m   *Machine
}

// New returns a producer of the plugin-manager.
func New(p Params) actor.Producer {
	if p.CSITimeout <= 0 {
		p.CSITimeout = CSITimeout
	}
	if p.APITimeout <= 0 {
		p.APITimeout = APITimeout
	}
	return func() actor.Actor {
		return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.start(ctx)
	case *messages.PluginSocketAdded:
		a.step(ctx, EvAdded{Path: m.Path})
	case *messages.PluginSocketRemoved:
		a.step(ctx, EvRemoved{Path: m.Path})
	case *messages.PluginInfoGot:
		a.step(ctx, EvInfo{Path: m.Path, Gen: m.Gen, Info: m.Info, Err: m.Err})
	case *messages.PluginRegistered:
		if m.Err == nil {
			a.log.Info().Str("socket", m.Path).Str("nodeID", m.NodeID).Msg("CSI driver registered")
		}
		a.step(ctx, EvRegistered{Path: m.Path, Gen: m.Gen, Err: m.Err})
	case *messages.PluginRefused:
		if m.Err != nil {
			a.log.Warn().Err(m.Err).Str("socket", m.Path).Msg("telling a refused plugin failed")
		}
		a.step(ctx, EvRefused{Path: m.Path, Gen: m.Gen, Reason: m.Reason})
	case *messages.PluginDeregistered:
		if m.Err != nil {
			a.log.Warn().Err(m.Err).Str("socket", m.Path).Msg("de-registered; removing the driver's node info from the API failed")
		} else {
			a.log.Info().Str("socket", m.Path).Msg("plugin de-registered")
		}
		a.step(ctx, EvDeregistered{Path: m.Path, Gen: m.Gen})
	case *messages.PluginRetryDue:
		a.step(ctx, EvRetry{Path: m.Path, Gen: m.Gen})
	case *messages.CSINodeInitialized:
		if m.Err == nil {
			a.log.Info().Msg("CSINode initialized")
		}
		a.step(ctx, EvCSINodeInit{Err: m.Err})
	case *messages.CSINodeInitDue:
		a.step(ctx, EvCSINodeInitDue{})
	case *messages.DRASlicesWipeDue:
		a.wipeSlices(ctx, m.Driver)
	case *messages.DRASlicesWiped:
		if m.Err != nil {
			a.log.Warn().Err(m.Err).Str("fieldSelector", m.Selector).Msg("deleting ResourceSlices failed")
		} else {
			a.log.Info().Str("fieldSelector", m.Selector).Msg("deleted ResourceSlices")
		}
	case *messages.StorageStateRequest:
		ctx.Respond(&messages.StorageState{Err: a.m.StorageError()})
	}
}

// start begins an incarnation: the registry starts empty, since the
// watch reports every socket there again and each is registered anew.
func (a *Actor) start(ctx actor.Context) {
	a.m = NewMachine(a.p.NodeInfo != nil)
	if a.p.Drivers != nil {
		a.p.Drivers.Reset()
	}
	if a.p.DRADrivers != nil {
		a.p.DRADrivers.Reset()
		a.draChanged(ctx)
		// As upstream at start: the node's ResourceSlices of every
		// driver go; the drivers that register publish theirs again.
		a.wipeSlices(ctx, "")
	}
	a.step(ctx, EvStart{})
	system, self := ctx.ActorSystem(), ctx.Self()
	err := plugins.Watch(a.Context(), a.p.Dir, plugins.Events{
		Added: func(path string) {
			supervision.TellFromOutside(system, self, &messages.PluginSocketAdded{Path: path})
		},
		Removed: func(path string) {
			supervision.TellFromOutside(system, self, &messages.PluginSocketRemoved{Path: path})
		},
	}, a.log)
	if err != nil {
		// The actor fails, and its supervisor restarts it with backoff.
		panic(err)
	}
	a.log.Info().Str("dir", a.p.Dir).Msg("watching for plugin registration sockets")
}

func (a *Actor) step(ctx actor.Context, ev Event) {
	for _, c := range a.m.Step(ev, time.Now()) {
		a.execute(ctx, c)
	}
}

func (a *Actor) execute(ctx actor.Context, c Command) {
	switch c := c.(type) {
	case CmdGetInfo:
		supervision.Go(ctx, func(life context.Context) messages.Message {
			info, err := plugins.GetInfo(life, c.Path)
			got := &messages.PluginInfoGot{Path: c.Path, Gen: c.Gen, Err: err}
			if err == nil {
				got.Info = messages.PluginInfo{Type: info.Type, Name: info.Name, Endpoint: info.Endpoint, Versions: info.SupportedVersions}
			}
			return got
		})
	case CmdRegister:
		if c.DRA {
			a.log.Info().Str("socket", c.Path).Str("driver", c.Driver.Name).Str("endpoint", c.Driver.Endpoint).
				Str("service", c.Driver.HighestVersion).Msg("registering DRA driver")
			supervision.Go(ctx, func(life context.Context) messages.Message {
				return &messages.PluginRegistered{Path: c.Path, Gen: c.Gen, Err: plugins.Notify(life, c.Path, true, "")}
			})
			break
		}
		a.log.Info().Str("socket", c.Path).Str("driver", c.Driver.Name).Str("endpoint", c.Driver.Endpoint).
			Strs("versions", c.Driver.Versions).Msg("registering CSI driver")
		p := a.p
		p.Log = a.log
		supervision.Go(ctx, func(life context.Context) messages.Message {
			return register(life, p, c)
		})
	case CmdRefuse:
		a.log.Warn().Str("socket", c.Path).Str("type", c.Info.Type).Str("name", c.Info.Name).Str("reason", c.Reason).
			Msg("plugin refused")
		supervision.Go(ctx, func(life context.Context) messages.Message {
			err := plugins.Notify(life, c.Path, false, c.Reason)
			return &messages.PluginRefused{Path: c.Path, Gen: c.Gen, Reason: c.Reason, Err: err}
		})
	case CmdDeregister:
		if c.DRA {
			a.log.Info().Str("socket", c.Path).Str("driver", c.Driver).Msg("de-registering DRA driver")
			supervision.Tell(ctx, ctx.Self(), &messages.PluginDeregistered{Path: c.Path, Gen: c.Gen})
			break
		}
		a.log.Info().Str("socket", c.Path).Str("driver", c.Driver).Bool("uninstall", c.Uninstall).Msg("de-registering CSI driver")
		nim, timeout := a.p.NodeInfo, a.p.APITimeout
		supervision.Go(ctx, func(life context.Context) messages.Message {
			var err error
			if c.Uninstall && nim != nil {
				ctx, cancel := context.WithTimeout(life, timeout)
				defer cancel()
				err = nim.UninstallDriver(ctx, c.Driver)
			}
			return &messages.PluginDeregistered{Path: c.Path, Gen: c.Gen, Err: err}
		})
	case CmdRegistrySet:
		if c.DRA {
			if a.p.DRADrivers != nil {
				a.p.DRADrivers.Add(dra.Driver{Name: c.Driver.Name, Endpoint: c.Driver.Endpoint, Service: c.Driver.HighestVersion,
					HealthService: dra.ChooseHealthService(c.Driver.Versions)})
				a.draChanged(ctx)
			}
			break
		}
		if a.p.Drivers != nil {
			a.p.Drivers.Set(c.Driver)
		}
	case CmdRegistryDelete:
		if c.DRA {
			if a.p.DRADrivers != nil {
				if a.p.DRADrivers.Remove(c.Name, c.Endpoint) {
					supervision.After(ctx, WipingDelay, &messages.DRASlicesWipeDue{Driver: c.Name})
				}
				a.draChanged(ctx)
			}
			break
		}
		if a.p.Drivers != nil {
			a.p.Drivers.Delete(c.Name)
		}
	case CmdScheduleRetry:
		a.log.Warn().Err(c.Err).Str("socket", c.Path).Stringer("retryIn", c.After).Msg("plugin registration failed")
		supervision.After(ctx, c.After, &messages.PluginRetryDue{Path: c.Path, Gen: c.Gen})
	case CmdInitCSINode:
		nim, timeout := a.p.NodeInfo, a.p.APITimeout
		supervision.Go(ctx, func(life context.Context) messages.Message {
			ctx, cancel := context.WithTimeout(life, timeout)
			defer cancel()
			return &messages.CSINodeInitialized{Err: nim.InitializeCSINode(ctx)}
		})
	case CmdScheduleInit:
		a.log.Warn().Err(c.Err).Stringer("retryIn", c.After).Msg("initializing the CSINode failed")
		supervision.After(ctx, c.After, &messages.CSINodeInitDue{})
	}
}

// register is a CSI driver's registration, as upstream's RegisterPlugin
// and the operation around it: NodeGetInfo, the node info into the API,
// then the plugin told it is registered. A failure is told to the plugin
// and undoes the API writes (with UndoOnFailure), so that a driver is in
// the API only while it is registered.
func register(life context.Context, p Params, c CmdRegister) messages.Message {
	out := &messages.PluginRegistered{Path: c.Path, Gen: c.Gen}
	undo := func() {
		if !c.UndoOnFailure || p.NodeInfo == nil {
			return
		}
		ctx, cancel := context.WithTimeout(life, p.APITimeout)
		defer cancel()
		if err := p.NodeInfo.UninstallDriver(ctx, c.Driver.Name); err != nil {
			p.Log.Warn().Err(err).Str("driver", c.Driver.Name).Msg("undoing a failed registration")
		}
	}
	info, err := func() (csi.NodeInfo, error) {
		ctx, cancel := context.WithTimeout(life, p.CSITimeout)
		defer cancel()
		return csi.NodeGetInfo(ctx, c.Driver.Endpoint)
	}()
	if err == nil && p.NodeInfo != nil {
		ctx, cancel := context.WithTimeout(life, p.APITimeout)
		err = p.NodeInfo.InstallDriver(ctx, c.Driver.Name, info)
		cancel()
	} else if err == nil && info.NodeID == "" {
		err = errNoNodeID
	}
	if err != nil {
		undo()
		reason := "RegisterPlugin error -- plugin registration failed with err: " + err.Error()
		if nerr := plugins.Notify(life, c.Path, false, reason); nerr != nil {
			p.Log.Warn().Err(nerr).Str("socket", c.Path).Msg("telling a plugin its registration failed")
		}
		out.Err = err
		return out
	}
	if err := plugins.Notify(life, c.Path, true, ""); err != nil {
		undo()
		out.Err = err
		return out
	}
	out.NodeID = info.NodeID
	return out
}

// errNoNodeID refuses a driver without a node ID when there is no API
// server to refuse it (csi.NodeInfoManager.InstallDriver does otherwise).
var errNoNodeID = errors.New("error adding CSI driver node info: driverNodeID must not be empty")

// wipeSlices deletes the node's ResourceSlices of driver (every driver's
// when empty), unless it is registered, as upstream's wipeResourceSlices;
// a failure is logged, and the next start or de-registration tries again.
func (a *Actor) wipeSlices(ctx actor.Context, driver string) {
	if a.p.NodeInfo == nil || a.p.DRADrivers == nil {
		return
	}
	if driver != "" {
		if _, err := a.p.DRADrivers.Get(driver); err == nil {
			return // registered again meanwhile
		}
	}
	kube, node, timeout := a.p.NodeInfo.Kube, a.p.NodeInfo.NodeName, a.p.APITimeout
	supervision.Go(ctx, func(life context.Context) messages.Message {
		ctx, cancel := context.WithTimeout(life, timeout)
		defer cancel()
		selector := fields.Set{resourceapi.ResourceSliceSelectorNodeName: node}
		if driver != "" {
			selector[resourceapi.ResourceSliceSelectorDriver] = driver
		}
		err := kube.ResourceV1().ResourceSlices().DeleteCollection(ctx, metav1.DeleteOptions{},
			metav1.ListOptions{FieldSelector: selector.String()})
		if apierrors.IsNotFound(err) {
			err = nil
		}
		return &messages.DRASlicesWiped{Selector: selector.String(), Err: err}
	})
}

// draChanged tells the dra-manager the DRA drivers' registry changed.
func (a *Actor) draChanged(ctx actor.Context) {
	if a.p.DRAManager != nil {
		supervision.Tell(ctx, a.p.DRAManager, &messages.DRADriversChanged{})
	}
}
