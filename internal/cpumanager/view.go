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
