package memorymanager

import (
	"strconv"
	"strings"
	"sync/atomic"
)

// View is the memory manager's state as the pod-manager last published
// it, read by the pod runtime's goroutines when they create a container:
// an immutable copy swapped whole. Admission publishes before it spawns
// the pod's worker.
type View struct{ p atomic.Pointer[State] }

// Set publishes a state; the View keeps its own copy.
func (v *View) Set(s State) {
	c := s.Clone()
	v.p.Store(&c)
}

// CPUSetMems is the NUMA nodes a container's memory is pinned to, as the
// runtime takes them (LinuxContainerResources.CpusetMems, "0,1"); empty
// (the runtime's default) when it has no memory of the Static policy, or
// before anything is published.
func (v *View) CPUSetMems(podUID, container string) string {
	if v == nil {
		return ""
	}
	s := v.p.Load()
	if s == nil {
		return ""
	}
	var out []string
	for _, n := range s.NUMANodes(podUID, container) {
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, ",")
}
