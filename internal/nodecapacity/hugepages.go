package nodecapacity

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// HugePagesDir is where the kernel tells the huge page sizes it supports
// and how many pages of each are pre-allocated.
const HugePagesDir = "/sys/kernel/mm/hugepages"

// HugePages is the node's huge page capacity as upstream's cadvisor-based
// CapacityFromMachineInfo reports it: one resource per page size the
// kernel supports (a directory hugepages-<size>kB of dir), named
// hugepages-<size> with the size as a binary quantity (hugepages-2Mi,
// hugepages-1Gi), worth nr_hugepages × size bytes, zero included. A
// machine without dir (no huge page support) has none.
func HugePages(dir string) (v1.ResourceList, error) {
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return v1.ResourceList{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read huge page sizes: %w", err)
	}
	out := v1.ResourceList{}
	for _, e := range entries {
		size, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(size, "kB"), 10, 64)
		if err != nil || !strings.HasSuffix(size, "kB") || kb <= 0 {
			return nil, fmt.Errorf("read huge page sizes: unexpected entry %s in %s", e.Name(), dir)
		}
		path := filepath.Join(dir, e.Name(), "nr_hugepages")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("read huge pages of size %dkB: %w", kb, err)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("read huge pages of size %dkB from %s: %w", kb, path, err)
		}
		pageSize := resource.NewQuantity(kb*1024, resource.BinarySI)
		out[HugePageResourceName(*pageSize)] = *resource.NewQuantity(n*kb*1024, resource.BinarySI)
	}
	return out, nil
}

// HugePageResourceName is upstream's v1helper.HugePageResourceName: the
// resource of huge pages of pageSize, "hugepages-2Mi".
func HugePageResourceName(pageSize resource.Quantity) v1.ResourceName {
	return v1.ResourceName(v1.ResourceHugePagesPrefix + pageSize.String())
}

// StatusAllocatable is allocatable as the Node reports it, as upstream's
// MachineInfo status setter: the memory of the pre-allocated huge pages
// (every hugepages-* of capacity) is not there for anything else, so it
// comes off allocatable memory, never below zero. The kubepods cgroup's
// limit (node allocatable enforcement) is computed without this, as
// upstream's.
func StatusAllocatable(capacity, allocatable v1.ResourceList) v1.ResourceList {
	out := allocatable.DeepCopy()
	mem, ok := out[v1.ResourceMemory]
	if !ok {
		return out
	}
	for name, q := range capacity {
		if strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			mem.Sub(q)
		}
	}
	if mem.Sign() < 0 {
		mem.Set(0)
	}
	out[v1.ResourceMemory] = mem
	return out
}
