package memorymanager

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/nodecapacity"
	"github.com/actorlet/actorlet/internal/topologymanager"
)

// Policies, as memoryManagerPolicy names them.
const (
	PolicyNone   = "None"
	PolicyStatic = "Static"
)

// Reservation is one reservedMemory entry: the memory of each type kept
// for the system on a NUMA node.
type Reservation struct {
	NUMANode int
	Limits   v1.ResourceList
}

// Config is the memory manager's configuration.
type Config struct {
	Policy   string
	Reserved []Reservation
	// NodeReservation is upstream's GetNodeAllocatableReservation: the
	// kubeReserved, systemReserved and hard eviction memory (and huge
	// pages) the reservations must add up to.
	NodeReservation v1.ResourceList
}

// systemReserved is the reserved bytes per NUMA node and resource.
type systemReserved map[int]map[v1.ResourceName]uint64

// Manager is the memory manager's state and decisions, with no I/O: the
// pod-manager owns it, and writes its State to the state file after each
// change. The None policy assigns nothing.
type Manager struct {
	policy   string
	nodes    []Node
	reserved systemReserved
	state    State
	// reusable is the memory of the pod being admitted's init containers
	// that its app containers may take again, by NUMA mask and resource
	// (upstream's initContainersReusableMemory).
	reusable map[string]map[topologymanager.Mask]map[v1.ResourceName]uint64
	// pinning counts the allocations that required pinning and those
	// that failed, for the pod-manager's metrics.
	pinning topologymanager.Pinning
}

// New makes the memory manager of the machine's NUMA nodes, as upstream's
// NewManager, refusing a configuration with upstream's errors.
func New(nodes []Node, cfg Config) (*Manager, error) {
	m := &Manager{policy: cfg.Policy, nodes: nodes, reusable: map[string]map[topologymanager.Mask]map[v1.ResourceName]uint64{},
		state: State{Policy: cfg.Policy, Machine: NUMANodeMap{}, Entries: ContainerMemoryAssignments{}}}
	switch cfg.Policy {
	case PolicyNone:
		return m, nil
	case PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown policy: %q", cfg.Policy)
	}
	if err := validateReserved(nodes, cfg.NodeReservation, cfg.Reserved); err != nil {
		return nil, err
	}
	reserved := systemReserved{}
	for _, n := range nodes {
		reserved[n.ID] = map[v1.ResourceName]uint64{}
	}
	var total uint64
	for _, r := range cfg.Reserved {
		for name, q := range r.Limits {
			v, ok := q.AsInt64()
			if !ok {
				return nil, fmt.Errorf("could not covert a variable of type Quantity to int64")
			}
			reserved[r.NUMANode][name] = uint64(v)
			if name == v1.ResourceMemory {
				total += uint64(v)
			}
		}
	}
	if total == 0 {
		return nil, fmt.Errorf("[memorymanager] you should specify the system reserved memory")
	}
	m.reserved = reserved
	return m, nil
}

// validateReserved is upstream's validateReservedMemory: every reserved
// NUMA node exists, and the reservations of each memory type add up to
// what node allocatable reserves of it.
func validateReserved(nodes []Node, nodeReservation v1.ResourceList, reserved []Reservation) error {
	exists := map[int]bool{}
	for _, n := range nodes {
		exists[n.ID] = true
	}
	totals := map[v1.ResourceName]resource.Quantity{}
	for _, r := range reserved {
		if !exists[r.NUMANode] {
			return fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NUMANode)
		}
		for name, q := range r.Limits {
			t := totals[name]
			t.Add(q)
			totals[name] = t
		}
	}
	types := map[v1.ResourceName]bool{}
	for name := range totals {
		types[name] = true
	}
	for name := range nodeReservation {
		if name == v1.ResourceMemory || strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			types[name] = true
		}
	}
	for _, name := range slices.Sorted(maps.Keys(types)) {
		want := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := nodeReservation[name]; ok {
			want.Add(q)
		}
		got := resource.NewQuantity(0, resource.DecimalSI)
		if q, ok := totals[name]; ok {
			got.Add(q)
		}
		if !want.Equal(*got) {
			return fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", got.String(), name, want.String())
		}
	}
	return nil
}

// Policy is the policy's name.
func (m *Manager) Policy() string { return m.policy }

// Start takes the state read from the state file at path (st nil: none),
// validated as upstream's, and returns the error that must stop the start.
func (m *Manager) Start(st *State, path string) error {
	if st != nil && st.Policy != m.policy {
		return restoreError(fmt.Errorf("[memorymanager] configured policy %q differs from state checkpoint policy %q", m.policy, st.Policy), path)
	}
	if st != nil {
		m.state = st.Clone()
	}
	if m.policy != PolicyStatic {
		return nil
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("start memory manager error: %w", err)
	}
	return nil
}

// validate is upstream's validateState: an empty machine state is the
// default one; any other must be what the assignments make of it.
func (m *Manager) validate() error {
	s := &m.state
	if len(s.Machine) == 0 {
		if len(s.Entries) != 0 {
			return fmt.Errorf("[memorymanager] machine state can not be empty when it has memory assignments")
		}
		s.Machine = m.defaultMachine()
		return nil
	}
	expected := m.defaultMachine()
	for _, pod := range slices.Sorted(maps.Keys(s.Entries)) {
		for _, c := range slices.Sorted(maps.Keys(s.Entries[pod])) {
			for _, b := range s.Entries[pod][c] {
				for _, id := range b.NUMAAffinity {
					ns, ok := expected[id]
					if !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses the NUMA that does not exist", pod, c)
					}
					if _, ok := ns.MemoryMap[b.Type]; !ok {
						return fmt.Errorf("[memorymanager] (pod: %s, container: %s) the memory assignment uses memory resource that does not exist", pod, c)
					}
				}
				reserve(expected, b.NUMAAffinity, b.Type, b.Size)
			}
		}
	}
	if !machinesEqual(s.Machine, expected) {
		return fmt.Errorf("[memorymanager] the expected machine state is different from the real one")
	}
	return nil
}

// machinesEqual is upstream's areMachineStatesEqual: the same nodes,
// assignments and groups, the same sizes, and the same free and reserved
// memory over each node's group.
func machinesEqual(a, b NUMANodeMap) bool {
	if len(a) != len(b) {
		return false
	}
	for id, na := range a {
		nb, ok := b[id]
		if !ok || na == nil || nb == nil {
			return false
		}
		if na.NumberOfAssignments != nb.NumberOfAssignments || !sameGroup(na.Cells, nb.Cells) || len(na.MemoryMap) != len(nb.MemoryMap) {
			return false
		}
		for r, ta := range na.MemoryMap {
			tb, ok := nb.MemoryMap[r]
			if !ok || ta.TotalMemSize != tb.TotalMemSize || ta.SystemReserved != tb.SystemReserved || ta.Allocatable != tb.Allocatable {
				return false
			}
			var fa, ra, fb, rb uint64
			for _, cell := range na.Cells {
				if x, ok := a[cell]; ok && x != nil && x.MemoryMap[r] != nil {
					fa += x.MemoryMap[r].Free
					ra += x.MemoryMap[r].Reserved
				}
				if y, ok := b[cell]; ok && y != nil && y.MemoryMap[r] != nil {
					fb += y.MemoryMap[r].Free
					rb += y.MemoryMap[r].Reserved
				}
			}
			if fa != fb || ra != rb {
				return false
			}
		}
	}
	return true
}

func sameGroup(a, b []int) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// defaultMachine is upstream's getDefaultMachineState: each node's huge
// pages and memory, less what is reserved on it (huge pages come off
// memory too).
func (m *Manager) defaultMachine() NUMANodeMap {
	out := NUMANodeMap{}
	for _, n := range m.nodes {
		ns := &NUMANodeState{MemoryMap: map[v1.ResourceName]*MemoryTable{}, Cells: []int{n.ID}}
		var huge uint64
		for _, hp := range n.HugePages {
			name := nodecapacity.HugePageResourceName(*resource.NewQuantity(int64(hp.PageSizeKB)*1024, resource.BinarySI))
			total := hp.NumPages * hp.PageSizeKB * 1024
			res := m.reserved[n.ID][name]
			ns.MemoryMap[name] = &MemoryTable{TotalMemSize: total, SystemReserved: res, Allocatable: total - res, Free: total - res}
			huge += total
		}
		res := m.reserved[n.ID][v1.ResourceMemory]
		alloc := n.Memory - res - huge
		ns.MemoryMap[v1.ResourceMemory] = &MemoryTable{TotalMemSize: n.Memory, SystemReserved: res, Allocatable: alloc, Free: alloc}
		out[n.ID] = ns
	}
	return out
}

// reserve takes size bytes of a resource over the nodes, each node's free
// memory in turn, and counts the assignment on every node of the group
// (upstream's updateMachineState).
func reserve(ms NUMANodeMap, nodes []int, name v1.ResourceName, size uint64) {
	for _, id := range nodes {
		ns := ms[id]
		ns.NumberOfAssignments++
		ns.Cells = append([]int{}, nodes...)
		if size == 0 {
			continue
		}
		t := ns.MemoryMap[name]
		if t == nil || t.Free == 0 {
			continue
		}
		if t.Free >= size {
			t.Reserved += size
			t.Free -= size
			size = 0
			continue
		}
		size -= t.Free
		t.Reserved += t.Free
		t.Free = 0
	}
}

// release gives back a container's blocks (upstream's releaseMemory).
func release(ms NUMANodeMap, blocks []Block) {
	for _, b := range blocks {
		size := b.Size
		for _, id := range b.NUMAAffinity {
			ns, ok := ms[id]
			if !ok {
				continue
			}
			ns.NumberOfAssignments--
			if ns.NumberOfAssignments == 0 {
				ns.Cells = []int{id}
			}
			if size == 0 {
				continue
			}
			t := ns.MemoryMap[b.Type]
			if t == nil || t.Reserved == 0 {
				continue
			}
			if t.Reserved < size {
				size -= t.Reserved
				t.Free += t.Reserved
				t.Reserved = 0
				continue
			}
			t.Free += size
			t.Reserved -= size
			size = 0
		}
	}
}

// State returns a copy of the state, for the state file and the
// published view.
func (m *Manager) State() State { return m.state.Clone() }

// Pods returns the UIDs of the pods holding memory.
func (m *Manager) Pods() []string { return slices.Sorted(maps.Keys(m.state.Entries)) }

// isHugePages is upstream's IsHugePageResourceName.
func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// pinned reports whether the Static policy pins the pod's memory: a
// Guaranteed pod without pod-level resources (which upstream leaves out
// without the PodLevelResourceManagers gate).
func (m *Manager) pinned(pod *v1.Pod) bool {
	if m.policy != PolicyStatic || cgroups.QOSClass(pod) != v1.PodQOSGuaranteed {
		return false
	}
	return pod.Spec.Resources == nil || (len(pod.Spec.Resources.Requests) == 0 && len(pod.Spec.Resources.Limits) == 0)
}

// containerRequests are a container's memory and huge pages requests in
// bytes (upstream's getContainerRequestedResources).
func containerRequests(c *v1.Container) (map[v1.ResourceName]uint64, error) {
	out := map[v1.ResourceName]uint64{}
	for name, q := range c.Resources.Requests {
		if name != v1.ResourceMemory && !isHugePages(name) {
			continue
		}
		v, ok := q.AsInt64()
		if !ok {
			return nil, fmt.Errorf("[memorymanager] failed to represent quantity as int64")
		}
		out[name] = uint64(v)
	}
	return out, nil
}

// isRestartable reports whether an init container is a sidecar.
func isRestartable(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// podRequests are the pod's memory and huge pages as upstream's
// getPodRequestedResources: its long-running containers' sum, or the
// largest need of an init container (with the sidecars before it).
func podRequests(pod *v1.Pod) (map[v1.ResourceName]uint64, error) {
	initMax := map[v1.ResourceName]uint64{}
	sidecars := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		reqs, err := containerRequests(c)
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			if _, ok := initMax[name]; !ok {
				initMax[name] = 0
			}
			if isRestartable(c) {
				sidecars[name] += q
			} else if sidecars[name]+q > initMax[name] {
				initMax[name] = sidecars[name] + q
			}
		}
	}
	app := map[v1.ResourceName]uint64{}
	for i := range pod.Spec.Containers {
		reqs, err := containerRequests(&pod.Spec.Containers[i])
		if err != nil {
			return nil, err
		}
		for name, q := range reqs {
			app[name] += q
		}
	}
	out := map[v1.ResourceName]uint64{}
	for name := range app {
		out[name] = max(app[name]+sidecars[name], initMax[name])
	}
	return out, nil
}

// ContainerHints are the NUMA placements of a container's memory and
// huge pages (upstream's GetTopologyHints).
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) topologymanager.Hints {
	if !m.pinned(pod) {
		return nil
	}
	reqs, err := containerRequests(c)
	if err != nil || len(reqs) == 0 {
		return nil
	}
	if blocks, ok := m.state.Entries[string(pod.UID)][c.Name]; ok {
		return regenerate(blocks, reqs)
	}
	return m.hints(m.state.Machine, pod, reqs)
}

// PodHints are the placements of all the pod's memory at once (upstream's
// GetPodTopologyHints).
func (m *Manager) PodHints(pod *v1.Pod) topologymanager.Hints {
	if !m.pinned(pod) {
		return nil
	}
	reqs, err := podRequests(pod)
	if err != nil || len(reqs) == 0 {
		return nil
	}
	uid := string(pod.UID)
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if blocks, ok := m.state.Entries[uid][c.Name]; ok {
			return regenerate(blocks, reqs)
		}
	}
	return m.hints(m.state.Machine, pod, reqs)
}

// regenerate is upstream's regenerateHints: a container that has its
// memory (an earlier run's) is placed where it is, if that still matches
// its requests; otherwise no preference.
func regenerate(blocks []Block, reqs map[v1.ResourceName]uint64) topologymanager.Hints {
	if len(blocks) != len(reqs) {
		return nil
	}
	out := topologymanager.Hints{}
	for name := range reqs {
		out[string(name)] = []topologymanager.Hint{}
	}
	for _, b := range blocks {
		want, ok := reqs[b.Type]
		if !ok || b.Size != want {
			return nil
		}
		out[string(b.Type)] = append(out[string(b.Type)], topologymanager.Hint{NUMA: topologymanager.MaskOf(b.NUMAAffinity...), Preferred: true})
	}
	return out
}

// nodeIDs are the machine state's NUMA nodes, sorted.
func nodeIDs(ms NUMANodeMap) []int { return slices.Sorted(maps.Keys(ms)) }

// bitsOf are the nodes of a mask, among ids.
func bitsOf(mask topologymanager.Mask, ids []int) []int {
	var out []int
	for _, id := range ids {
		if mask.Has(id) {
			out = append(out, id)
		}
	}
	return out
}

// hints is upstream's calculateHints: every set of NUMA nodes whose
// allocatable memory of each requested type covers the request, that does
// not mix single- and cross-node allocations, and whose free (and
// reusable) memory covers it; preferred are the narrowest that could hold
// it on an idle node.
func (m *Manager) hints(ms NUMANodeMap, pod *v1.Pod, reqs map[v1.ResourceName]uint64) topologymanager.Hints {
	ids := nodeIDs(ms)
	minSize := len(ids)
	out := topologymanager.Hints{}
	for sel := 1; sel < 1<<len(ids); sel++ {
		var nodes []int
		for i, id := range ids {
			if sel&(1<<i) != 0 {
				nodes = append(nodes, id)
			}
		}
		mask := topologymanager.MaskOf(nodes...)
		free, alloc := map[v1.ResourceName]uint64{}, map[v1.ResourceName]uint64{}
		for _, id := range nodes {
			for name := range reqs {
				if t := ms[id].MemoryMap[name]; t != nil {
					free[name] += t.Free
					alloc[name] += t.Allocatable
				}
			}
		}
		fits := true
		for name, want := range reqs {
			if alloc[name] < want {
				fits = false
			}
		}
		if !fits {
			continue
		}
		minSize = min(minSize, len(nodes))
		if violates(ms, nodes) {
			continue
		}
		for name, want := range reqs {
			if free[name]+m.reusableOf(pod, mask, name) < want {
				fits = false
			}
		}
		if !fits {
			continue
		}
		for name := range reqs {
			out[string(name)] = append(out[string(name)], topologymanager.Hint{NUMA: mask})
		}
	}
	for name := range out {
		for i := range out[name] {
			out[name][i].Preferred = out[name][i].NUMA.Count() == minSize
		}
		slices.SortStableFunc(out[name], func(a, b topologymanager.Hint) int { return int(a.NUMA) - int(b.NUMA) })
	}
	// Nowhere: no resource at all, which the topology manager takes as no
	// preference, as upstream's; Allocate then finds no room.
	return out
}

// violates reports whether an allocation over nodes would break upstream's
// rule that a NUMA node holds either single-node allocations or those of
// one group of nodes (isAffinityViolatingNUMAAllocations, and the same
// filter in calculateHints).
func violates(ms NUMANodeMap, nodes []int) bool {
	if len(nodes) == 1 {
		return len(ms[nodes[0]].Cells) > 1
	}
	for _, id := range nodes {
		ns := ms[id]
		if ns.NumberOfAssignments == 0 {
			continue
		}
		if len(ns.Cells) == 1 || !sameGroup(ns.Cells, nodes) {
			return true
		}
	}
	return false
}

func (m *Manager) reusableOf(pod *v1.Pod, mask topologymanager.Mask, name v1.ResourceName) uint64 {
	return m.reusable[string(pod.UID)][mask][name]
}

// bestHint is upstream's findBestHint: preferred first, then narrowest,
// then the lowest nodes.
func bestHint(hints []topologymanager.Hint) (topologymanager.Hint, bool) {
	if len(hints) == 0 {
		return topologymanager.Hint{}, false
	}
	best := hints[0]
	for _, h := range hints[1:] {
		if h.Preferred && !best.Preferred {
			best = h
			continue
		}
		if h.Preferred == best.Preferred && narrower(h.NUMA, best.NUMA) {
			best = h
		}
	}
	return best, true
}

func narrower(a, b topologymanager.Mask) bool {
	if a.Count() != b.Count() {
		return a.Count() < b.Count()
	}
	return a < b
}

// fitsFree reports whether the nodes' free memory covers the requests
// (upstream's isAffinitySatisfyRequest).
func fitsFree(ms NUMANodeMap, nodes []int, reqs map[v1.ResourceName]uint64) bool {
	for name, want := range reqs {
		var free uint64
		for _, id := range nodes {
			if t := ms[id].MemoryMap[name]; t != nil {
				free += t.Free
			}
		}
		if free < want {
			return false
		}
	}
	return true
}

// Allocate gives a Guaranteed pod's container its memory and huge pages
// on the NUMA nodes of the affinity (the zero Hint: the best placement
// of its own), extended to more nodes when those cannot hold it
// (upstream's static policy's Allocate); a container that has them (an
// earlier run's, from the state file) keeps them.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity topologymanager.Hint) error {
	if !m.pinned(pod) {
		return nil
	}
	reqs, err := containerRequests(c)
	if err != nil {
		return err
	}
	if len(reqs) == 0 {
		return nil
	}
	// Counted as upstream's: every container with memory to pin, one that
	// has it already included.
	m.pinning.Requests++
	err = m.allocate(pod, c, affinity, reqs)
	if err != nil {
		m.pinning.Errors++
	}
	return err
}

// Pinning returns the allocations counted so far.
func (m *Manager) Pinning() topologymanager.Pinning { return m.pinning }

func (m *Manager) allocate(pod *v1.Pod, c *v1.Container, affinity topologymanager.Hint, reqs map[v1.ResourceName]uint64) error {
	uid := string(pod.UID)
	if blocks, ok := m.state.Entries[uid][c.Name]; ok {
		m.updateReusable(pod, c, blocks)
		return nil
	}
	ms := m.state.Machine.Clone()
	ids := nodeIDs(ms)
	best := affinity
	if affinity.NUMA == 0 {
		h, ok := bestHint(m.hints(ms, pod, reqs)[string(v1.ResourceMemory)])
		if !ok {
			return fmt.Errorf("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		if !h.Preferred && best.Preferred {
			return fmt.Errorf("[memorymanager] failed to find the default preferred hint")
		}
		best = h
	}
	if !fitsFree(ms, bitsOf(best.NUMA, ids), reqs) {
		var within []topologymanager.Hint
		for _, h := range m.hints(ms, pod, reqs)[string(v1.ResourceMemory)] {
			if h.NUMA&best.NUMA == best.NUMA {
				within = append(within, h)
			}
		}
		h, ok := bestHint(within)
		if !ok {
			return fmt.Errorf("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		if !h.Preferred && best.Preferred {
			return fmt.Errorf("[memorymanager] failed to find the extended preferred hint")
		}
		best = h
	}
	nodes := bitsOf(best.NUMA, ids)
	if violates(ms, nodes) && len(nodes) > 1 {
		return fmt.Errorf("[memorymanager] preferred hint violates NUMA node allocation")
	}
	var blocks []Block
	for _, name := range slices.Sorted(maps.Keys(reqs)) {
		size := reqs[name]
		blocks = append(blocks, Block{NUMAAffinity: slices.Clone(nodes), Type: name, Size: size})
		if reuse := m.reusableOf(pod, best.NUMA, name); reuse >= size {
			size = 0
		} else {
			size -= reuse
		}
		reserve(ms, nodes, name, size)
	}
	m.updateReusable(pod, c, blocks)
	m.state.Machine = ms
	if m.state.Entries[uid] == nil {
		m.state.Entries[uid] = map[string][]Block{}
	}
	m.state.Entries[uid][c.Name] = blocks
	m.updateInitBlocks(pod, c, blocks)
	return nil
}

// isRegularInit reports whether c is one of the pod's init containers
// that runs to completion (not a sidecar).
func isRegularInit(pod *v1.Pod, c *v1.Container) bool {
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == c.Name {
			return !isRestartable(&pod.Spec.InitContainers[i])
		}
	}
	return false
}

// updateReusable is upstream's updatePodReusableMemory: an init
// container's memory may go to the containers that run after it.
func (m *Manager) updateReusable(pod *v1.Pod, c *v1.Container, blocks []Block) {
	uid := string(pod.UID)
	for other := range m.reusable {
		if other != uid {
			delete(m.reusable, other)
		}
	}
	if isRegularInit(pod, c) {
		if m.reusable[uid] == nil {
			m.reusable[uid] = map[topologymanager.Mask]map[v1.ResourceName]uint64{}
		}
		for _, b := range blocks {
			mask := topologymanager.MaskOf(b.NUMAAffinity...)
			if m.reusable[uid][mask] == nil {
				m.reusable[uid][mask] = map[v1.ResourceName]uint64{}
			}
			if b.Size > m.reusable[uid][mask][b.Type] {
				m.reusable[uid][mask][b.Type] = b.Size
			}
		}
		return
	}
	for _, b := range blocks {
		mask := topologymanager.MaskOf(b.NUMAAffinity...)
		if reuse := m.reusableOf(pod, mask, b.Type); reuse != 0 {
			if b.Size >= reuse {
				m.reusable[uid][mask][b.Type] = 0
			} else {
				m.reusable[uid][mask][b.Type] -= b.Size
			}
		}
	}
}

// updateInitBlocks is upstream's updateInitContainersMemoryBlocks: the
// memory a container reused comes off the blocks of the init containers
// before it, so that the pod's blocks add up to what it holds.
func (m *Manager) updateInitBlocks(pod *v1.Pod, c *v1.Container, blocks []Block) {
	uid := string(pod.UID)
	for _, cb := range blocks {
		size := cb.Size
		for i := range pod.Spec.InitContainers {
			ic := &pod.Spec.InitContainers[i]
			if ic.Name == c.Name || size == 0 {
				break
			}
			if isRestartable(ic) {
				continue
			}
			ibs := m.state.Entries[uid][ic.Name]
			for j := range ibs {
				ib := &ibs[j]
				if ib.Size == 0 || ib.Type != cb.Type || topologymanager.MaskOf(ib.NUMAAffinity...) != topologymanager.MaskOf(cb.NUMAAffinity...) {
					continue
				}
				if ib.Size > size {
					ib.Size -= size
					size = 0
				} else {
					size -= ib.Size
					ib.Size = 0
				}
			}
		}
	}
}

// RemoveContainer gives back one container's memory (upstream's
// RemoveContainer), and reports whether it held any.
func (m *Manager) RemoveContainer(uid, container string) bool {
	blocks, ok := m.state.Entries[uid][container]
	if !ok {
		return false
	}
	delete(m.state.Entries[uid], container)
	if len(m.state.Entries[uid]) == 0 {
		delete(m.state.Entries, uid)
	}
	release(m.state.Machine, blocks)
	return true
}

// RemovePod gives back all of a pod's memory, and reports whether it held
// any.
func (m *Manager) RemovePod(uid string) bool {
	delete(m.reusable, uid)
	cs, ok := m.state.Entries[uid]
	if !ok {
		return false
	}
	for _, c := range slices.Sorted(maps.Keys(cs)) {
		m.RemoveContainer(uid, c)
	}
	return true
}
