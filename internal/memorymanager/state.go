package memorymanager

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// MemoryTable is one resource's memory on one NUMA node, as upstream's
// state.MemoryTable (the state file's field names).
type MemoryTable struct {
	TotalMemSize   uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// NUMANodeState is one NUMA node's memory, its number of assignments and
// the group of nodes (Cells) it is allocated with, as upstream's.
type NUMANodeState struct {
	NumberOfAssignments int                              `json:"numberOfAssignments"`
	MemoryMap           map[v1.ResourceName]*MemoryTable `json:"memoryMap"`
	Cells               []int                            `json:"cells"`
}

// NUMANodeMap is the machine state: every NUMA node's memory by node ID.
type NUMANodeMap map[int]*NUMANodeState

// Clone returns a deep copy.
func (nm NUMANodeMap) Clone() NUMANodeMap {
	out := make(NUMANodeMap, len(nm))
	for id, s := range nm {
		if s == nil {
			out[id] = nil
			continue
		}
		c := &NUMANodeState{NumberOfAssignments: s.NumberOfAssignments, Cells: append([]int{}, s.Cells...)}
		if s.MemoryMap != nil {
			c.MemoryMap = make(map[v1.ResourceName]*MemoryTable, len(s.MemoryMap))
			for r, t := range s.MemoryMap {
				tc := *t
				c.MemoryMap[r] = &tc
			}
		}
		out[id] = c
	}
	return out
}

// Block is memory of one resource given to a container over a set of
// NUMA nodes, as upstream's state.Block.
type Block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

// ContainerMemoryAssignments are the containers' blocks, by pod UID and
// container name.
type ContainerMemoryAssignments map[string]map[string][]Block

// Clone returns a deep copy.
func (as ContainerMemoryAssignments) Clone() ContainerMemoryAssignments {
	out := make(ContainerMemoryAssignments, len(as))
	for pod, cs := range as {
		out[pod] = make(map[string][]Block, len(cs))
		for c, blocks := range cs {
			out[pod][c] = cloneBlocks(blocks)
		}
	}
	return out
}

func cloneBlocks(blocks []Block) []Block {
	out := make([]Block, len(blocks))
	for i, b := range blocks {
		out[i] = Block{NUMAAffinity: append([]int{}, b.NUMAAffinity...), Type: b.Type, Size: b.Size}
	}
	return out
}

// State is what the state file holds: the policy, the machine state and
// each container's blocks.
type State struct {
	Policy  string
	Machine NUMANodeMap
	Entries ContainerMemoryAssignments
}

// Clone returns a deep copy.
func (s State) Clone() State {
	return State{Policy: s.Policy, Machine: s.Machine.Clone(), Entries: s.Entries.Clone()}
}

// Equal reports whether two states are the same.
func (s State) Equal(o State) bool {
	if s.Policy != o.Policy || len(s.Machine) != len(o.Machine) || len(s.Entries) != len(o.Entries) {
		return false
	}
	for id, a := range s.Machine {
		b, ok := o.Machine[id]
		if !ok || (a == nil) != (b == nil) {
			return false
		}
		if a == nil {
			continue
		}
		if a.NumberOfAssignments != b.NumberOfAssignments || !slices.Equal(a.Cells, b.Cells) ||
			!maps.EqualFunc(a.MemoryMap, b.MemoryMap, func(x, y *MemoryTable) bool { return *x == *y }) {
			return false
		}
	}
	return maps.EqualFunc(s.Entries, o.Entries, func(x, y map[string][]Block) bool {
		return maps.EqualFunc(x, y, func(p, q []Block) bool {
			return slices.EqualFunc(p, q, func(a, b Block) bool {
				return a.Type == b.Type && a.Size == b.Size && slices.Equal(a.NUMAAffinity, b.NUMAAffinity)
			})
		})
	})
}

// NUMANodes are the NUMA nodes of a container's blocks, as the runtime
// takes them (LinuxContainerResources.CpusetMems, "0,1"); empty: none
// pinned (upstream's GetMemoryNUMANodes).
func (s State) NUMANodes(podUID, container string) []int {
	var nodes []int
	for _, b := range s.Entries[podUID][container] {
		for _, n := range b.NUMAAffinity {
			if !slices.Contains(nodes, n) {
				nodes = append(nodes, n)
			}
		}
	}
	slices.Sort(nodes)
	return nodes
}
