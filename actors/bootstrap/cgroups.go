package bootstrap

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/metrics"
)

// Upstream's enforceNodeAllocatable keys (kubetypes).
const (
	enforcePods                       = "pods"
	enforceSystemReserved             = "system-reserved"
	enforceSystemReservedCompressible = "system-reserved-compressible"
	enforceKubeReserved               = "kube-reserved"
	enforceKubeReservedCompressible   = "kube-reserved-compressible"
)

// nodeEvent records an event on the node (its UID is its name, as
// upstream's node reference).
func (a *Actor) nodeEvent(eventtype, reason, message string) {
	if a.deps.Events == nil {
		return
	}
	a.deps.Events.Event(&v1.ObjectReference{Kind: "Node", Name: a.deps.NodeName, UID: types.UID(a.deps.NodeName)}, eventtype, reason, message)
}

// podCgroups sets up the node's cgroup tree as upstream's container
// manager does at start-up: kubepods bounded by node allocatable
// (enforceNodeAllocatable: pods; the machine's capacity otherwise), its
// QoS cgroups, and the system- and kube-reserved cgroups' limits when
// enforced. A failure to bound kubepods is logged and start-up goes on
// (upstream retries it, pods still run); a reserved cgroup that cannot be
// enforced fails start-up, as upstream's.
func (a *Actor) podCgroups(capacity v1.ResourceList, cpuSets *cpumanager.View) (*cgroups.Manager, error) {
	c := a.cfg
	perQOS := deref(c.CgroupsPerQOS)
	system, err := cgroups.ParseReserved(c.SystemReserved)
	if err != nil {
		return nil, fmt.Errorf("systemReserved: %w", err)
	}
	kube, err := cgroups.ParseReserved(c.KubeReserved)
	if err != nil {
		return nil, fmt.Errorf("kubeReserved: %w", err)
	}
	internal := capacity.DeepCopy()
	if n, err := cgroups.PidMax("/proc/sys/kernel/pid_max"); err == nil {
		internal[cgroups.ResourcePIDs] = *resource.NewQuantity(n, resource.DecimalSI)
	}
	allocatable := internal
	if perQOS && slices.Contains(c.EnforceNodeAllocatable, enforcePods) {
		allocatable = cgroups.AllocatableAbsolute(internal, system, kube)
	}
	cfg := cgroups.Config{
		Root:             "/sys/fs/cgroup",
		Layout:           cgroups.Layout{CgroupRoot: c.CgroupRoot, Driver: c.CgroupDriver, PerQOS: perQOS},
		PodPidsLimit:     deref(c.PodPidsLimit),
		EnforceCPULimits: c.CPUCFSQuota == nil || *c.CPUCFSQuota,
		PodExclusiveCPUs: cpuSets.PodExclusive,
		CPUPeriod:        uint64(a.cfsQuotaPeriod() / time.Microsecond),
		NodeAllocatable:  allocatable,
		Log:              a.log.With().Str("component", "cgroups").Logger(),
	}
	if a.gates.Enabled("QOSReserved") {
		// Validated already.
		reserved, _ := cgroups.ParseQOSReserved(c.QOSReserved)
		if p, ok := reserved[v1.ResourceMemory]; ok {
			mem := cgroups.AllocatableAbsolute(internal, system, kube)[v1.ResourceMemory]
			cfg.QOSReservedMemory, cfg.AllocatableMemory = &p, mem.Value()
		}
	}
	m, err := cgroups.New(cfg)
	if err != nil {
		return nil, err
	}
	if m.V2() {
		metrics.CgroupVersion.Set(2)
	} else {
		metrics.CgroupVersion.Set(1)
	}
	if err := m.Start(); err != nil {
		a.log.Warn().Err(err).Str("cgroup", m.PodsCgroup()).Msg("node allocatable cgroups not fully set up")
		a.nodeEvent(v1.EventTypeWarning, events.FailedNodeAllocatableEnforcement, fmt.Sprintf("Failed to update Node Allocatable Limits %q: %v", m.PodsCgroup(), err))
	} else if perQOS {
		a.nodeEvent(v1.EventTypeNormal, events.SuccessfulNodeAllocatableEnforcement, "Updated Node Allocatable limit across pods")
	}
	for _, e := range []struct {
		key, cgroup, what string
		rl                v1.ResourceList
		compressible      bool
	}{
		{enforceSystemReserved, c.SystemReservedCgroup, "System Reserved", system, false},
		{enforceSystemReservedCompressible, c.SystemReservedCgroup, "System Reserved Compressible", system, true},
		{enforceKubeReserved, c.KubeReservedCgroup, "Kube Reserved", kube, false},
		{enforceKubeReservedCompressible, c.KubeReservedCgroup, "Kube Reserved Compressible", kube, true},
	} {
		if !slices.Contains(c.EnforceNodeAllocatable, e.key) {
			continue
		}
		if err := m.EnforceReserved(e.cgroup, e.rl, e.compressible); err != nil {
			a.nodeEvent(v1.EventTypeWarning, events.FailedNodeAllocatableEnforcement, fmt.Sprintf("Failed to enforce %s Cgroup Limits on %q: %v", e.what, e.cgroup, err))
			return nil, fmt.Errorf("enforceNodeAllocatable %s: limits of %q: %w", e.key, e.cgroup, err)
		}
		a.nodeEvent(v1.EventTypeNormal, events.SuccessfulNodeAllocatableEnforcement, fmt.Sprintf("Updated limits on %s cgroup %v", strings.ToLower(strings.TrimSuffix(e.what, " Compressible")), e.cgroup))
	}
	return m, nil
}

// cfsQuotaPeriod is cpuCFSQuotaPeriod under the CustomCPUCFSQuotaPeriod
// gate, 0 (upstream's 100 ms) without it.
func (a *Actor) cfsQuotaPeriod() time.Duration {
	if p := a.cfg.CPUCFSQuotaPeriod; p != nil && a.gates.Enabled("CustomCPUCFSQuotaPeriod") {
		return p.Duration
	}
	return 0
}
