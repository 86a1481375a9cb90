package bootstrap

import (
	"fmt"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/actors/podmanager"
	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/topologymanager"
)

// sysRoot is where the CPU topology is read.
const sysRoot = "/sys"

// reservedCPUsOverride is upstream's: reservedSystemCPUs (--reserved-cpus)
// replaces the cpu of kubeReserved and systemReserved by its number of
// CPUs, for allocatable and the CPU manager alike.
func (a *Actor) reservedCPUsOverride() error {
	c := a.cfg
	if c.ReservedSystemCPUs == "" {
		return nil
	}
	set, err := cpuset.Parse(c.ReservedSystemCPUs)
	if err != nil {
		return fmt.Errorf("unable to parse reservedSystemCPUs %q: %w", c.ReservedSystemCPUs, err)
	}
	if set.Size() == 0 {
		return nil
	}
	a.log.Info().Str("reservedSystemCPUs", set.String()).Msg("reservedSystemCPUs overwrites the cpu of kubeReserved and systemReserved")
	delete(c.KubeReserved, "cpu")
	if c.SystemReserved == nil {
		c.SystemReserved = map[string]string{}
	}
	c.SystemReserved["cpu"] = strconv.Itoa(set.Size())
	return nil
}

// cpuManager makes the CPU and topology managers' configuration, and opens
// the CPU manager once, so that a configuration or state file upstream
// refuses stops the start with upstream's error.
func (a *Actor) cpuManager(rt *podruntime.Runtime, view *cpumanager.View, numa []memorymanager.Node) (*podmanager.CPUManager, error) {
	c := a.cfg
	topo, err := cpumanager.Discover(sysRoot)
	if err != nil {
		return nil, err
	}
	reserved, err := cpuset.Parse(c.ReservedSystemCPUs)
	if err != nil {
		return nil, fmt.Errorf("unable to parse reservedSystemCPUs %q: %w", c.ReservedSystemCPUs, err)
	}
	var total resource.Quantity
	for _, m := range []map[string]string{c.KubeReserved, c.SystemReserved} {
		if v, ok := m["cpu"]; ok {
			q, err := resource.ParseQuantity(v)
			if err != nil {
				return nil, fmt.Errorf("reserved cpu %q: %w", v, err)
			}
			total.Add(q)
		}
	}
	tm := topologymanager.Config{Policy: c.TopologyManagerPolicy, Scope: c.TopologyManagerScope, NUMANodes: topo.NUMANodes(),
		Distances: map[int][]uint64{}}
	for _, n := range numa {
		if n.Distances != nil {
			tm.Distances[n.ID] = n.Distances
		}
	}
	if tm.Policy != topologymanager.PolicyNone {
		// As upstream, the options count only for a policy other than none.
		opts, warning, err := topologymanager.NewPolicyOptions(c.TopologyManagerPolicyOptions)
		if err != nil {
			return nil, fmt.Errorf("failed to initialize topology manager: %w", err)
		}
		if warning != "" {
			a.log.Warn().Int("max-allowable-numa-nodes", opts.MaxAllowableNUMANodes).Msg(warning)
		}
		tm.Options = opts
	}
	if err := tm.Validate(); err != nil {
		return nil, fmt.Errorf("failed to initialize topology manager: %w", err)
	}
	cm := &podmanager.CPUManager{Topology: topo, TopologyManager: tm, View: view,
		Config:          cpumanager.Config{Policy: c.CPUManagerPolicy, Options: c.CPUManagerPolicyOptions, Reserved: reserved, ReservedCPU: total},
		ReconcilePeriod: c.CPUManagerReconcilePeriod.Duration, UpdateCPUSet: rt.UpdateContainerCPUSet}
	m, err := cm.Open(a.deps.RootDir)
	if err != nil {
		return nil, fmt.Errorf("failed to initialize cpu manager: %w", err)
	}
	// The state file is there from the start, as upstream writes it.
	if err := cpumanager.Save(a.deps.RootDir, m.State()); err != nil {
		return nil, fmt.Errorf("failed to initialize cpu manager: %w", err)
	}
	a.log.Info().Str("policy", m.Policy()).Str("reserved", m.Reserved().String()).
		Str("topologyManagerPolicy", tm.Policy).Str("topologyManagerScope", tm.Scope).Msg("cpu manager started")
	return cm, nil
}

// memoryManager makes the memory manager's configuration and opens it
// once, so that a configuration or state file upstream refuses stops the
// start with upstream's error. Its reservations must add up to what node
// allocatable reserves of memory and huge pages (kubeReserved,
// systemReserved and the hard eviction threshold).
func (a *Actor) memoryManager(numa []memorymanager.Node, capacity, allocatable v1.ResourceList, view *memorymanager.View) (*podmanager.MemoryManager, error) {
	c := a.cfg
	reservation := v1.ResourceList{}
	for name, q := range capacity {
		if name != v1.ResourceMemory && !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		q = q.DeepCopy()
		q.Sub(allocatable[name])
		if !q.IsZero() {
			reservation[name] = q
		}
	}
	cfg := memorymanager.Config{Policy: c.MemoryManagerPolicy, NodeReservation: reservation}
	for _, r := range c.ReservedMemory {
		cfg.Reserved = append(cfg.Reserved, memorymanager.Reservation{NUMANode: int(r.NumaNode), Limits: r.Limits})
	}
	mm := &podmanager.MemoryManager{Nodes: numa, Config: cfg, View: view}
	m, err := mm.Open(a.deps.RootDir)
	if err != nil {
		return nil, fmt.Errorf("failed to initialize memory manager: %w", err)
	}
	// The state file is there from the start, as upstream writes it.
	if err := memorymanager.Save(a.deps.RootDir, m.State()); err != nil {
		return nil, fmt.Errorf("failed to initialize memory manager: %w", err)
	}
	a.log.Info().Str("policy", m.Policy()).Int("numaNodes", len(numa)).Msg("memory manager started")
	return mm, nil
}
