// Package cpumanager holds the mechanics of upstream's CPU manager
// (pkg/kubelet/cm/cpumanager): the node's CPU topology read from sysfs, the
// static policy's pure allocation decisions, its state and the state file
// ROOT/cpu_manager_state in upstream's format. The pod-manager owns the
// state (it admits pods); the pod runtime reads the published cpusets.
package cpumanager

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/utils/cpuset"
)

// CPUInfo places one logical CPU: its core (the lowest CPU ID among its
// thread siblings, unique on the node), socket and NUMA node.
type CPUInfo struct {
	ID, Core, Socket, NUMA int
}

// Topology is the node's online CPUs, ordered by ID.
type Topology struct {
	CPUs []CPUInfo
}

// All returns every CPU of the topology.
func (t *Topology) All() cpuset.CPUSet {
	ids := make([]int, len(t.CPUs))
	for i, c := range t.CPUs {
		ids[i] = c.ID
	}
	return cpuset.New(ids...)
}

func (t *Topology) filter(keep func(CPUInfo) bool) cpuset.CPUSet {
	var ids []int
	for _, c := range t.CPUs {
		if keep(c) {
			ids = append(ids, c.ID)
		}
	}
	return cpuset.New(ids...)
}

// info returns the CPU of that ID, and whether the topology has it.
func (t *Topology) info(id int) (CPUInfo, bool) {
	i, ok := slices.BinarySearchFunc(t.CPUs, id, func(c CPUInfo, id int) int { return c.ID - id })
	if !ok {
		return CPUInfo{}, false
	}
	return t.CPUs[i], true
}

// CoreSiblings returns the CPUs of the cores of the given CPUs.
func (t *Topology) CoreSiblings(cpus cpuset.CPUSet) cpuset.CPUSet {
	cores := map[int]bool{}
	for _, id := range cpus.UnsortedList() {
		if c, ok := t.info(id); ok {
			cores[c.Core] = true
		}
	}
	return t.filter(func(c CPUInfo) bool { return cores[c.Core] })
}

// CPUsPerCore is the number of hardware threads of a core (the SMT level).
func (t *Topology) CPUsPerCore() int {
	if len(t.CPUs) == 0 {
		return 1
	}
	return t.CPUsOfCore(t.CPUs[0].Core).Size()
}

// CPUsOfCore, CPUsOfSocket and CPUsOfNUMA return the CPUs of one core,
// socket or NUMA node.
func (t *Topology) CPUsOfCore(core int) cpuset.CPUSet {
	return t.filter(func(c CPUInfo) bool { return c.Core == core })
}

func (t *Topology) CPUsOfSocket(socket int) cpuset.CPUSet {
	return t.filter(func(c CPUInfo) bool { return c.Socket == socket })
}

func (t *Topology) CPUsOfNUMA(node int) cpuset.CPUSet {
	return t.filter(func(c CPUInfo) bool { return c.NUMA == node })
}

// NUMANodes returns the NUMA node IDs, ascending.
func (t *Topology) NUMANodes() []int {
	seen := map[int]bool{}
	for _, c := range t.CPUs {
		seen[c.NUMA] = true
	}
	out := make([]int, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// Synthetic is a topology of sockets × cores × threads, numaPerSocket NUMA
// nodes per socket, numbered as Linux numbers a typical x86 node: the
// first thread of every core first, then the second threads.
func Synthetic(sockets, coresPerSocket, threads, numaPerSocket int) *Topology {
	t := &Topology{}
	cores := sockets * coresPerSocket
	for th := range threads {
		for core := range cores {
			socket := core / coresPerSocket
			numa := socket*numaPerSocket + (core%coresPerSocket)*numaPerSocket/coresPerSocket
			t.CPUs = append(t.CPUs, CPUInfo{ID: th*cores + core, Core: core, Socket: socket, NUMA: numa})
		}
	}
	// Core IDs are the lowest sibling's CPU ID, as Discover names them.
	return t
}

// Discover reads the online CPUs' topology below sysRoot (/sys):
// devices/system/cpu/online, each CPU's topology/physical_package_id and
// thread_siblings_list, and the CPUs of each NUMA node under
// devices/system/node (none: node 0).
func Discover(sysRoot string) (*Topology, error) {
	cpuDir := filepath.Join(sysRoot, "devices/system/cpu")
	online, err := readCPUSet(filepath.Join(cpuDir, "online"))
	if err != nil {
		return nil, err
	}
	numa := map[int]int{}
	nodes, _ := filepath.Glob(filepath.Join(sysRoot, "devices/system/node/node[0-9]*"))
	for _, dir := range nodes {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		cpus, err := readCPUSet(filepath.Join(dir, "cpulist"))
		if err != nil {
			return nil, err
		}
		for _, c := range cpus.UnsortedList() {
			numa[c] = id
		}
	}
	t := &Topology{}
	for _, id := range online.List() {
		dir := filepath.Join(cpuDir, fmt.Sprintf("cpu%d/topology", id))
		socket, err := readInt(filepath.Join(dir, "physical_package_id"))
		if err != nil {
			return nil, err
		}
		siblings, err := readCPUSet(filepath.Join(dir, "thread_siblings_list"))
		if err != nil {
			return nil, err
		}
		core := id
		if siblings.Size() > 0 {
			core = siblings.List()[0]
		}
		t.CPUs = append(t.CPUs, CPUInfo{ID: id, Core: core, Socket: socket, NUMA: numa[id]})
	}
	if len(t.CPUs) == 0 {
		return nil, fmt.Errorf("cpu topology: no online CPU in %s", filepath.Join(cpuDir, "online"))
	}
	return t, nil
}

func readCPUSet(path string) (cpuset.CPUSet, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return cpuset.New(), fmt.Errorf("cpu topology: %w", err)
	}
	s, err := cpuset.Parse(strings.TrimSpace(string(b)))
	if err != nil {
		return cpuset.New(), fmt.Errorf("cpu topology: %s: %w", path, err)
	}
	return s, nil
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, fmt.Errorf("cpu topology: %w", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("cpu topology: %s: %w", path, err)
	}
	return n, nil
}

// same reports whether two sets hold the same CPUs (cpuset's Equals tells
// an empty set from a zero one).
func same(a, b cpuset.CPUSet) bool { return a.Size() == b.Size() && a.IsSubsetOf(b) }
