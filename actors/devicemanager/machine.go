package devicemanager

import (
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/deviceplugin/checkpoint"
	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/messages"
)

// StopGrace is upstream's endpointStopGracePeriod: a plugin gone keeps its
// resource (at no allocatable devices) this long, for it to come back,
// before the resource is removed from the node.
const StopGrace = 5 * time.Minute

// Machine is the device-manager's state: the plugins' resources and their
// devices, each container's devices, and the allocation in flight. It
// does no I/O; the actor carries out its commands.
type Machine struct {
	resources map[string]*pluginResource
	// alloc are the devices of each pod's containers, by resource.
	alloc map[types.UID]map[string]map[string]*Allocation
	// inflight is the allocation being decided or made; queue the
	// requests after it (one at a time, so that no two take a device).
	inflight *request
	queue    []*request
	nextID   int
	// published is the last DevicesChanged sent (nil: none yet).
	published        map[v1.ResourceName]messages.DeviceCount
	publishedHolders map[v1.ResourceName][]types.UID
	// removed are resources gone since the last DevicesChanged, which it
	// reports at 0 once, as upstream's capacity of deleted resources.
	removed map[string]bool
}

type pluginResource struct {
	// gen is the registration the devices come from; 0: none since the
	// start (a resource of the checkpoint).
	gen       int
	devices   map[string]*api.Device
	preStart  bool
	preferred bool
	// stopped: the plugin is gone (or not back since the start); its
	// devices are unhealthy until it registers again or StopGrace ends.
	stopped bool
}

// Allocation is one container's devices of one resource and the plugin's
// answer for them.
type Allocation struct {
	IDs  []string
	Resp *api.ContainerAllocateResponse
}

type request struct {
	id        int
	pod       *v1.Pod
	container string
	replyTo   any
	// listed: the active pods were read since the request started, so
	// that the devices of pods gone are free.
	listed bool
	// picks are the devices decided so far for each resource; pending
	// the resource whose plugin's preference is awaited.
	picks   map[string][]string
	pending string
}

// Events.
type (
	// EvConnected: a plugin registered (its gen-th registration).
	EvConnected struct {
		Resource            string
		Gen                 int
		PreStart, Preferred bool
	}
	// EvDevices: a plugin's ListAndWatch sent its devices.
	EvDevices struct {
		Resource string
		Gen      int
		Devices  []*api.Device
	}
	// EvStreamEnded: a plugin's ListAndWatch ended (the plugin gone).
	EvStreamEnded struct {
		Resource string
		Gen      int
	}
	// EvGraceOver: StopGrace passed since the plugin went.
	EvGraceOver struct {
		Resource string
		Gen      int
	}
	// EvAllocate: a container about to be created asks for its devices.
	EvAllocate struct {
		Pod       *v1.Pod
		Container string
		ReplyTo   any
	}
	// EvActivePods: the pods the node runs (nil Active: unknown yet).
	EvActivePods struct {
		Active map[types.UID]bool
	}
	// EvPreferred: a plugin's preferred devices for the allocation in flight.
	EvPreferred struct {
		ID       int
		Resource string
		IDs      []string
		Err      error
	}
	// EvAllocated: the plugins' answers for the allocation in flight.
	EvAllocated struct {
		ID        int
		Responses map[string]*api.ContainerAllocateResponse
		Err       error
	}
)

// Event is what Step takes.
type Event interface{ isEvent() }

func (EvConnected) isEvent()   {}
func (EvDevices) isEvent()     {}
func (EvStreamEnded) isEvent() {}
func (EvGraceOver) isEvent()   {}
func (EvAllocate) isEvent()    {}
func (EvActivePods) isEvent()  {}
func (EvPreferred) isEvent()   {}
func (EvAllocated) isEvent()   {}

// Commands.
type (
	// CmdWatch: run the ListAndWatch stream of the gen-th registration;
	// CmdClose: close an endpoint replaced by a newer registration.
	CmdWatch struct {
		Resource string
		Gen      int
	}
	CmdClose struct {
		Resource string
		Gen      int
	}
	// CmdGraceTimer: EvGraceOver after StopGrace.
	CmdGraceTimer struct {
		Resource string
		Gen      int
	}
	// CmdListPods: read the active pods (EvActivePods).
	CmdListPods struct{}
	// CmdPrefer: ask the plugin's preference (EvPreferred).
	CmdPrefer struct {
		ID                     int
		Resource               string
		Gen                    int
		Available, MustInclude []string
		Size                   int
	}
	// CmdAllocate: Allocate each resource's new devices, then
	// PreStartContainer with PreStart's devices (EvAllocated).
	CmdAllocate struct {
		ID       int
		Allocate map[string][]string
		PreStart map[string][]string
		Gens     map[string]int
	}
	// CmdReply: answer the container's request.
	CmdReply struct {
		To    any
		Reply *messages.ContainerDevices
	}
	// CmdCheckpoint: write the checkpoint.
	CmdCheckpoint struct {
		Entries    []checkpoint.PodDevicesEntry
		Registered map[string][]string
	}
	// CmdPublish: send DevicesChanged.
	CmdPublish struct{ Msg *messages.DevicesChanged }
)

// Command is what Step returns.
type Command interface{ isCommand() }

func (CmdWatch) isCommand()      {}
func (CmdClose) isCommand()      {}
func (CmdGraceTimer) isCommand() {}
func (CmdListPods) isCommand()   {}
func (CmdPrefer) isCommand()     {}
func (CmdAllocate) isCommand()   {}
func (CmdReply) isCommand()      {}
func (CmdCheckpoint) isCommand() {}
func (CmdPublish) isCommand()    {}

// NewMachine starts from the checkpoint: its allocations kept, its
// resources known but stopped (no allocatable device) until their
// plugins register again, as upstream's readCheckpoint. The commands are
// the grace timers of those resources and the first DevicesChanged.
func NewMachine(entries []checkpoint.PodDevicesEntry, resps map[int]*api.ContainerAllocateResponse, registered map[string][]string) (*Machine, []Command) {
	m := &Machine{resources: map[string]*pluginResource{}, alloc: map[types.UID]map[string]map[string]*Allocation{}, removed: map[string]bool{}}
	var cmds []Command
	for _, name := range slices.Sorted(maps.Keys(registered)) {
		m.resources[name] = &pluginResource{devices: map[string]*api.Device{}, stopped: true}
		cmds = append(cmds, CmdGraceTimer{Resource: name})
	}
	for i, e := range entries {
		ids := slices.Sorted(maps.Keys(setOf(e.DeviceIDs)))
		m.set(types.UID(e.PodUID), e.ContainerName, e.ResourceName, &Allocation{IDs: ids, Resp: resps[i]})
	}
	return m, append(cmds, m.publish()...)
}

func setOf(d checkpoint.DevicesPerNUMA) map[string]bool {
	out := map[string]bool{}
	for _, ids := range d {
		for _, id := range ids {
			out[id] = true
		}
	}
	return out
}

func (m *Machine) set(pod types.UID, container, res string, a *Allocation) {
	if m.alloc[pod] == nil {
		m.alloc[pod] = map[string]map[string]*Allocation{}
	}
	if m.alloc[pod][container] == nil {
		m.alloc[pod][container] = map[string]*Allocation{}
	}
	m.alloc[pod][container][res] = a
}

// Step applies one event.
func (m *Machine) Step(ev Event) []Command {
	switch e := ev.(type) {
	case EvConnected:
		return m.onConnected(e)
	case EvDevices:
		return m.onDevices(e)
	case EvStreamEnded:
		return m.onStreamEnded(e)
	case EvGraceOver:
		return m.onGraceOver(e)
	case EvAllocate:
		m.nextID++
		m.queue = append(m.queue, &request{id: m.nextID, pod: e.Pod, container: e.Container, replyTo: e.ReplyTo, picks: map[string][]string{}})
		return m.next()
	case EvActivePods:
		return m.onActivePods(e)
	case EvPreferred:
		return m.onPreferred(e)
	case EvAllocated:
		return m.onAllocated(e)
	default:
		panic(fmt.Sprintf("devicemanager: unknown event %T", ev))
	}
}

func (m *Machine) onConnected(e EvConnected) []Command {
	var cmds []Command
	r := m.resources[e.Resource]
	if r == nil {
		r = &pluginResource{devices: map[string]*api.Device{}}
		m.resources[e.Resource] = r
		delete(m.removed, e.Resource)
	} else if r.gen != 0 && !r.stopped {
		cmds = append(cmds, CmdClose{Resource: e.Resource, Gen: r.gen})
	}
	r.gen, r.stopped, r.preStart, r.preferred = e.Gen, false, e.PreStart, e.Preferred
	cmds = append(cmds, CmdWatch{Resource: e.Resource, Gen: e.Gen})
	return append(cmds, m.publish()...)
}

func (m *Machine) current(res string, gen int) *pluginResource {
	r := m.resources[res]
	if r == nil || r.gen != gen {
		return nil
	}
	return r
}

func (m *Machine) onDevices(e EvDevices) []Command {
	r := m.current(e.Resource, e.Gen)
	if r == nil {
		return nil
	}
	r.devices = map[string]*api.Device{}
	for _, d := range e.Devices {
		r.devices[d.ID] = d
	}
	return append(m.publish(), m.checkpoint())
}

func (m *Machine) onStreamEnded(e EvStreamEnded) []Command {
	r := m.current(e.Resource, e.Gen)
	if r == nil || r.stopped {
		return nil
	}
	r.stopped = true
	return append([]Command{CmdClose(e), CmdGraceTimer(e)}, m.publish()...)
}

func (m *Machine) onGraceOver(e EvGraceOver) []Command {
	r := m.current(e.Resource, e.Gen)
	if r == nil || !r.stopped {
		return nil
	}
	delete(m.resources, e.Resource)
	m.removed[e.Resource] = true
	return append(m.publish(), m.checkpoint())
}

func (m *Machine) onActivePods(e EvActivePods) []Command {
	var cmds []Command
	if e.Active != nil {
		freed := false
		for uid := range m.alloc {
			if !e.Active[uid] && !m.requested(uid) {
				delete(m.alloc, uid)
				freed = true
			}
		}
		if freed {
			cmds = append(cmds, m.checkpoint())
		}
	}
	if q := m.inflight; q != nil && !q.listed {
		q.listed = true
		return append(cmds, m.decide()...)
	}
	return cmds
}

// requested: a request of the pod is queued or in flight, its pod not
// yet in the list read before.
func (m *Machine) requested(uid types.UID) bool {
	if m.inflight != nil && m.inflight.pod.UID == uid {
		return true
	}
	return slices.ContainsFunc(m.queue, func(q *request) bool { return q.pod.UID == uid })
}

// next starts the next request when none is in flight: the active pods
// are read first.
func (m *Machine) next() []Command {
	if m.inflight != nil || len(m.queue) == 0 {
		return nil
	}
	m.inflight, m.queue = m.queue[0], m.queue[1:]
	return []Command{CmdListPods{}}
}

// finish answers the request in flight and starts the next.
func (m *Machine) finish(reply *messages.ContainerDevices) []Command {
	cmds := []Command{CmdReply{To: m.inflight.replyTo, Reply: reply}}
	m.inflight = nil
	return append(cmds, m.next()...)
}

// DeviceRequests are the device plugin resources container asks for,
// with how many devices: its limits (an extended resource's request
// equals its limit), as upstream; not those the scheduler allocated
// through DRA (the dra-manager prepares their claim).
func (m *Machine) deviceRequests(pod *v1.Pod, c *v1.Container) map[string]int {
	out := map[string]int{}
	for name, q := range c.Resources.Limits {
		res := string(name)
		if dra.BackedByDRA(pod, c.Name, name) {
			continue
		}
		if _, known := m.resources[res]; known || m.alloc[pod.UID][c.Name][res] != nil {
			out[res] = int(q.Value())
		}
	}
	return out
}

// decide goes on with the request in flight: each resource's devices,
// in the order of their names, as upstream's devicesToAllocate.
func (m *Machine) decide() []Command {
	q := m.inflight
	c := findContainer(q.pod, q.container)
	if c == nil {
		return m.finish(&messages.ContainerDevices{})
	}
	want := m.deviceRequests(q.pod, c)
	for _, res := range slices.Sorted(maps.Keys(want)) {
		if _, done := q.picks[res]; done {
			continue
		}
		ids, cmd, err := m.pick(q, c, res, want[res])
		if err != nil {
			return m.finish(&messages.ContainerDevices{Err: err})
		}
		if cmd != nil {
			q.pending = res
			return []Command{*cmd}
		}
		q.picks[res] = ids
	}
	return m.allocate(c, want)
}

// pick decides the devices of one resource: those the container has
// already, else the reusable ones of the pod's init containers first,
// then the plugin's preference (a command to ask it; upstream asks even
// when the free devices are just enough) or the free devices in the order
// of their IDs.
func (m *Machine) pick(q *request, c *v1.Container, res string, required int) ([]string, *CmdPrefer, error) {
	if have := m.alloc[q.pod.UID][c.Name][res]; have != nil {
		if len(have.IDs) != required {
			return nil, nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", q.pod.UID, c.Name, res, len(have.IDs), required)
		}
		return have.IDs, nil, nil
	}
	r := m.resources[res]
	if r == nil {
		return nil, nil, fmt.Errorf("cannot allocate unregistered device %s", res)
	}
	healthy := r.healthy()
	if len(healthy) == 0 {
		return nil, nil, fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", res)
	}
	var picked []string
	for _, id := range m.reusable(q.pod, c.Name, res) {
		if len(picked) < required {
			picked = append(picked, id)
		}
	}
	needed := required - len(picked)
	if needed == 0 {
		return picked, nil, nil
	}
	inUse := m.inUse(res)
	var available []string
	for _, id := range healthy {
		if !inUse[id] {
			available = append(available, id)
		}
	}
	if len(available) < needed {
		return nil, nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", res, needed, len(available))
	}
	if r.preferred {
		return nil, &CmdPrefer{ID: q.id, Resource: res, Gen: r.gen, Available: slices.Sorted(slices.Values(append(slices.Clone(available), picked...))),
			MustInclude: picked, Size: required}, nil
	}
	return append(picked, available[:needed]...), nil, nil
}

func (m *Machine) onPreferred(e EvPreferred) []Command {
	q := m.inflight
	if q == nil || q.id != e.ID || q.pending != e.Resource {
		return nil
	}
	q.pending = ""
	if e.Err != nil {
		return m.finish(&messages.ContainerDevices{Err: e.Err})
	}
	c := findContainer(q.pod, q.container)
	required := m.deviceRequests(q.pod, c)[e.Resource]
	// As upstream: the reusable devices, then the preferred ones that are
	// free, then any free one.
	picked := []string{}
	for _, id := range m.reusable(q.pod, c.Name, e.Resource) {
		if len(picked) < required {
			picked = append(picked, id)
		}
	}
	inUse := m.inUse(e.Resource)
	free := func(id string) bool {
		d := m.resources[e.Resource].devices[id]
		return d != nil && d.Health == api.Healthy && !inUse[id] && !slices.Contains(picked, id)
	}
	for _, id := range e.IDs {
		if len(picked) < required && free(id) {
			picked = append(picked, id)
		}
	}
	for _, id := range m.resources[e.Resource].healthy() {
		if len(picked) < required && free(id) {
			picked = append(picked, id)
		}
	}
	if len(picked) < required {
		return m.finish(&messages.ContainerDevices{Err: fmt.Errorf("unexpectedly allocated less resources than required. Requested: %d, Got: %d", required, len(picked))})
	}
	q.picks[e.Resource] = picked
	return m.decide()
}

// allocate asks the plugins for what they did not answer before, and for
// PreStartContainer where they require it.
func (m *Machine) allocate(c *v1.Container, want map[string]int) []Command {
	q := m.inflight
	cmd := CmdAllocate{ID: q.id, Allocate: map[string][]string{}, PreStart: map[string][]string{}, Gens: map[string]int{}}
	for res := range want {
		r := m.resources[res]
		if m.alloc[q.pod.UID][c.Name][res] == nil {
			if r == nil || r.stopped {
				return m.finish(&messages.ContainerDevices{Err: fmt.Errorf("cannot allocate unregistered device %s", res)})
			}
			cmd.Allocate[res] = q.picks[res]
			cmd.Gens[res] = r.gen
		}
		if r != nil && r.preStart && !r.stopped {
			cmd.PreStart[res] = q.picks[res]
			cmd.Gens[res] = r.gen
		}
	}
	if len(cmd.Allocate) == 0 && len(cmd.PreStart) == 0 {
		return m.onAllocated(EvAllocated{ID: q.id})
	}
	return []Command{cmd}
}

func (m *Machine) onAllocated(e EvAllocated) []Command {
	q := m.inflight
	if q == nil || q.id != e.ID {
		return nil
	}
	var cmds []Command
	for res, resp := range e.Responses {
		m.set(q.pod.UID, q.container, res, &Allocation{IDs: q.picks[res], Resp: resp})
	}
	if len(e.Responses) > 0 {
		cmds = append(cmds, m.checkpoint())
	}
	if e.Err != nil {
		return append(cmds, m.finish(&messages.ContainerDevices{Err: e.Err})...)
	}
	reply := &messages.ContainerDevices{}
	held := m.alloc[q.pod.UID][q.container]
	for _, res := range slices.Sorted(maps.Keys(held)) {
		if held[res].Resp != nil {
			reply.Responses = append(reply.Responses, held[res].Resp)
		}
	}
	return append(cmds, m.finish(reply)...)
}

// reusable are the devices of res the pod's containers before container
// hold and leave to it, as upstream's devicesToReuse: an init
// container's, once it ran, are for the containers after it; a sidecar's
// or an app container's are their own.
func (m *Machine) reusable(pod *v1.Pod, container, res string) []string {
	reuse := map[string]bool{}
	held := func(name string) []string {
		if a := m.alloc[pod.UID][name][res]; a != nil {
			return a.IDs
		}
		return nil
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == container {
			return sortedSet(reuse)
		}
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
		for _, id := range held(c.Name) {
			if sidecar {
				delete(reuse, id)
			} else {
				reuse[id] = true
			}
		}
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == container {
			break
		}
		for _, id := range held(c.Name) {
			delete(reuse, id)
		}
	}
	return sortedSet(reuse)
}

func sortedSet(s map[string]bool) []string { return slices.Sorted(maps.Keys(s)) }

// inUse are the devices of res allocated to any container.
func (m *Machine) inUse(res string) map[string]bool {
	out := map[string]bool{}
	for _, containers := range m.alloc {
		for _, byRes := range containers {
			if a := byRes[res]; a != nil {
				for _, id := range a.IDs {
					out[id] = true
				}
			}
		}
	}
	return out
}

// healthy are the resource's healthy devices by ID; none while its
// plugin is stopped.
func (r *pluginResource) healthy() []string {
	if r.stopped {
		return nil
	}
	var out []string
	for id, d := range r.devices {
		if d.Health == api.Healthy {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

func findContainer(pod *v1.Pod, name string) *v1.Container {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// Counts are every resource's devices as the Node reports them: all in
// capacity, the healthy ones in allocatable; a resource removed at 0.
func (m *Machine) Counts() map[v1.ResourceName]messages.DeviceCount {
	out := map[v1.ResourceName]messages.DeviceCount{}
	for name, r := range m.resources {
		out[v1.ResourceName(name)] = messages.DeviceCount{Capacity: int64(len(r.devices)), Allocatable: int64(len(r.healthy()))}
	}
	for name := range m.removed {
		out[v1.ResourceName(name)] = messages.DeviceCount{}
	}
	return out
}

// Holders are the pods that hold devices of each resource, each sorted.
func (m *Machine) Holders() map[v1.ResourceName][]types.UID {
	out := map[v1.ResourceName][]types.UID{}
	for _, uid := range slices.Sorted(maps.Keys(m.alloc)) {
		held := map[string]bool{}
		for _, byResource := range m.alloc[uid] {
			for name := range byResource {
				held[name] = true
			}
		}
		for _, name := range slices.Sorted(maps.Keys(held)) {
			out[v1.ResourceName(name)] = append(out[v1.ResourceName(name)], uid)
		}
	}
	return out
}

func (m *Machine) publish() []Command {
	c, h := m.Counts(), m.Holders()
	if m.published != nil && maps.Equal(c, m.published) && maps.EqualFunc(h, m.publishedHolders, slices.Equal) {
		return nil
	}
	m.published, m.publishedHolders = c, h
	return []Command{CmdPublish{Msg: &messages.DevicesChanged{Resources: maps.Clone(c), Holders: maps.Clone(h)}}}
}

// checkpoint is the checkpoint of the allocations and the registered
// devices, in a stable order.
func (m *Machine) checkpoint() Command {
	cmd := CmdCheckpoint{Entries: []checkpoint.PodDevicesEntry{}, Registered: map[string][]string{}}
	for _, uid := range slices.Sorted(maps.Keys(m.alloc)) {
		for _, c := range slices.Sorted(maps.Keys(m.alloc[uid])) {
			for _, res := range slices.Sorted(maps.Keys(m.alloc[uid][c])) {
				a := m.alloc[uid][c][res]
				cmd.Entries = append(cmd.Entries, checkpoint.PodDevicesEntry{PodUID: string(uid), ContainerName: c, ResourceName: res,
					DeviceIDs: m.perNUMA(res, a.IDs)})
				if a.Resp != nil {
					cmd.Entries[len(cmd.Entries)-1].AllocResp = marshal(a.Resp)
				}
			}
		}
	}
	for name, r := range m.resources {
		cmd.Registered[name] = slices.Sorted(maps.Keys(r.devices))
	}
	return cmd
}

// perNUMA groups ids by their devices' NUMA nodes, as upstream records
// them.
func (m *Machine) perNUMA(res string, ids []string) checkpoint.DevicesPerNUMA {
	out := checkpoint.DevicesPerNUMA{}
	for _, id := range ids {
		for _, n := range m.numa(res, id) {
			out[n] = append(out[n], id)
		}
	}
	return out
}

func (m *Machine) numa(res, id string) []int64 {
	r := m.resources[res]
	if r == nil || r.devices[id] == nil || r.devices[id].Topology == nil || len(r.devices[id].Topology.Nodes) == 0 {
		return []int64{checkpoint.NoTopology}
	}
	var out []int64
	for _, n := range r.devices[id].Topology.Nodes {
		out = append(out, n.ID)
	}
	return out
}

// Allocations is what the podresources API reports: each container's
// devices, and the healthy devices of each resource.
func (m *Machine) Allocations() *messages.DeviceAllocations {
	out := &messages.DeviceAllocations{Pods: map[types.UID]map[string][]messages.DeviceIDs{}}
	ids := func(res string, list []string) messages.DeviceIDs {
		d := messages.DeviceIDs{Resource: res, IDs: slices.Clone(list), NUMA: map[string][]int64{}}
		for _, id := range list {
			if n := m.numa(res, id); n[0] != checkpoint.NoTopology {
				d.NUMA[id] = n
			}
		}
		return d
	}
	for uid, containers := range m.alloc {
		out.Pods[uid] = map[string][]messages.DeviceIDs{}
		for c, byRes := range containers {
			for _, res := range slices.Sorted(maps.Keys(byRes)) {
				out.Pods[uid][c] = append(out.Pods[uid][c], ids(res, byRes[res].IDs))
			}
		}
	}
	for _, res := range slices.Sorted(maps.Keys(m.resources)) {
		if h := m.resources[res].healthy(); len(h) > 0 {
			out.Allocatable = append(out.Allocatable, ids(res, h))
		}
	}
	return out
}

// Pods are the pods holding devices.
func (m *Machine) Pods() []types.UID { return slices.Collect(maps.Keys(m.alloc)) }

// ResourceHealth is each of the pod's containers' allocatedResourcesStatus,
// as upstream's device manager makes it: one entry per resource, each
// device by ID, Unhealthy when its plugin last listed it so, else Healthy
// (a device its plugin no longer lists, or whose plugin went, keeps what
// it was last listed as).
func (m *Machine) ResourceHealth(uid types.UID) map[string][]v1.ResourceStatus {
	out := map[string][]v1.ResourceStatus{}
	for container, byRes := range m.alloc[uid] {
		var statuses []v1.ResourceStatus
		for _, res := range slices.Sorted(maps.Keys(byRes)) {
			a := byRes[res]
			if a == nil || len(a.IDs) == 0 {
				continue
			}
			rs := v1.ResourceStatus{Name: v1.ResourceName(res)}
			for _, id := range slices.Sorted(slices.Values(a.IDs)) {
				h := v1.ResourceHealthStatusHealthy
				if r := m.resources[res]; r != nil && r.devices[id] != nil && r.devices[id].Health != api.Healthy {
					h = v1.ResourceHealthStatusUnhealthy
				}
				rs.Resources = append(rs.Resources, v1.ResourceHealth{ResourceID: v1.ResourceID(id), Health: h})
			}
			statuses = append(statuses, rs)
		}
		if len(statuses) > 0 {
			out[container] = statuses
		}
	}
	return out
}
