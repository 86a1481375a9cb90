// Package nodecapacity reads what the node has to offer: its capacity (CPUs,
// memory, pods) and what of it is allocatable to pods once the kubelet's
// reservations and hard eviction thresholds are taken off, as upstream's
// container manager computes them.
package nodecapacity

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

// MaxPods is the node's capacity in pods, as upstream's MachineInfo
// setter: maxPods, or podsPerCore times the cores when that is set and
// smaller.
func MaxPods(maxPods, podsPerCore int32, cores int) int32 {
	if podsPerCore > 0 {
		return int32(min(int64(podsPerCore)*int64(cores), int64(maxPods)))
	}
	return maxPods
}

// Capacity is the node's capacity: every CPU, all memory (MemTotal of
// meminfo) and maxPods pods (see MaxPods).
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
// the hard eviction thresholds of memory.available (from memory) and
// nodefs.available (from ephemeral-storage), a percentage taken of the
// resource's capacity, as upstream's GetNodeAllocatableAbsolute and
// hardEvictionReservation. A resource not in capacity is left out; nothing
// goes below zero.
func Allocatable(capacity v1.ResourceList, kubeReserved, systemReserved, evictionHard map[string]string) (v1.ResourceList, error) {
	out := capacity.DeepCopy()
	subtract := func(name v1.ResourceName, q resource.Quantity) {
		have, ok := out[name]
		if !ok {
			return
		}
		have.Sub(q)
		if have.Sign() < 0 {
			have = *resource.NewQuantity(0, have.Format)
		}
		out[name] = have
	}
	for what, reserved := range map[string]map[string]string{"kubeReserved": kubeReserved, "systemReserved": systemReserved} {
		for name, value := range reserved {
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%q: %w", what, name, value, err)
			}
			subtract(v1.ResourceName(name), q)
		}
	}
	for signal, name := range map[string]v1.ResourceName{"memory.available": v1.ResourceMemory, "nodefs.available": v1.ResourceEphemeralStorage} {
		value, ok := evictionHard[signal]
		if !ok {
			continue
		}
		q, err := thresholdQuantity(value, capacity[name])
		if err != nil {
			return nil, fmt.Errorf("evictionHard %s=%q: %w", signal, value, err)
		}
		subtract(name, q)
	}
	return out, nil
}

// thresholdQuantity is an eviction threshold's value as a quantity of a
// resource of the given capacity, as upstream's GetThresholdQuantity: a
// percentage is parsed as a float32 (upstream's parsePercentage), and 0%
// and 100% are no threshold at all, as upstream ignores them.
func thresholdQuantity(value string, capacity resource.Quantity) (resource.Quantity, error) {
	p, ok := strings.CutSuffix(value, "%")
	if !ok {
		return resource.ParseQuantity(value)
	}
	if value == "0%" || value == "100%" {
		return resource.Quantity{}, nil
	}
	f, err := strconv.ParseFloat(p, 32)
	if err != nil {
		return resource.Quantity{}, err
	}
	if f < 0 || f > 100 {
		return resource.Quantity{}, fmt.Errorf("a percentage must be between 0%% and 100%%")
	}
	pct := float32(f) / 100
	return *resource.NewQuantity(int64(float64(capacity.Value())*float64(pct)), resource.BinarySI), nil
}

// MemTotal is the machine's memory in bytes, from the MemTotal line of a
// meminfo file (/proc/meminfo).
func MemTotal(path string) (int64, error) {
	return meminfo(path, "MemTotal:")
}

// SwapTotal is the machine's swap in bytes, from meminfo's SwapTotal, as
// upstream's machine info's SwapCapacity.
func SwapTotal(path string) (int64, error) {
	return meminfo(path, "SwapTotal:")
}

func meminfo(path, field string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, fmt.Errorf("read memory capacity: %w", err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 2 && fields[0] == field {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("read memory capacity from %s: %q: %w", path, s.Text(), err)
			}
			return kb * 1024, nil
		}
	}
	return 0, fmt.Errorf("read memory capacity: no %s in %s", strings.TrimSuffix(field, ":"), path)
}
