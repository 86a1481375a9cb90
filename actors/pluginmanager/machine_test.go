package pluginmanager

import (
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/messages"
)

const (
	sockA = "/reg/a.sock"
	sockB = "/reg/b.sock"
)

var (
	infoA = messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/plugins/a/csi.sock", Versions: []string{"1.0.0"}}
	infoB = messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "b.csi", Versions: []string{"0.3.0", "1.2.0"}}
	drvA  = registry.Driver{Name: "a.csi", Endpoint: "/plugins/a/csi.sock", Versions: []string{"1.0.0"}, HighestVersion: "1.0.0"}
	// infoB sets no endpoint: its registration socket is its endpoint.
	drvB   = registry.Driver{Name: "b.csi", Endpoint: sockB, Versions: []string{"0.3.0", "1.2.0"}, HighestVersion: "1.2.0"}
	errDie = errors.New("rpc error: code = Unavailable")
	// infoDRA is a DRA plugin's; drvDRA it registered.
	infoDRA = messages.PluginInfo{Type: registerapi.DRAPlugin, Name: "dra.example.com", Endpoint: "/plugins/dra/dra.sock", Versions: []string{"v1beta1.DRAPlugin", "v1.DRAPlugin"}}
	drvDRA  = registry.Driver{Name: "dra.example.com", Endpoint: "/plugins/dra/dra.sock", Versions: []string{"v1beta1.DRAPlugin", "v1.DRAPlugin"}, HighestVersion: "v1beta1.DRAPlugin"}
)

// registerA is socket a's whole registration, as generation gen.
func registerA(gen uint64) []Event {
	return []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: gen, Info: infoA}, EvRegistered{Path: sockA, Gen: gen}}
}

func seq(parts ...[]Event) []Event { return slices.Concat(parts...) }

// TestStep drives the machine through events and checks the commands of
// the last one and the registered plugins after it.
func TestStep(t *testing.T) {
	for _, tc := range []struct {
		name       string
		api        bool
		events     []Event
		want       []Command
		registered []string
	}{
		{"a new socket is dialled", false, []Event{EvAdded{sockA}},
			[]Command{CmdGetInfo{Path: sockA, Gen: 1}}, nil},
		{"a CSI plugin of a supported version is registered", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoA}},
			[]Command{CmdRegister{Path: sockA, Gen: 1, Driver: drvA, UndoOnFailure: true}}, nil},
		{"its registration done, the registry has it", false, registerA(1),
			[]Command{CmdRegistrySet{Driver: drvA}}, []string{sockA + "=a.csi"}},
		{"no endpoint: the socket is the endpoint", false, []Event{EvAdded{sockB}, EvInfo{Path: sockB, Gen: 1, Info: infoB}},
			[]Command{CmdRegister{Path: sockB, Gen: 1, Driver: drvB, UndoOnFailure: true}}, nil},
		{"GetInfo fails: retried after upstream's backoff", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Err: errDie}},
			[]Command{CmdScheduleRetry{Path: sockA, Gen: 1, After: 500 * time.Millisecond, Err: errors.New("RegisterPlugin error -- " + errDie.Error())}}, nil},
		{"the registration fails: retried after the backoff", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoA}, EvRegistered{Path: sockA, Gen: 1, Err: errDie}},
			[]Command{CmdScheduleRetry{Path: sockA, Gen: 1, After: 500 * time.Millisecond, Err: errDie}}, nil},
		{"the retry dials again", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Err: errDie}, EvRetry{Path: sockA, Gen: 1}},
			[]Command{CmdGetInfo{Path: sockA, Gen: 1}}, nil},
		{"a second failure waits twice as long", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Err: errDie}, EvRetry{Path: sockA, Gen: 1}, EvInfo{Path: sockA, Gen: 1, Err: errDie}},
			[]Command{CmdScheduleRetry{Path: sockA, Gen: 1, After: time.Second, Err: errors.New("RegisterPlugin error -- " + errDie.Error())}}, nil},
		{"a socket removed while waiting for its retry is forgotten", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Err: errDie}, EvRemoved{sockA}, EvRetry{Path: sockA, Gen: 1}},
			nil, nil},
		{"a socket made anew while waiting is dialled at once", false, []Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Err: errDie}, EvAdded{sockA}},
			[]Command{CmdGetInfo{Path: sockA, Gen: 2}}, nil},
		{"removed: de-registered, the driver's node info uninstalled", false, seq(registerA(1), []Event{EvRemoved{sockA}}),
			[]Command{CmdRegistryDelete{Name: "a.csi"}, CmdDeregister{Path: sockA, Gen: 1, Driver: "a.csi", Uninstall: true}}, []string{sockA + "=a.csi"}},
		{"de-registered: forgotten", false, seq(registerA(1), []Event{EvRemoved{sockA}, EvDeregistered{Path: sockA, Gen: 1}}),
			nil, nil},
		{"re-added while de-registering: waits for it", false, seq(registerA(1), []Event{EvRemoved{sockA}, EvAdded{sockA}}),
			nil, []string{sockA + "=a.csi"}},
		{"re-added: then registered anew", false, seq(registerA(1), []Event{EvRemoved{sockA}, EvAdded{sockA}, EvDeregistered{Path: sockA, Gen: 1}}),
			[]Command{CmdGetInfo{Path: sockA, Gen: 2}}, nil},
		{"created anew without a removal seen: the same", false, seq(registerA(1), []Event{EvAdded{sockA}}),
			[]Command{CmdRegistryDelete{Name: "a.csi"}, CmdDeregister{Path: sockA, Gen: 1, Driver: "a.csi", Uninstall: true}}, []string{sockA + "=a.csi"}},
		{"removed during its registration: de-registered once registered", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoA}, EvRemoved{sockA}, EvRegistered{Path: sockA, Gen: 1}},
			[]Command{CmdRegistrySet{Driver: drvA}, CmdRegistryDelete{Name: "a.csi"}, CmdDeregister{Path: sockA, Gen: 1, Driver: "a.csi", Uninstall: true}}, []string{sockA + "=a.csi"}},
		{"removed during GetInfo: nothing registered, forgotten", false,
			[]Event{EvAdded{sockA}, EvRemoved{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoA}},
			nil, nil},
		{"two plugins register side by side", false,
			seq([]Event{EvAdded{sockB}}, registerA(2), []Event{EvInfo{Path: sockB, Gen: 1, Info: infoB}, EvRegistered{Path: sockB, Gen: 1}}),
			[]Command{CmdRegistrySet{Driver: drvB}}, []string{sockA + "=a.csi", sockB + "=b.csi"}},
		{"two plugins: removing one leaves the other", false,
			seq([]Event{EvAdded{sockB}}, registerA(2), []Event{EvInfo{Path: sockB, Gen: 1, Info: infoB}, EvRegistered{Path: sockB, Gen: 1}, EvRemoved{sockA}, EvDeregistered{Path: sockA, Gen: 2}}),
			nil, []string{sockB + "=b.csi"}},
		{"a device plugin is refused: not implemented", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.DevicePlugin, Name: "example.com/gpu", Versions: []string{"v1beta1"}}}},
			[]Command{CmdRefuse{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.DevicePlugin, Name: "example.com/gpu", Endpoint: sockA, Versions: []string{"v1beta1"}},
				Reason: "RegisterPlugin error -- plugin type DevicePlugin is not implemented by actorlet: plugin \"example.com/gpu\" at socket /reg/a.sock is not registered"}}, nil},
		{"a DRA plugin is registered through the first service both speak", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoDRA}},
			[]Command{CmdRegister{Path: sockA, Gen: 1, Driver: drvDRA, UndoOnFailure: true, DRA: true}}, nil},
		{"a registered DRA plugin is in the DRA registry", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoDRA}, EvRegistered{Path: sockA, Gen: 1}},
			[]Command{CmdRegistrySet{Driver: drvDRA, DRA: true}}, []string{sockA + "=dra.example.com"}},
		{"a DRA plugin whose socket goes is de-registered", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: infoDRA}, EvRegistered{Path: sockA, Gen: 1}, EvRemoved{sockA}},
			[]Command{CmdRegistryDelete{Name: "dra.example.com", Endpoint: "/plugins/dra/dra.sock", DRA: true},
				CmdDeregister{Path: sockA, Gen: 1, Driver: "dra.example.com", Uninstall: true, DRA: true}}, []string{sockA + "=dra.example.com"}},
		{"a DRA plugin and a CSI plugin may share a name", false,
			seq([]Event{EvAdded{sockB}, EvInfo{Path: sockB, Gen: 1, Info: messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "dra.example.com", Endpoint: "/c", Versions: []string{"1.0.0"}}}, EvRegistered{Path: sockB, Gen: 1}},
				[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 2, Info: infoDRA}}),
			[]Command{CmdRegister{Path: sockA, Gen: 2, Driver: drvDRA, UndoOnFailure: true, DRA: true}}, []string{sockB + "=dra.example.com"}},
		{"a DRA plugin of no service actorlet speaks is refused as upstream", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.DRAPlugin, Name: "dra.example.com", Endpoint: "/e", Versions: []string{"1.0.0"}}}},
			[]Command{CmdRefuse{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.DRAPlugin, Name: "dra.example.com", Endpoint: "/e", Versions: []string{"1.0.0"}},
				Reason: `RegisterPlugin error -- plugin validation failed with err: invalid supported gRPC versions of DRA driver plugin dra.example.com at endpoint /e: none of services supported by the plugin (["1.0.0"]) are supported by the kubelet (["v1.DRAPlugin" "v1beta1.DRAPlugin"])`}}, nil},
		{"a refused plugin is tried again after the backoff", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.DRAPlugin, Name: "dra.example.com"}}, EvRefused{Path: sockA, Gen: 1, Reason: "no"}},
			[]Command{CmdScheduleRetry{Path: sockA, Gen: 1, After: 500 * time.Millisecond, Err: errors.New("no")}}, nil},
		{"an unknown type is refused as upstream", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: "Other", Name: "x", Endpoint: "/e"}}},
			[]Command{CmdRefuse{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: "Other", Name: "x", Endpoint: "/e"},
				Reason: "RegisterPlugin error -- no handler registered for plugin type: Other at socket /reg/a.sock"}}, nil},
		{"a CSI plugin without a 1.x version is refused", false,
			[]Event{EvAdded{sockA}, EvInfo{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/e", Versions: []string{"2.0.0", "0.3.0"}}}},
			[]Command{CmdRefuse{Path: sockA, Gen: 1, Info: messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/e", Versions: []string{"2.0.0", "0.3.0"}},
				Reason: `RegisterPlugin error -- plugin validation failed with err: validation failed for CSI Driver a.csi at endpoint /e: RegisterPlugin for CSI driver "a.csi" failed. None of the versions specified ["2.0.0" "0.3.0"] are supported. err=highest supported version reported is 0.3.0, must be v1.x`}}, nil},
		{"the same driver name at a higher version takes over", false,
			seq(registerA(1), []Event{EvAdded{sockB}, EvInfo{Path: sockB, Gen: 2, Info: messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/e2", Versions: []string{"1.1.0"}}}}),
			[]Command{CmdRegister{Path: sockB, Gen: 2, Driver: registry.Driver{Name: "a.csi", Endpoint: "/e2", Versions: []string{"1.1.0"}, HighestVersion: "1.1.0"}}}, []string{sockA + "=a.csi"}},
		{"the socket that lost its driver's name goes: nothing uninstalled", false,
			seq(registerA(1), []Event{EvAdded{sockB}, EvInfo{Path: sockB, Gen: 2, Info: messages.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/e2", Versions: []string{"1.1.0"}}},
				EvRegistered{Path: sockB, Gen: 2}, EvRemoved{sockA}}),
			[]Command{CmdDeregister{Path: sockA, Gen: 1, Driver: "a.csi"}}, []string{sockA + "=a.csi", sockB + "=a.csi"}},
		{"start with the API: the CSINode is made", true, []Event{EvStart{}}, []Command{CmdInitCSINode{}}, nil},
		{"start standalone: no CSINode", false, []Event{EvStart{}}, nil, nil},
		{"the CSINode could not be made: tried again", true, []Event{EvStart{}, EvCSINodeInit{Err: errDie}},
			[]Command{CmdScheduleInit{After: 200 * time.Millisecond, Err: errDie}}, nil},
		{"the CSINode made: nothing more", true, []Event{EvStart{}, EvCSINodeInit{}}, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.api)
			now := time.Unix(1_800_000_000, 0)
			var got []Command
			for _, ev := range tc.events {
				got = m.Step(ev, now)
				now = now.Add(time.Second)
			}
			if got, want := plainErrors(got), plainErrors(tc.want); !reflect.DeepEqual(got, want) {
				t.Errorf("commands:\n got %#v\nwant %#v\nstate of a: %s; of b: %s", got, want, m.describe(sockA), m.describe(sockB))
			}
			if reg := m.Registered(); !slices.Equal(reg, tc.registered) {
				t.Errorf("registered = %v, want %v", reg, tc.registered)
			}
		})
	}
}

// TestStorageError: the node is not Ready for storage until its CSINode
// is made, with upstream's messages; standalone, storage never holds it.
func TestStorageError(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    bool
		events []Event
		want   string
	}{
		{"before the start", true, nil, ""},
		{"standalone", false, []Event{EvStart{}}, ""},
		{"the CSINode being made", true, []Event{EvStart{}}, "CSINode is not yet initialized"},
		{"the CSINode could not be made", true, []Event{EvStart{}, EvCSINodeInit{Err: errDie}}, "failed to initialize CSINode: " + errDie.Error()},
		{"made on a later try", true, []Event{EvStart{}, EvCSINodeInit{Err: errDie}, EvCSINodeInitDue{}, EvCSINodeInit{}}, ""},
		{"made", true, []Event{EvStart{}, EvCSINodeInit{}}, ""},
		{"a registration does not change it", true, seq([]Event{EvStart{}}, registerA(1)), "CSINode is not yet initialized"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(tc.api)
			now := time.Unix(1_800_000_000, 0)
			for _, ev := range tc.events {
				m.Step(ev, now)
			}
			if got := m.StorageError(); got != tc.want {
				t.Errorf("StorageError() = %q, want %q", got, tc.want)
			}
		})
	}
}

// plainErrors makes the commands' errors comparable: their text only.
func plainErrors(cmds []Command) []Command {
	var out []Command
	for _, c := range cmds {
		switch c := c.(type) {
		case CmdScheduleRetry:
			c.Err = errors.New(c.Err.Error())
			out = append(out, c)
		case CmdScheduleInit:
			c.Err = errors.New(c.Err.Error())
			out = append(out, c)
		default:
			out = append(out, c)
		}
	}
	return out
}

// TestSameNameLowerVersionRefused: a second socket with a driver name
// already registered at the same or a higher version is refused.
func TestSameNameLowerVersionRefused(t *testing.T) {
	m := NewMachine(false)
	now := time.Now()
	for _, ev := range registerA(1) {
		m.Step(ev, now)
	}
	m.Step(EvAdded{sockB}, now)
	cmds := m.Step(EvInfo{Path: sockB, Gen: 2, Info: infoA}, now)
	if len(cmds) != 1 {
		t.Fatalf("commands = %#v", cmds)
	}
	r, ok := cmds[0].(CmdRefuse)
	if !ok || !strings.Contains(r.Reason, "Another driver with the same name is already registered with a higher supported version") {
		t.Errorf("command = %#v, want a refusal naming the registered driver", cmds[0])
	}
}

// TestStaleOutcomesIgnored: an outcome with no operation in flight (a
// previous incarnation's, say) changes nothing.
func TestStaleOutcomesIgnored(t *testing.T) {
	m := NewMachine(false)
	now := time.Now()
	for _, ev := range []Event{
		EvInfo{Path: sockA, Gen: 1, Info: infoA},
		EvRegistered{Path: sockA, Gen: 1},
		EvRefused{Path: sockA, Gen: 1},
		EvDeregistered{Path: sockA, Gen: 1},
		EvRetry{Path: sockA, Gen: 1},
		EvRemoved{sockA},
	} {
		if cmds := m.Step(ev, now); cmds != nil {
			t.Errorf("%T: commands %#v", ev, cmds)
		}
	}
	m.Step(EvAdded{sockA}, now)
	if cmds := m.Step(EvRegistered{Path: sockA, Gen: 1}, now); cmds != nil {
		t.Errorf("a registration outcome during GetInfo: %#v", cmds)
	}
}
