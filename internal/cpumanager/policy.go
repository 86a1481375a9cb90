package cpumanager

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/topologymanager"
)

// Policies, as cpuManagerPolicy names them.
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// Policy options, as cpuManagerPolicyOptions names them.
const (
	OptionFullPCPUsOnly = "full-pcpus-only"
)

// upstreamOptions are the options upstream knows; those but
// full-pcpus-only are refused here, as not implemented.
var upstreamOptions = []string{OptionFullPCPUsOnly, "distribute-cpus-across-numa", "align-by-socket",
	"distribute-cpus-across-cores", "strict-cpu-reservation", "prefer-align-cpus-by-uncorecache"}

// Config is the CPU manager's configuration.
type Config struct {
	Policy  string
	Options map[string]string
	// Reserved are reservedSystemCPUs; empty: the first NumReserved CPUs
	// by topology.
	Reserved cpuset.CPUSet
	// ReservedCPU is kubeReserved plus systemReserved cpu (with
	// reservedSystemCPUs, their number).
	ReservedCPU resource.Quantity
}

// SMTAlignmentError is upstream's: with full-pcpus-only, a request that
// is not a multiple of the threads of a core, or more than the free whole
// cores hold.
type SMTAlignmentError struct {
	RequestedCPUs, CPUsPerCore, AvailablePhysicalCPUs int
	CausedByPhysicalCPUs                              bool
}

func (e SMTAlignmentError) Error() string {
	if e.CausedByPhysicalCPUs {
		return fmt.Sprintf("SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", e.AvailablePhysicalCPUs, e.RequestedCPUs, e.CPUsPerCore)
	}
	return fmt.Sprintf("SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", e.RequestedCPUs, e.CPUsPerCore)
}

// Reason is the pod's rejection reason.
func (e SMTAlignmentError) Reason() string { return "SMTAlignmentError" }

// Manager is the CPU manager's state and decisions, with no I/O: the
// pod-manager owns it, and writes its State to the state file after each
// change. The none policy assigns nothing.
type Manager struct {
	policy           string
	topo             *Topology
	reserved         cpuset.CPUSet
	reservedPhysical cpuset.CPUSet
	fullPCPUsOnly    bool
	state            State
	// reuse are the CPUs of the pod being admitted's init containers,
	// which its app containers may take again (upstream's cpusToReuse).
	reuse map[string]cpuset.CPUSet
	// pinning counts the allocations that required pinning and those
	// that failed, for the pod-manager's metrics.
	pinning topologymanager.Pinning
}

// State is what the state file holds: the shared pool and each
// container's exclusive CPUs, by pod UID and container name.
type State struct {
	Policy  string
	Default cpuset.CPUSet
	Entries map[string]map[string]cpuset.CPUSet
}

// Clone returns a deep copy.
func (s State) Clone() State {
	out := State{Policy: s.Policy, Default: s.Default.Clone(), Entries: make(map[string]map[string]cpuset.CPUSet, len(s.Entries))}
	for pod, cs := range s.Entries {
		out.Entries[pod] = maps.Clone(cs)
	}
	return out
}

// New makes the CPU manager of a topology, as upstream's NewManager and
// NewStaticPolicy, refusing a configuration with upstream's errors.
func New(topo *Topology, cfg Config) (*Manager, error) {
	m := &Manager{policy: cfg.Policy, topo: topo, reuse: map[string]cpuset.CPUSet{},
		state: State{Policy: cfg.Policy, Entries: map[string]map[string]cpuset.CPUSet{}}}
	switch cfg.Policy {
	case PolicyNone:
		if len(cfg.Options) > 0 {
			return nil, fmt.Errorf("new none policy error: None policy: received unsupported options=%v", cfg.Options)
		}
		return m, nil
	case PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown policy: %q", cfg.Policy)
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Options)) {
		if !slices.Contains(upstreamOptions, name) {
			return nil, fmt.Errorf("new static policy error: unknown CPU Manager Policy option: %q", name)
		}
		if name != OptionFullPCPUsOnly {
			return nil, fmt.Errorf("new static policy error: CPU Manager Policy option %q is not implemented by actorlet", name)
		}
		switch cfg.Options[name] {
		case "true":
			m.fullPCPUsOnly = true
		case "false":
		default:
			return nil, fmt.Errorf("new static policy error: bad value for option %q: %q is not a boolean", name, cfg.Options[name])
		}
	}
	if cfg.ReservedCPU.IsZero() {
		return nil, fmt.Errorf("[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero")
	}
	n := int(math.Ceil(float64(cfg.ReservedCPU.MilliValue()) / 1000))
	reserved := cfg.Reserved
	if reserved.Size() == 0 {
		// The lowest-numbered cores, by topology.
		reserved, _ = takeByTopology(topo, topo.All(), n)
	}
	if reserved.Size() != n {
		return nil, fmt.Errorf("new static policy error: [cpumanager] unable to reserve the required amount of CPUs (size of %s did not equal %d)", reserved, n)
	}
	if !reserved.IsSubsetOf(topo.All()) {
		return nil, fmt.Errorf("new static policy error: [cpumanager] unable to build the reserved physical CPUs from the reserved set: reserved CPUs %s are not all online (%s)", reserved, topo.All())
	}
	m.reserved = reserved
	m.reservedPhysical = topo.CoreSiblings(reserved)
	return m, nil
}

// Policy is the policy's name.
func (m *Manager) Policy() string { return m.policy }

// Reserved are the CPUs kept out of exclusive assignments.
func (m *Manager) Reserved() cpuset.CPUSet { return m.reserved }

// Start takes the state read from the state file at path (st nil: none),
// validated as upstream's, and returns the error that must stop the start.
func (m *Manager) Start(st *State, path string) error {
	if st != nil && st.Policy != m.policy {
		return fmt.Errorf("could not restore state from checkpoint: configured policy %q differs from state checkpoint policy %q, please drain this node and delete the CPU manager checkpoint file %q before restarting Kubelet",
			m.policy, st.Policy, path)
	}
	if st != nil {
		m.state = st.Clone()
	}
	if m.policy != PolicyStatic {
		return nil
	}
	if err := m.validate(); err != nil {
		return fmt.Errorf("start cpu manager error: %w", err)
	}
	return nil
}

// validate is upstream's validateState.
func (m *Manager) validate() error {
	all := m.topo.All()
	s := &m.state
	if s.Default.IsEmpty() {
		if len(s.Entries) != 0 {
			return fmt.Errorf("default cpuset cannot be empty")
		}
		s.Default = all
		return nil
	}
	if !same(m.reserved.Intersection(s.Default), m.reserved) {
		return fmt.Errorf("not all reserved cpus: %q are present in defaultCpuSet: %q", m.reserved.String(), s.Default.String())
	}
	known := s.Default.Clone()
	for _, pod := range slices.Sorted(maps.Keys(s.Entries)) {
		for _, c := range slices.Sorted(maps.Keys(s.Entries[pod])) {
			cs := s.Entries[pod][c]
			if !s.Default.Intersection(cs).IsEmpty() {
				return fmt.Errorf("pod: %s, container: %s cpuset: %q overlaps with default cpuset %q", pod, c, cs.String(), s.Default.String())
			}
			known = known.Union(cs)
		}
	}
	if !same(known, all) {
		return fmt.Errorf("current set of available CPUs %q doesn't match with CPUs in state %q", all.String(), known.String())
	}
	return nil
}

// State returns a copy of the state, for the state file and the
// published view.
func (m *Manager) State() State { return m.state.Clone() }

// Pods returns the UIDs of the pods holding exclusive CPUs.
func (m *Manager) Pods() []string { return slices.Sorted(maps.Keys(m.state.Entries)) }

// GuaranteedCPUs is the number of exclusive CPUs a container gets: its
// integer CPU request in a Guaranteed pod, else none (the shared pool).
func GuaranteedCPUs(pod *v1.Pod, c *v1.Container) int {
	if cgroups.QOSClass(pod) != v1.PodQOSGuaranteed {
		return 0
	}
	if pod.Spec.Resources != nil && (len(pod.Spec.Resources.Requests) > 0 || len(pod.Spec.Resources.Limits) > 0) {
		// Pod-level resources take no exclusive CPUs without the
		// PodLevelResourceManagers gate, as upstream's default.
		return 0
	}
	q := c.Resources.Requests[v1.ResourceCPU]
	if q.Value()*1000 != q.MilliValue() {
		return 0
	}
	return int(q.Value())
}

// exclusive is the number of exclusive CPUs the policy gives a container.
func (m *Manager) exclusive(pod *v1.Pod, c *v1.Container) int {
	if m.policy != PolicyStatic {
		return 0
	}
	return GuaranteedCPUs(pod, c)
}

// Allocate gives a container its exclusive CPUs within the affinity's
// NUMA nodes where it can (upstream's static policy's Allocate); a
// container that has them (an earlier run's, from the state file) keeps
// them.
func (m *Manager) Allocate(pod *v1.Pod, c *v1.Container, affinity topologymanager.Hint) error {
	n := m.exclusive(pod, c)
	if n == 0 {
		return nil
	}
	// Counted as upstream's: every container that takes exclusive CPUs,
	// one that has them already included.
	m.pinning.Requests++
	err := m.allocate(pod, c, affinity, n)
	if err != nil {
		m.pinning.Errors++
	}
	return err
}

// Pinning returns the allocations counted so far.
func (m *Manager) Pinning() topologymanager.Pinning { return m.pinning }

// ExclusiveCPUs is the number of CPUs the state gives containers
// exclusively, and SharedPool the number of the shared pool's CPUs that
// are not reserved, as upstream's figures for its metrics.
func (m *Manager) ExclusiveCPUs(s State) (exclusive, shared int) {
	all := cpuset.New()
	for _, cs := range s.Entries {
		for _, set := range cs {
			all = all.Union(set)
		}
	}
	return all.Size(), s.Default.Difference(m.reserved).Size()
}

func (m *Manager) allocate(pod *v1.Pod, c *v1.Container, affinity topologymanager.Hint, n int) error {
	uid := string(pod.UID)
	if cs, ok := m.state.Entries[uid][c.Name]; ok {
		m.updateReuse(pod, c, cs)
		return nil
	}
	if err := m.enforceSMT(n); err != nil {
		return err
	}
	available := m.state.Default.Difference(m.reserved).Union(m.reuse[uid])
	taken := cpuset.New()
	if affinity.NUMA != 0 {
		aligned := m.inNUMA(affinity.NUMA, available)
		if m.fullPCPUsOnly {
			aligned = m.wholeCores(aligned)
		}
		cs, err := takeByTopology(m.topo, aligned, min(n, aligned.Size()))
		if err != nil {
			return err
		}
		taken = cs
	}
	rest, err := takeByTopology(m.topo, available.Difference(taken), n-taken.Size())
	if err != nil {
		return err
	}
	taken = taken.Union(rest)
	m.state.Default = m.state.Default.Difference(taken)
	if m.state.Entries[uid] == nil {
		m.state.Entries[uid] = map[string]cpuset.CPUSet{}
	}
	m.state.Entries[uid][c.Name] = taken
	m.updateReuse(pod, c, taken)
	return nil
}

func (m *Manager) inNUMA(mask topologymanager.Mask, cpus cpuset.CPUSet) cpuset.CPUSet {
	return m.topo.filter(func(c CPUInfo) bool { return mask.Has(c.NUMA) && cpus.Contains(c.ID) })
}

// wholeCores keeps the CPUs whose core is entirely in cpus.
func (m *Manager) wholeCores(cpus cpuset.CPUSet) cpuset.CPUSet {
	return m.topo.filter(func(c CPUInfo) bool { return cpus.Contains(c.ID) && m.topo.CPUsOfCore(c.Core).IsSubsetOf(cpus) })
}

// enforceSMT is upstream's enforceSMTAlignment (full-pcpus-only).
func (m *Manager) enforceSMT(n int) error {
	if !m.fullPCPUsOnly {
		return nil
	}
	perCore := m.topo.CPUsPerCore()
	if n%perCore != 0 {
		return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: perCore}
	}
	if avail := m.state.Default.Difference(m.reservedPhysical).Size(); n > avail {
		return SMTAlignmentError{RequestedCPUs: n, CPUsPerCore: perCore, AvailablePhysicalCPUs: avail, CausedByPhysicalCPUs: true}
	}
	return nil
}

// updateReuse is upstream's updateCPUsToReuse: the CPUs of a pod's init
// container (not a sidecar, whose CPUs stay taken) may go to its app
// containers, which run after it.
func (m *Manager) updateReuse(pod *v1.Pod, c *v1.Container, cs cpuset.CPUSet) {
	uid := string(pod.UID)
	for other := range m.reuse {
		if other != uid {
			delete(m.reuse, other)
		}
	}
	for i := range pod.Spec.InitContainers {
		ic := &pod.Spec.InitContainers[i]
		if ic.Name != c.Name {
			continue
		}
		if ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways {
			break
		}
		m.reuse[uid] = m.reuse[uid].Union(cs)
		return
	}
	m.reuse[uid] = m.reuse[uid].Difference(cs)
}

// RemovePod returns a pod's exclusive CPUs to the shared pool, and
// reports whether it held any.
func (m *Manager) RemovePod(uid string) bool {
	delete(m.reuse, uid)
	entries, ok := m.state.Entries[uid]
	if !ok {
		return false
	}
	for _, cs := range entries {
		m.state.Default = m.state.Default.Union(cs)
	}
	delete(m.state.Entries, uid)
	return true
}

// ContainerHints are the NUMA placements of a container's exclusive CPUs
// (upstream's GetTopologyHints).
func (m *Manager) ContainerHints(pod *v1.Pod, c *v1.Container) topologymanager.Hints {
	n := m.exclusive(pod, c)
	if n == 0 {
		return nil
	}
	uid := string(pod.UID)
	if cs, ok := m.state.Entries[uid][c.Name]; ok {
		if cs.Size() != n {
			return topologymanager.Hints{string(v1.ResourceCPU): {}}
		}
		return topologymanager.Hints{string(v1.ResourceCPU): m.hints(cs, cpuset.New(), n)}
	}
	available := m.state.Default.Difference(m.reserved)
	if m.fullPCPUsOnly {
		available = m.wholeCores(available)
	}
	return topologymanager.Hints{string(v1.ResourceCPU): m.hints(available, m.reuse[uid], n)}
}

// PodHints are the placements of all the pod's exclusive CPUs at once:
// its app containers' and the largest need of its init containers.
func (m *Manager) PodHints(pod *v1.Pod) topologymanager.Hints {
	if m.policy != PolicyStatic {
		return nil
	}
	initMax, app := 0, 0
	for i := range pod.Spec.InitContainers {
		initMax = max(initMax, GuaranteedCPUs(pod, &pod.Spec.InitContainers[i]))
	}
	for i := range pod.Spec.Containers {
		app += GuaranteedCPUs(pod, &pod.Spec.Containers[i])
	}
	n := max(initMax, app)
	if n == 0 {
		return nil
	}
	uid := string(pod.UID)
	if entries, ok := m.state.Entries[uid]; ok {
		assigned := cpuset.New()
		for _, cs := range entries {
			assigned = assigned.Union(cs)
		}
		return topologymanager.Hints{string(v1.ResourceCPU): m.hints(assigned, cpuset.New(), min(n, assigned.Size()))}
	}
	return topologymanager.Hints{string(v1.ResourceCPU): m.hints(m.state.Default.Difference(m.reserved), cpuset.New(), n)}
}

// hints is upstream's generateCPUTopologyHints: every set of NUMA nodes
// whose available (and reusable) CPUs cover the request; preferred are
// the narrowest that could hold it on an idle node.
func (m *Manager) hints(available, reusable cpuset.CPUSet, n int) []topologymanager.Hint {
	nodes := m.topo.NUMANodes()
	minSize := len(nodes)
	hints := []topologymanager.Hint{}
	for bitsSet := 1; bitsSet < 1<<len(nodes); bitsSet++ {
		var sel []int
		for i, node := range nodes {
			if bitsSet&(1<<i) != 0 {
				sel = append(sel, node)
			}
		}
		mask := topologymanager.MaskOf(sel...)
		if m.inNUMA(mask, m.topo.All()).Size() >= n && mask.Count() < minSize {
			minSize = mask.Count()
		}
		if !same(m.inNUMA(mask, reusable), reusable) {
			continue
		}
		if m.inNUMA(mask, available.Union(reusable)).Size() < n {
			continue
		}
		hints = append(hints, topologymanager.Hint{NUMA: mask})
	}
	for i := range hints {
		hints[i].Preferred = hints[i].NUMA.Count() == minSize
	}
	sort.SliceStable(hints, func(i, j int) bool { return hints[i].NUMA < hints[j].NUMA })
	return hints
}

// CPUSet is the cpuset a container runs on: its exclusive CPUs, else the
// shared pool; empty with the none policy.
func (s State) CPUSet(podUID, container string) cpuset.CPUSet {
	if cs, ok := s.Entries[podUID][container]; ok {
		return cs
	}
	return s.Default
}
