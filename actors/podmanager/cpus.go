package podmanager

import (
	"context"
	"maps"
	"path/filepath"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/memorymanager"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/topologymanager"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// CPUManager configures the CPU and topology managers the pod-manager
// owns: admission gives a Guaranteed pod's containers with integer CPU
// requests their exclusive CPUs, a pod's CPUs go back to the shared pool
// when nothing of it runs, the state file follows every change, and the
// containers of the shared pool follow the pool's changes.
type CPUManager struct {
	Topology *cpumanager.Topology
	Config   cpumanager.Config
	// TopologyManager is the topology manager's policy and scope.
	TopologyManager topologymanager.Config
	// View is where the state is published for the pod runtime.
	View *cpumanager.View
	// ReconcilePeriod is cpuManagerReconcilePeriod.
	ReconcilePeriod time.Duration
	// UpdateCPUSet moves a running container to a cpuset.
	UpdateCPUSet func(ctx context.Context, containerID, cpus string) error
}

// Open makes the CPU manager from its configuration and the state file,
// as upstream's at start: a state file of another policy, or one that
// does not fit the node, is an error that stops the start.
func (c *CPUManager) Open(rootDir string) (*cpumanager.Manager, error) {
	m, err := cpumanager.New(c.Topology, c.Config)
	if err != nil {
		return nil, err
	}
	var st *cpumanager.State
	if rootDir != "" {
		if st, err = cpumanager.Load(rootDir); err != nil {
			return nil, err
		}
	}
	if err := m.Start(st, filepath.Join(rootDir, cpumanager.StateFile)); err != nil {
		return nil, err
	}
	return m, nil
}

// CmdSaveCPUs: write the CPU manager's state file and publish the state.
type CmdSaveCPUs struct{ State cpumanager.State }

func (CmdSaveCPUs) isCommand() {}

// CmdCountResources: the resource managers admitted a pod, for the
// topology, CPU and memory managers' metrics: whether the topology
// manager refused it, and the CPU and memory pinnings it took.
type CmdCountResources struct {
	TopologyError bool
	CPUs, Memory  topologymanager.Pinning
}

func (CmdCountResources) isCommand() {}

// allocateResources is the admission of the resource managers, nil
// without a CPU or memory manager.
func (m *Machine) allocateResources() func(*v1.Pod) *Rejection {
	if m.cpus == nil && m.mem == nil {
		return nil
	}
	return m.admitResources
}

// admitResources runs the topology manager's admission with the CPU
// manager and the memory manager as its hint providers (upstream's
// order), where upstream's resource allocation admit handler runs: the
// pod's containers get their exclusive CPUs and pinned memory, or the
// pod is refused with upstream's reason (and whatever it got meanwhile
// goes back).
func (m *Machine) admitResources(pod *v1.Pod) *Rejection {
	var providers []topologymanager.HintProvider
	var cpusBefore cpumanager.State
	var count CmdCountResources
	if m.cpus != nil {
		cpusBefore = m.cpus.State()
		count.CPUs = m.cpus.Pinning()
		providers = append(providers, m.cpus)
	}
	var memBefore memorymanager.State
	if m.mem != nil {
		memBefore = m.mem.State()
		count.Memory = m.mem.Pinning()
		providers = append(providers, m.mem)
	}
	r := topologymanager.Admit(m.cfg.Topology, providers, pod)
	if m.cpus != nil {
		count.CPUs = m.cpus.Pinning().Sub(count.CPUs)
	}
	if m.mem != nil {
		count.Memory = m.mem.Pinning().Sub(count.Memory)
	}
	// Upstream's none policy counts no error: it merges no hints.
	count.TopologyError = r != nil && m.cfg.Topology.Policy != topologymanager.PolicyNone
	m.emit(count)
	if m.cpus != nil {
		if r != nil {
			m.cpus.RemovePod(string(pod.UID))
		}
		m.saveCPUsIfChanged(cpusBefore)
	}
	if m.mem != nil {
		if r != nil {
			m.mem.RemovePod(string(pod.UID))
		}
		m.saveMemoryIfChanged(memBefore)
	}
	if r != nil {
		return &Rejection{Reason: r.Reason, Message: r.Message}
	}
	return nil
}

// releaseCPUs returns a pod's exclusive CPUs to the shared pool once
// nothing of it runs, as upstream's removeStaleState does for pods no
// longer active.
func (m *Machine) releaseCPUs(uid string) {
	if m.cpus == nil {
		return
	}
	before := m.cpus.State()
	m.cpus.RemovePod(uid)
	m.saveCPUsIfChanged(before)
}

// pruneCPUs releases the CPUs of an earlier run's pods that no source gave
// back (once every source has sent its set).
func (m *Machine) pruneCPUs() {
	if m.cpus == nil {
		return
	}
	before := m.cpus.State()
	for _, uid := range m.cpus.Pods() {
		if p, ok := m.pods[types.UID(uid)]; ok && counts(p) {
			continue
		}
		if _, waiting := m.waiting[types.UID(uid)]; waiting {
			continue
		}
		m.cpus.RemovePod(uid)
	}
	m.saveCPUsIfChanged(before)
}

func (m *Machine) saveCPUsIfChanged(before cpumanager.State) {
	if after := m.cpus.State(); !after.Equal(before) {
		m.emit(CmdSaveCPUs{State: after})
	}
}

// CPUs returns the CPU manager's state (nil: none).
func (m *Machine) CPUs() *cpumanager.State {
	if m.cpus == nil {
		return nil
	}
	s := m.cpus.State()
	return &s
}

// saveCPUs writes the state file at once, as the allocations' checkpoint
// (the next admission must find it written), and publishes the state for
// the containers created from now on.
func (a *Actor) saveCPUs(st cpumanager.State) {
	if a.p.RootDir != "" {
		if err := cpumanager.Save(a.p.RootDir, st); err != nil {
			a.log.Error().Err(err).Msg("writing the CPU manager's state file failed")
		}
	}
	a.p.CPUManager.View.Set(st)
	a.setCPUGauges(st)
}

// setCPUGauges sets the static policy's CPU manager gauges from st, as
// upstream's after each allocation and release.
func (a *Actor) setCPUGauges(st cpumanager.State) {
	if a.m.cpus == nil || st.Policy != cpumanager.PolicyStatic {
		return
	}
	exclusive, shared := a.m.cpus.ExclusiveCPUs(st)
	metrics.CPUManagerExclusiveCPUs.Set(float64(exclusive))
	metrics.CPUManagerSharedPoolSize.Set(float64(shared * 1000))
}

// countResources counts one admission of the resource managers. Its
// duration is that of the pod-manager's step that ran it, which bounds
// it: the decision reads no clock.
func (a *Actor) countResources(c CmdCountResources) {
	metrics.TopologyManagerAdmissionRequests.Inc()
	metrics.TopologyManagerAdmissionDuration.Observe(float64(time.Since(a.stepStarted).Milliseconds()))
	if c.TopologyError {
		metrics.TopologyManagerAdmissionErrors.Inc()
	}
	metrics.CPUManagerPinningRequests.Add(float64(c.CPUs.Requests))
	metrics.CPUManagerPinningErrors.Add(float64(c.CPUs.Errors))
	metrics.MemoryManagerPinningRequests.Add(float64(c.Memory.Requests))
	metrics.MemoryManagerPinningErrors.Add(float64(c.Memory.Errors))
}

// startCPUs publishes the state the pod-manager starts with and starts the
// reconcile period (the static policy only: the none policy gives no
// container a cpuset).
func (a *Actor) startCPUs(ctx actor.Context) {
	if a.p.CPUManager == nil {
		return
	}
	if st := a.m.CPUs(); st != nil {
		a.p.CPUManager.View.Set(*st)
		a.setCPUGauges(*st)
		if st.Policy == cpumanager.PolicyStatic && a.p.CPUManager.ReconcilePeriod > 0 && a.p.CPUManager.UpdateCPUSet != nil {
			supervision.After(ctx, a.p.CPUManager.ReconcilePeriod, &messages.ReconcileCPUs{})
		}
	}
}

// reconcileCPUs moves each running container whose cpuset is not the one
// last applied to its cpuset, off the mailbox, one pass at a time.
func (a *Actor) reconcileCPUs(ctx actor.Context) {
	if a.cpuReconciling {
		return
	}
	a.cpuReconciling = true
	applied := maps.Clone(a.cpuApplied)
	rt, cm, log := a.p.Runtime, a.p.CPUManager, a.log
	supervision.Go(ctx, func(life context.Context) messages.Message {
		c, cancel := context.WithTimeout(life, time.Minute)
		defer cancel()
		pods, err := rt.ListPods(c)
		if err != nil {
			log.Debug().Err(err).Msg("cpu manager reconcile: listing the runtime failed")
			return &messages.CPUsReconciled{Applied: applied}
		}
		next := map[string]string{}
		for _, p := range pods {
			for _, cs := range p.ContainerStatuses {
				if cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
					continue
				}
				want := cm.View.CPUSet(string(p.UID), cs.Name)
				if want == "" {
					continue
				}
				if applied[cs.ID] != want {
					if err := cm.UpdateCPUSet(c, cs.ID, want); err != nil {
						log.Warn().Err(err).Str("container", cs.ID).Str("cpuset", want).Msg("cpu manager reconcile: updating the container's cpuset failed")
						continue
					}
				}
				next[cs.ID] = want
			}
		}
		return &messages.CPUsReconciled{Applied: next}
	})
}

func (a *Actor) cpusReconciled(ctx actor.Context, m *messages.CPUsReconciled) {
	a.cpuReconciling = false
	a.cpuApplied = m.Applied
	supervision.After(ctx, a.p.CPUManager.ReconcilePeriod, &messages.ReconcileCPUs{})
}
