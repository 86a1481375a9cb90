package pluginmanager

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/retry"
	"github.com/actorlet/actorlet/messages"
)

// registerBackoff is upstream's backoff of a socket's failed registration
// (goroutinemap's exponential backoff).
var registerBackoff = retry.Backoff{Initial: 500 * time.Millisecond, Max: 2*time.Minute + 2*time.Second}

// initBackoff spaces the tries to make the CSINode: it needs the Node,
// which the status-reporter may still be registering.
var initBackoff = retry.Backoff{Initial: 200 * time.Millisecond, Max: 30 * time.Second}

// op is the operation in flight on one socket; at most one at a time, as
// upstream's operation executor.
type op int

const (
	opNone op = iota
	opGetInfo
	opRegister
	opRefuse
	opDeregister
)

// socket is one path under plugins_registry: the desired state (the file
// is there, as of generation gen) and the actual one (the plugin
// registered from it, if any).
type socket struct {
	desired bool
	// gen numbers each appearance of the socket, as upstream's UUID in the
	// desired state: a socket created anew is a plugin registered anew.
	gen uint64
	op  op
	// registering is the plugin whose registration is in flight.
	registering *registry.Driver
	// plugin is the registered plugin and the generation it was registered
	// from.
	plugin    *registry.Driver
	pluginGen uint64
	// waitGen is the generation whose retry timer runs, 0 for none.
	waitGen uint64
	backoff retry.Backoff
	// dra: the plugin registered or registering is a DRA driver (its
	// HighestVersion the gRPC service chosen), not a CSI one.
	dra bool
}

// Machine is the plugin-manager's desired and actual state of the world:
// the sockets seen, what each registered, which socket holds each CSI
// driver's name, the operations in flight, the retries. Step is its only
// mutator; it does no I/O and reads no clock.
type Machine struct {
	api     bool
	gen     uint64
	sockets map[string]*socket
	// drivers maps each registered CSI driver's name to the socket that
	// registered it last.
	drivers     map[string]string
	initBackoff retry.Backoff
	// storageErr is upstream's storage error of the runtime state: until
	// the CSINode is made, the node is not Ready (its scheduler's CSI
	// limits and the attach-detach controller read the CSINode).
	storageErr string
}

// NewMachine returns a machine that knows no socket; with api, the node's
// CSINode is made at the start.
func NewMachine(api bool) *Machine {
	return &Machine{api: api, sockets: map[string]*socket{}, drivers: map[string]string{},
		initBackoff: initBackoff}
}

// Event is what happens to the plugin-manager; one type per kind.
type Event interface{ isEvent() }

// EvStart: the actor started.
type EvStart struct{}

// EvAdded: a socket appeared.
type EvAdded struct{ Path string }

// EvRemoved: a path went.
type EvRemoved struct{ Path string }

// EvInfo: the handshake's GetInfo ended.
type EvInfo struct {
	Path string
	Gen  uint64
	Info messages.PluginInfo
	Err  error
}

// EvRegistered: a registration ended.
type EvRegistered struct {
	Path string
	Gen  uint64
	Err  error
}

// EvRefused: the plugin was told it is refused (or telling it failed).
type EvRefused struct {
	Path   string
	Gen    uint64
	Reason string
}

// EvDeregistered: a de-registration ended.
type EvDeregistered struct {
	Path string
	Gen  uint64
}

// EvRetry: a socket's retry timer fired.
type EvRetry struct {
	Path string
	Gen  uint64
}

// EvCSINodeInit: making the CSINode ended.
type EvCSINodeInit struct{ Err error }

// EvCSINodeInitDue: the timer to make the CSINode again fired.
type EvCSINodeInitDue struct{}

func (EvStart) isEvent()          {}
func (EvAdded) isEvent()          {}
func (EvRemoved) isEvent()        {}
func (EvInfo) isEvent()           {}
func (EvRegistered) isEvent()     {}
func (EvRefused) isEvent()        {}
func (EvDeregistered) isEvent()   {}
func (EvRetry) isEvent()          {}
func (EvCSINodeInit) isEvent()    {}
func (EvCSINodeInitDue) isEvent() {}

// Command is what the actor carries out.
type Command interface{ isCommand() }

// CmdGetInfo: dial the socket and ask GetInfo.
type CmdGetInfo struct {
	Path string
	Gen  uint64
}

// CmdRegister: register the CSI driver: NodeGetInfo, its node info into
// the API, then tell the plugin it is registered. On failure tell it why
// and, with UndoOnFailure, remove what was written of its name.
type CmdRegister struct {
	Path          string
	Gen           uint64
	Driver        registry.Driver
	UndoOnFailure bool
	// DRA: a DRA driver, whose registration is only the plugin told.
	DRA bool
}

// CmdRefuse: tell the plugin it is not registered, and why.
type CmdRefuse struct {
	Path   string
	Gen    uint64
	Info   messages.PluginInfo
	Reason string
}

// CmdDeregister: the plugin's socket went (or came anew): with Uninstall,
// remove the driver's node info from the API; without, another socket
// registered the same driver name since and it stays.
type CmdDeregister struct {
	Path      string
	Gen       uint64
	Driver    string
	Uninstall bool
	DRA       bool
}

// CmdRegistrySet: the driver is registered; those who mount its volumes
// may use it.
type CmdRegistrySet struct {
	Driver registry.Driver
	DRA    bool
}

// CmdRegistryDelete: the driver is no longer registered.
type CmdRegistryDelete struct {
	Name, Endpoint string
	DRA            bool
}

// CmdScheduleRetry: the socket's registration failed (Err); try again
// after After.
type CmdScheduleRetry struct {
	Path  string
	Gen   uint64
	After time.Duration
	Err   error
}

// CmdInitCSINode: make the node's CSINode.
type CmdInitCSINode struct{}

// CmdScheduleInit: making the CSINode failed (Err); try again after After.
type CmdScheduleInit struct {
	After time.Duration
	Err   error
}

func (CmdGetInfo) isCommand()        {}
func (CmdRegister) isCommand()       {}
func (CmdRefuse) isCommand()         {}
func (CmdDeregister) isCommand()     {}
func (CmdRegistrySet) isCommand()    {}
func (CmdRegistryDelete) isCommand() {}
func (CmdScheduleRetry) isCommand()  {}
func (CmdInitCSINode) isCommand()    {}
func (CmdScheduleInit) isCommand()   {}

// Step applies ev at now and returns the commands to carry out, in order.
func (m *Machine) Step(ev Event, now time.Time) []Command {
	switch ev := ev.(type) {
	case EvStart:
		return m.onStart()
	case EvAdded:
		return m.onAdded(ev)
	case EvRemoved:
		return m.onRemoved(ev)
	case EvInfo:
		return m.onInfo(ev, now)
	case EvRegistered:
		return m.onRegistered(ev, now)
	case EvRefused:
		return m.onRefused(ev, now)
	case EvDeregistered:
		return m.onDeregistered(ev)
	case EvRetry:
		return m.onRetry(ev)
	case EvCSINodeInit:
		return m.onCSINodeInit(ev, now)
	case EvCSINodeInitDue:
		return []Command{CmdInitCSINode{}}
	}
	panic(fmt.Sprintf("pluginmanager: unknown event %T", ev))
}

func (m *Machine) onStart() []Command {
	if !m.api {
		return nil
	}
	m.storageErr = "CSINode is not yet initialized"
	return []Command{CmdInitCSINode{}}
}

// StorageError is why storage keeps the node from being Ready, in
// upstream's words; empty when nothing does.
func (m *Machine) StorageError() string { return m.storageErr }

func (m *Machine) onCSINodeInit(ev EvCSINodeInit, now time.Time) []Command {
	if ev.Err == nil {
		m.initBackoff.Reset()
		m.storageErr = ""
		return nil
	}
	m.storageErr = fmt.Sprintf("failed to initialize CSINode: %v", ev.Err)
	return []Command{CmdScheduleInit{After: m.initBackoff.Fail(now, now), Err: ev.Err}}
}

// onAdded: a new generation of the socket is wanted. A registration of an
// older one is undone first, by reconcile; the backoff starts over, since
// a socket made anew is a plugin that started anew.
func (m *Machine) onAdded(ev EvAdded) []Command {
	s := m.sockets[ev.Path]
	if s == nil {
		s = &socket{backoff: registerBackoff}
		m.sockets[ev.Path] = s
	}
	m.gen++
	s.desired, s.gen, s.waitGen = true, m.gen, 0
	s.backoff.Reset()
	return m.reconcile(ev.Path)
}

func (m *Machine) onRemoved(ev EvRemoved) []Command {
	s := m.sockets[ev.Path]
	if s == nil {
		return nil // not a socket, or one never seen
	}
	s.desired, s.waitGen = false, 0
	return m.reconcile(ev.Path)
}

// onInfo validates what the plugin said: a CSI plugin of supported
// versions is registered; anything else is refused, and the plugin told.
func (m *Machine) onInfo(ev EvInfo, now time.Time) []Command {
	s := m.sockets[ev.Path]
	if s == nil || s.op != opGetInfo {
		return nil
	}
	s.op = opNone
	if !s.desired || ev.Gen != s.gen {
		return m.reconcile(ev.Path) // the socket went or came anew meanwhile
	}
	if ev.Err != nil {
		return m.fail(ev.Path, s, fmt.Errorf("RegisterPlugin error -- %w", ev.Err), now)
	}
	info := ev.Info
	if info.Endpoint == "" {
		info.Endpoint = ev.Path
	}
	var reason string
	var highest string
	isDRA := info.Type == registerapi.DRAPlugin
	switch info.Type {
	case registerapi.CSIPlugin:
		v, err := m.validateCSI(ev.Path, info)
		if err != nil {
			reason = "RegisterPlugin error -- plugin validation failed with err: " + err.Error()
		}
		highest = v
	case registerapi.DRAPlugin:
		service, err := dra.ChooseService(info.Versions)
		if err != nil {
			reason = fmt.Sprintf("RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin %s at endpoint %s: %v", info.Name, info.Endpoint, err)
		}
		highest = service
	case registerapi.DevicePlugin:
		reason = fmt.Sprintf("RegisterPlugin error -- plugin type %s is not implemented by actorlet: plugin %q at socket %s is not registered", info.Type, info.Name, ev.Path)
	default:
		reason = fmt.Sprintf("RegisterPlugin error -- no handler registered for plugin type: %s at socket %s", info.Type, ev.Path)
	}
	if reason != "" {
		s.op = opRefuse
		return []Command{CmdRefuse{Path: ev.Path, Gen: ev.Gen, Info: info, Reason: reason}}
	}
	d := registry.Driver{Name: info.Name, Endpoint: info.Endpoint, Versions: slices.Clone(info.Versions), HighestVersion: highest}
	s.op, s.registering, s.dra = opRegister, &d, isDRA
	_, held := m.drivers[driverKey(isDRA, d.Name)]
	return []Command{CmdRegister{Path: ev.Path, Gen: ev.Gen, Driver: d, UndoOnFailure: !held, DRA: isDRA}}
}

// driverKey keys m.drivers: a CSI and a DRA driver may share a name.
func driverKey(dra bool, name string) string {
	if dra {
		return "dra:" + name
	}
	return "csi:" + name
}

// validateCSI is upstream's validateVersions: the plugin must support a
// CSI 1.x version, higher than that of another registered (or
// registering) driver of the same name. It returns the highest.
func (m *Machine) validateCSI(path string, info messages.PluginInfo) (string, error) {
	if len(info.Versions) == 0 {
		return "", fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: RegisterPlugin for CSI driver %q failed. Plugin returned an empty list for supported versions",
			info.Name, info.Endpoint, info.Name)
	}
	v, err := utilversion.HighestSupportedVersion(info.Versions)
	if err != nil {
		return "", fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: RegisterPlugin for CSI driver %q failed. None of the versions specified %q are supported. err=%v",
			info.Name, info.Endpoint, info.Name, info.Versions, err)
	}
	for _, p := range slices.Sorted(maps.Keys(m.sockets)) {
		other := m.sockets[p]
		d := other.plugin
		if other.registering != nil {
			d = other.registering
		}
		if p == path || d == nil || d.Name != info.Name || other.dra {
			continue
		}
		if held, err := utilversion.ParseGeneric(d.HighestVersion); err == nil && !held.LessThan(v) {
			return "", fmt.Errorf("validation failed for CSI Driver %s at endpoint %s: RegisterPlugin for CSI driver %q failed. Another driver with the same name is already registered with a higher supported version: %q",
				info.Name, info.Endpoint, info.Name, d.HighestVersion)
		}
	}
	return v.String(), nil
}

func (m *Machine) onRegistered(ev EvRegistered, now time.Time) []Command {
	s := m.sockets[ev.Path]
	if s == nil || s.op != opRegister {
		return nil
	}
	d := s.registering
	s.op, s.registering = opNone, nil
	if ev.Err != nil {
		if !s.desired || ev.Gen != s.gen {
			return m.reconcile(ev.Path)
		}
		return m.fail(ev.Path, s, ev.Err, now)
	}
	// Registered, even if the socket went meanwhile: reconcile then
	// de-registers it, as upstream adds a plugin to the actual state
	// before registering it.
	s.plugin, s.pluginGen = d, ev.Gen
	s.backoff.Reset()
	m.drivers[driverKey(s.dra, d.Name)] = ev.Path
	return append([]Command{CmdRegistrySet{Driver: *d, DRA: s.dra}}, m.reconcile(ev.Path)...)
}

func (m *Machine) onRefused(ev EvRefused, now time.Time) []Command {
	s := m.sockets[ev.Path]
	if s == nil || s.op != opRefuse {
		return nil
	}
	s.op = opNone
	if !s.desired || ev.Gen != s.gen {
		return m.reconcile(ev.Path)
	}
	return m.fail(ev.Path, s, fmt.Errorf("%s", ev.Reason), now)
}

func (m *Machine) onDeregistered(ev EvDeregistered) []Command {
	s := m.sockets[ev.Path]
	if s == nil || s.op != opDeregister {
		return nil
	}
	s.op, s.plugin, s.pluginGen = opNone, nil, 0
	return m.reconcile(ev.Path)
}

func (m *Machine) onRetry(ev EvRetry) []Command {
	s := m.sockets[ev.Path]
	if s == nil || s.waitGen == 0 || s.waitGen != ev.Gen {
		return nil // superseded: the socket went or came anew
	}
	s.waitGen = 0
	return m.reconcile(ev.Path)
}

// fail schedules the socket's next try after its backoff.
func (m *Machine) fail(path string, s *socket, err error, now time.Time) []Command {
	s.waitGen = s.gen
	return []Command{CmdScheduleRetry{Path: path, Gen: s.gen, After: s.backoff.Fail(now, now), Err: err}}
}

// reconcile starts what the socket needs, if nothing runs on it: first the
// de-registration of a plugin registered from a socket that went or came
// anew, then the registration of the socket that is there, as upstream's
// reconciler. A socket with nothing left to do is forgotten.
func (m *Machine) reconcile(path string) []Command {
	s := m.sockets[path]
	if s.op != opNone {
		return nil
	}
	if s.plugin != nil && (!s.desired || s.pluginGen != s.gen) {
		name, k := s.plugin.Name, driverKey(s.dra, s.plugin.Name)
		s.op = opDeregister
		var cmds []Command
		owner := m.drivers[k] == path
		if owner {
			delete(m.drivers, k)
		}
		switch {
		case s.dra:
			// A DRA driver is registered once per socket, as upstream's
			// store of its plugins.
			cmds = append(cmds, CmdRegistryDelete{Name: name, Endpoint: s.plugin.Endpoint, DRA: true})
		case owner:
			cmds = append(cmds, CmdRegistryDelete{Name: name})
		}
		return append(cmds, CmdDeregister{Path: path, Gen: s.pluginGen, Driver: name, Uninstall: owner, DRA: s.dra})
	}
	if s.desired && s.plugin == nil && s.waitGen != s.gen {
		s.op = opGetInfo
		return []Command{CmdGetInfo{Path: path, Gen: s.gen}}
	}
	if !s.desired && s.plugin == nil {
		delete(m.sockets, path)
	}
	return nil
}

// Registered returns the sockets with a registered plugin, each as
// "path=driver", sorted, for tests.
func (m *Machine) Registered() []string {
	var out []string
	for p, s := range m.sockets {
		if s.plugin != nil {
			out = append(out, p+"="+s.plugin.Name)
		}
	}
	slices.Sort(out)
	return out
}

// describe is the one-line state of a socket, for test failures.
func (m *Machine) describe(path string) string {
	s := m.sockets[path]
	if s == nil {
		return "absent"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "desired=%v gen=%d op=%d waitGen=%d", s.desired, s.gen, s.op, s.waitGen)
	if s.plugin != nil {
		fmt.Fprintf(&b, " plugin=%s@%d", s.plugin.Name, s.pluginGen)
	}
	return b.String()
}
