// Package machine reads what the node has to offer: its capacity (CPUs,
// memory, pods) and what of it is allocatable to pods once the kubelet's
// reservations and hard eviction thresholds are taken off, as upstream's
// container manager computes them.
package machine

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Capacity is the node's capacity: every CPU, all memory (MemTotal of
// meminfo) and maxPods pods.
func Capacity(meminfo string, maxPods int32) (v1.ResourceList, error) {
	mem, err := MemTotal(meminfo)
	if err != nil {
		return nil, err
	}
	return v1.ResourceList{
		v1.ResourceCPU:    *resource.NewQuantity(int64(runtime.NumCPU()), resource.DecimalSI),
		v1.ResourceMemory: *resource.NewQuantity(mem, resource.BinarySI),
		v1.ResourcePods:   *resource.NewQuantity(int64(maxPods), resource.DecimalSI),
	}, nil
}

// Allocatable is capacity minus kubeReserved and systemReserved, and minus
// the hard eviction threshold for memory.available when it is absolute, as
// upstream's GetNodeAllocatableAbsolute. Nothing goes below zero.
func Allocatable(capacity v1.ResourceList, kubeReserved, systemReserved, evictionHard map[string]string) (v1.ResourceList, error) {
	out := capacity.DeepCopy()
	subtract := func(name v1.ResourceName, value, what string) error {
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return fmt.Errorf("%s %s=%q: %w", what, name, value, err)
		}
		have, ok := out[name]
		if !ok {
			return nil
		}
		have.Sub(q)
		if have.Sign() < 0 {
			have = *resource.NewQuantity(0, have.Format)
		}
		out[name] = have
		return nil
	}
	for what, reserved := range map[string]map[string]string{"kubeReserved": kubeReserved, "systemReserved": systemReserved} {
		for name, value := range reserved {
			if err := subtract(v1.ResourceName(name), value, what); err != nil {
				return nil, err
			}
		}
	}
	if v, ok := evictionHard["memory.available"]; ok && !strings.HasSuffix(v, "%") {
		if err := subtract(v1.ResourceMemory, v, "evictionHard"); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// MemTotal is the machine's memory in bytes, from the MemTotal line of a
// meminfo file (/proc/meminfo).
func MemTotal(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read memory capacity: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read memory capacity from %s: %q: %w", path, s.Text(), err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("read memory capacity: no MemTotal in %s", path)
}
