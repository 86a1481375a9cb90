package devicemanager

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/deviceplugin/checkpoint"
	"github.com/actorlet/actorlet/messages"
)

const gpu = "example.com/gpu"

func devs(ids ...string) []*api.Device {
	var out []*api.Device
	for _, id := range ids {
		health := api.Healthy
		if strings.HasSuffix(id, "!") {
			id, health = strings.TrimSuffix(id, "!"), api.Unhealthy
		}
		out = append(out, &api.Device{ID: id, Health: health})
	}
	return out
}

func ctr(name string, n int64) v1.Container {
	c := v1.Container{Name: name}
	if n > 0 {
		c.Resources.Limits = v1.ResourceList{gpu: *resource.NewQuantity(n, resource.DecimalSI)}
	}
	return c
}

func pod(uid string, init []v1.Container, containers ...v1.Container) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{InitContainers: init, Containers: containers}}
	p.UID, p.Name, p.Namespace = types.UID(uid), uid, "ns"
	return p
}

var always = v1.ContainerRestartPolicyAlways

// allocate runs one request to its end, answering the machine's commands
// as the plugin would (its preference: the highest IDs), and returns the
// devices the container got or the error.
func allocate(t *testing.T, m *Machine, p *v1.Pod, container string, active ...string) ([]string, error) {
	t.Helper()
	cmds := m.Step(EvAllocate{Pod: p, Container: container, ReplyTo: "r"})
	for i := 0; i < 10; i++ {
		var next []Command
		for _, c := range cmds {
			switch c := c.(type) {
			case CmdListPods:
				set := map[types.UID]bool{}
				for _, a := range active {
					set[types.UID(a)] = true
				}
				next = append(next, m.Step(EvActivePods{Active: set})...)
			case CmdPrefer:
				ids := slices.Clone(c.MustInclude)
				for j := len(c.Available) - 1; j >= 0 && len(ids) < c.Size; j-- {
					if !slices.Contains(ids, c.Available[j]) {
						ids = append(ids, c.Available[j])
					}
				}
				next = append(next, m.Step(EvPreferred{ID: c.ID, Resource: c.Resource, IDs: ids})...)
			case CmdAllocate:
				resps := map[string]*api.ContainerAllocateResponse{}
				for res, ids := range c.Allocate {
					resps[res] = &api.ContainerAllocateResponse{Envs: map[string]string{"IDS": strings.Join(ids, ",")}}
				}
				next = append(next, m.Step(EvAllocated{ID: c.ID, Responses: resps})...)
			case CmdReply:
				if c.Reply.Err != nil {
					return nil, c.Reply.Err
				}
				held := m.alloc[p.UID][container][gpu]
				if held == nil {
					return nil, nil
				}
				return held.IDs, nil
			}
		}
		cmds = next
	}
	t.Fatal("no reply")
	return nil, nil
}

func registered(preferred bool, list ...string) *Machine {
	m, _ := NewMachine(nil, nil, nil)
	m.Step(EvConnected{Resource: gpu, Gen: 1, Preferred: preferred})
	m.Step(EvDevices{Resource: gpu, Gen: 1, Devices: devs(list...)})
	return m
}

// TestAllocation: which devices each container gets, as upstream's
// devicesToAllocate, and its errors.
func TestAllocation(t *testing.T) {
	type step struct {
		pod       *v1.Pod
		container string
		active    []string
		want      string // devices, comma-separated, or the error
	}
	a := pod("a", nil, ctr("app", 1))
	two := pod("b", nil, ctr("app", 2))
	initPod := pod("c", []v1.Container{ctr("init", 2)}, ctr("app", 1), ctr("other", 1))
	sidecar := pod("d", []v1.Container{{Name: "side", RestartPolicy: &always, Resources: ctr("s", 1).Resources}}, ctr("app", 1))
	// The scheduler allocated app's gpu through DRA, other's from the plugin.
	byDRA := pod("g", nil, ctr("app", 1), ctr("other", 1))
	byDRA.Status.ExtendedResourceClaimStatus = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "g-extended-resources",
		RequestMappings: []v1.ContainerExtendedResourceRequest{{ContainerName: "app", ResourceName: gpu, RequestName: "container-0-request-0"}}}
	for _, tc := range []struct {
		name      string
		preferred bool
		devices   []string
		steps     []step
	}{
		{"free devices in the order of their IDs", false, []string{"d2", "d1", "d3"},
			[]step{{a, "app", []string{"a"}, "d1"}, {two, "app", []string{"a", "b"}, "d2,d3"}}},
		{"the plugin's preference", true, []string{"d1", "d2", "d3"},
			[]step{{a, "app", []string{"a"}, "d3"}}},
		{"a second start gets the same devices", false, []string{"d1", "d2"},
			[]step{{a, "app", []string{"a"}, "d1"}, {a, "app", []string{"a"}, "d1"}}},
		{"unhealthy devices are not given", false, []string{"d1!", "d2"},
			[]step{{a, "app", []string{"a"}, "d2"}}},
		{"too few: upstream's error", false, []string{"d1", "d2"},
			[]step{{a, "app", []string{"a"}, "d1"}, {two, "app", []string{"a", "b"},
				"requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1"}}},
		{"none healthy", false, []string{"d1!"},
			[]step{{a, "app", []string{"a"}, "no healthy devices present; cannot allocate unhealthy devices example.com/gpu"}}},
		{"a pod gone frees its devices", false, []string{"d1"},
			[]step{{a, "app", []string{"a"}, "d1"}, {pod("e", nil, ctr("app", 1)), "app", []string{"e"}, "d1"}}},
		{"an init container's devices are reused by the app containers", false, []string{"d1", "d2", "d3"},
			[]step{{initPod, "init", []string{"c"}, "d1,d2"}, {initPod, "app", []string{"c"}, "d1"}, {initPod, "other", []string{"c"}, "d2"}}},
		{"a sidecar's devices are its own", false, []string{"d1", "d2"},
			[]step{{sidecar, "side", []string{"d"}, "d1"}, {sidecar, "app", []string{"d"}, "d2"}}},
		{"a container without devices gets none", false, []string{"d1"},
			[]step{{pod("f", nil, ctr("app", 0)), "app", []string{"f"}, ""}}},
		{"a resource backed by DRA is not the plugin's (upstream's isDRAExtendedResource)", false, []string{"d1!"},
			[]step{{byDRA, "app", []string{"g"}, ""}}},
		{"another container's resource backed by DRA does not count", false, []string{"d1"},
			[]step{{byDRA, "app", []string{"g"}, ""}, {byDRA, "other", []string{"g"}, "d1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := registered(tc.preferred, tc.devices...)
			for i, s := range tc.steps {
				ids, err := allocate(t, m, s.pod, s.container, s.active...)
				got := strings.Join(ids, ",")
				if err != nil {
					got = err.Error()
				}
				if got != s.want {
					t.Errorf("step %d (%s/%s): %q, want %q", i, s.pod.Name, s.container, got, s.want)
				}
			}
		})
	}
}

// TestChangedRequest: a container whose request changed since its
// devices were allocated gets upstream's error.
func TestChangedRequest(t *testing.T) {
	m := registered(false, "d1", "d2")
	if _, err := allocate(t, m, pod("a", nil, ctr("app", 1)), "app", "a"); err != nil {
		t.Fatal(err)
	}
	_, err := allocate(t, m, pod("a", nil, ctr("app", 2)), "app", "a")
	if want := `pod "a" container "app" changed request for resource "example.com/gpu" from 1 to 2`; err == nil || err.Error() != want {
		t.Errorf("err %v, want %s", err, want)
	}
}

// TestPluginLife: counts as the Node reports them while a plugin comes,
// goes and comes back, and after its grace.
func TestPluginLife(t *testing.T) {
	m, cmds := NewMachine(nil, nil, nil)
	count := func(cmds []Command) string {
		for _, c := range cmds {
			if p, ok := c.(CmdPublish); ok {
				d := p.Msg.Resources[gpu]
				return fmt.Sprintf("%d/%d", d.Capacity, d.Allocatable)
			}
		}
		return "-"
	}
	steps := []struct {
		ev        Event
		want      string
		wantWatch bool
	}{
		{EvConnected{Resource: gpu, Gen: 1}, "0/0", true},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1", "d2!")}, "2/1", false},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1", "d2!")}, "-", false},
		{EvStreamEnded{Resource: gpu, Gen: 1}, "2/0", false},
		{EvConnected{Resource: gpu, Gen: 2}, "2/1", true},
		{EvGraceOver{Resource: gpu, Gen: 1}, "-", false}, // a stale timer
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1")}, "-", false},
		{EvStreamEnded{Resource: gpu, Gen: 2}, "2/0", false},
		{EvGraceOver{Resource: gpu, Gen: 2}, "0/0", false},
	}
	if len(cmds) != 1 || count(cmds) != "0/0" && count(cmds) != "-" {
		t.Fatalf("start: %v", cmds)
	}
	for i, s := range steps {
		cmds := m.Step(s.ev)
		if got := count(cmds); got != s.want {
			t.Errorf("step %d %T: published %s, want %s", i, s.ev, got, s.want)
		}
		watch := slices.ContainsFunc(cmds, func(c Command) bool { _, ok := c.(CmdWatch); return ok })
		if watch != s.wantWatch {
			t.Errorf("step %d %T: watch %v", i, s.ev, watch)
		}
	}
	if _, ok := m.Counts()[gpu]; !ok {
		t.Error("a removed resource is reported at 0")
	}
}

// TestCheckpointRestore: allocations read back from the checkpoint stay
// with their pods, and the resource has no allocatable device until its
// plugin registers again.
func TestCheckpointRestore(t *testing.T) {
	resp := &api.ContainerAllocateResponse{Envs: map[string]string{"A": "1"}}
	entries := []checkpoint.PodDevicesEntry{{PodUID: "a", ContainerName: "app", ResourceName: gpu,
		DeviceIDs: checkpoint.DevicesPerNUMA{checkpoint.NoTopology: {"d2"}}}}
	m, cmds := NewMachine(entries, map[int]*api.ContainerAllocateResponse{0: resp}, map[string][]string{gpu: {"d1", "d2"}})
	if !reflect.DeepEqual(cmds[0], CmdGraceTimer{Resource: gpu}) {
		t.Errorf("commands %v", cmds)
	}
	if c := m.Counts()[gpu]; c != (messages.DeviceCount{}) {
		t.Errorf("before the plugin: %v", c)
	}
	m.Step(EvConnected{Resource: gpu, Gen: 1})
	cmds = m.Step(EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1", "d2")})
	var cp CmdCheckpoint
	for _, c := range cmds {
		if c, ok := c.(CmdCheckpoint); ok {
			cp = c
		}
	}
	if len(cp.Entries) != 1 || cp.Entries[0].PodUID != "a" || !reflect.DeepEqual(cp.Registered[gpu], []string{"d1", "d2"}) {
		t.Errorf("checkpoint %+v", cp)
	}
	// The running pod's device stays its own: another gets d1.
	if ids, err := allocate(t, m, pod("b", nil, ctr("app", 1)), "app", "a", "b"); err != nil || strings.Join(ids, ",") != "d1" {
		t.Errorf("b got %v %v", ids, err)
	}
	// The pod's container, started again, gets the saved answer.
	m.Step(EvAllocate{Pod: pod("a", nil, ctr("app", 1)), Container: "app", ReplyTo: "r"})
	cmds = m.Step(EvActivePods{Active: map[types.UID]bool{"a": true, "b": true}})
	if len(cmds) != 1 || cmds[0].(CmdReply).Reply.Responses[0] != resp {
		t.Errorf("restart of a's container: %v", cmds)
	}
	// Unknown active pods (sources not ready) free nothing.
	m.Step(EvActivePods{})
	if m.alloc["a"] == nil {
		t.Error("a's devices freed without a list of pods")
	}
}

// TestAllocateFailure: a plugin's failing Allocate keeps no devices.
func TestAllocateFailure(t *testing.T) {
	m := registered(false, "d1")
	m.Step(EvAllocate{Pod: pod("a", nil, ctr("app", 1)), Container: "app", ReplyTo: "r"})
	cmds := m.Step(EvActivePods{Active: map[types.UID]bool{"a": true}})
	alloc := cmds[0].(CmdAllocate)
	cmds = m.Step(EvAllocated{ID: alloc.ID, Err: errors.New("boom")})
	if r := cmds[0].(CmdReply); r.Reply.Err == nil || m.alloc["a"] != nil {
		t.Errorf("reply %v, alloc %v", r.Reply, m.alloc)
	}
}

// TestResourceHealth: each container's allocatedResourcesStatus follows
// the health its plugin lists, as upstream's device manager's
// UpdateAllocatedResourcesStatus; a plugin gone leaves it as it was.
func TestResourceHealth(t *testing.T) {
	m := registered(false, "d1", "d2", "d3")
	p := pod("p", nil, ctr("a", 2), ctr("b", 0))
	if _, err := allocate(t, m, p, "a", "p"); err != nil {
		t.Fatal(err)
	}
	status := func(h1, h2 v1.ResourceHealthStatus) map[string][]v1.ResourceStatus {
		return map[string][]v1.ResourceStatus{"a": {{Name: gpu, Resources: []v1.ResourceHealth{
			{ResourceID: "d1", Health: h1}, {ResourceID: "d2", Health: h2}}}}}
	}
	healthy, unhealthy := v1.ResourceHealthStatusHealthy, v1.ResourceHealthStatusUnhealthy
	for _, tc := range []struct {
		ev   Event
		want map[string][]v1.ResourceStatus
	}{
		{nil, status(healthy, healthy)},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1", "d2!", "d3")}, status(healthy, unhealthy)},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1!", "d2", "d3")}, status(unhealthy, healthy)},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d2", "d3")}, status(healthy, healthy)},
		{EvDevices{Resource: gpu, Gen: 1, Devices: devs("d1", "d2!", "d3")}, status(healthy, unhealthy)},
		{EvStreamEnded{Resource: gpu, Gen: 1}, status(healthy, unhealthy)},
	} {
		if tc.ev != nil {
			m.Step(tc.ev)
		}
		if got := m.ResourceHealth(p.UID); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("after %+v: %+v, want %+v", tc.ev, got, tc.want)
		}
	}
	if got := m.ResourceHealth("other"); len(got) != 0 {
		t.Errorf("a pod without devices: %+v", got)
	}
}
