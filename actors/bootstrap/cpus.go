package bootstrap

import (
	"fmt"
	"strconv"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/actors/podmanager"
	"github.com/actorlet/actorlet/internal/cpumanager"
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
func (a *Actor) cpuManager(rt *podruntime.Runtime, view *cpumanager.View) (*podmanager.CPUManager, error) {
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
	tm := topologymanager.Config{Policy: c.TopologyManagerPolicy, Scope: c.TopologyManagerScope, NUMANodes: topo.NUMANodes()}
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
