package cpumanager

import (
	"sync/atomic"
)

// View is the CPU manager's state as the pod-manager last published it,
// read by the pod runtime's goroutines when they create a container: an
// immutable copy swapped whole, so that readers never see a half-made
// assignment. Admission publishes before it spawns the pod's worker.
type View struct{ p atomic.Pointer[State] }

// Set publishes a state; the View keeps its own copy.
func (v *View) Set(s State) {
	c := s.Clone()
	v.p.Store(&c)
}

// CPUSet is the cpuset of a container as the runtime takes it
// (LinuxContainerResources.CpusetCpus): its exclusive CPUs, else the
// shared pool; empty (the runtime's default) with the none policy or
// before anything is published.
func (v *View) CPUSet(podUID, container string) string {
	if v == nil {
		return ""
	}
	s := v.p.Load()
	if s == nil || s.Policy != PolicyStatic {
		return ""
	}
	return s.CPUSet(podUID, container).String()
}

// Exclusive reports whether the container holds exclusive CPUs (static
// policy), for which the CFS quota is lifted, as upstream's
// DisableCPUQuotaWithExclusiveCPUs (locked on): a pinned container is not
// throttled on CPUs no other container uses.
func (v *View) Exclusive(podUID, container string) bool {
	s := v.static()
	if s == nil {
		return false
	}
	_, ok := s.Entries[podUID][container]
	return ok
}

// PodExclusive reports whether any container of the pod holds exclusive
// CPUs: the pod cgroup's CFS quota is lifted then, as upstream.
func (v *View) PodExclusive(podUID string) bool {
	s := v.static()
	return s != nil && len(s.Entries[podUID]) > 0
}

func (v *View) static() *State {
	if v == nil {
		return nil
	}
	s := v.p.Load()
	if s == nil || s.Policy != PolicyStatic {
		return nil
	}
	return s
}
