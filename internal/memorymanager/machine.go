// Package memorymanager holds the mechanics of upstream's memory manager
// (pkg/kubelet/cm/memorymanager): the node's memory per NUMA node read from
// sysfs, the Static policy's pure allocation decisions over NUMA nodes for
// Guaranteed pods' memory and huge pages, its state and the state file
// ROOT/memory_manager_state in upstream's format. The pod-manager owns the
// state (it admits pods); the pod runtime reads the published NUMA nodes
// of each container (cpuset.mems).
package memorymanager

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// HugePages is one page size's pre-allocated pages on a NUMA node.
type HugePages struct {
	// PageSizeKB is the page size in KiB, as the kernel names it.
	PageSizeKB uint64
	NumPages   uint64
}

// Node is one NUMA node's memory, as upstream reads it from cadvisor's
// machine info: MemTotal, the huge pages, and the distances to every node
// (by node ID order).
type Node struct {
	ID        int
	Memory    uint64
	HugePages []HugePages
	Distances []uint64
}

// NodesDir is where the kernel lists the NUMA nodes, under /sys.
const NodesDir = "devices/system/node"

// ParseMemTotal returns the bytes of the "Node N MemTotal: X kB" line of a
// NUMA node's meminfo.
func ParseMemTotal(meminfo string) (uint64, error) {
	sc := bufio.NewScanner(strings.NewReader(meminfo))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		// Node 0 MemTotal: 16318852 kB
		if len(f) >= 4 && f[0] == "Node" && f[2] == "MemTotal:" {
			kb, err := strconv.ParseUint(f[3], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("bad MemTotal %q: %w", f[3], err)
			}
			if len(f) > 4 && f[4] != "kB" {
				return 0, fmt.Errorf("bad MemTotal unit %q", f[4])
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("no MemTotal in node meminfo")
}

// ParseDistances parses a node's distance file: one distance per node,
// space-separated.
func ParseDistances(s string) ([]uint64, error) {
	var out []uint64
	for _, f := range strings.Fields(s) {
		d, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("bad NUMA distance %q: %w", f, err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Discover reads the NUMA nodes under sysRoot (/sys): each node's
// meminfo, huge pages and distances. A machine without NUMA nodes in sysfs
// is one node 0 of memTotal bytes (MemTotal of /proc/meminfo), as
// cadvisor reports it.
func Discover(sysRoot string, memTotal uint64) ([]Node, error) {
	dir := filepath.Join(sysRoot, NodesDir)
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	var nodes []Node
	for _, e := range entries {
		idText, ok := strings.CutPrefix(e.Name(), "node")
		if !ok {
			continue
		}
		id, err := strconv.Atoi(idText)
		if err != nil {
			continue
		}
		n, err := readNode(filepath.Join(dir, e.Name()), id)
		if err != nil {
			return nil, err
		}
		nodes = append(nodes, n)
	}
	if len(nodes) == 0 {
		return []Node{{ID: 0, Memory: memTotal}}, nil
	}
	slices.SortFunc(nodes, func(a, b Node) int { return a.ID - b.ID })
	return nodes, nil
}

func readNode(dir string, id int) (Node, error) {
	n := Node{ID: id}
	b, err := os.ReadFile(filepath.Join(dir, "meminfo"))
	if err != nil {
		return n, err
	}
	if n.Memory, err = ParseMemTotal(string(b)); err != nil {
		return n, fmt.Errorf("NUMA node %d: %w", id, err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "distance")); err == nil {
		if n.Distances, err = ParseDistances(string(b)); err != nil {
			return n, fmt.Errorf("NUMA node %d: %w", id, err)
		}
	}
	hp, err := os.ReadDir(filepath.Join(dir, "hugepages"))
	if err != nil && !os.IsNotExist(err) {
		return n, err
	}
	for _, e := range hp {
		size, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok || !strings.HasSuffix(size, "kB") {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(size, "kB"), 10, 64)
		if err != nil {
			return n, fmt.Errorf("NUMA node %d: bad huge page size %q", id, e.Name())
		}
		b, err := os.ReadFile(filepath.Join(dir, "hugepages", e.Name(), "nr_hugepages"))
		if err != nil {
			return n, err
		}
		pages, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return n, fmt.Errorf("NUMA node %d: bad nr_hugepages %q", id, strings.TrimSpace(string(b)))
		}
		n.HugePages = append(n.HugePages, HugePages{PageSizeKB: kb, NumPages: pages})
	}
	slices.SortFunc(n.HugePages, func(a, b HugePages) int { return int(a.PageSizeKB) - int(b.PageSizeKB) })
	return n, nil
}
