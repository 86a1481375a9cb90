// Package topologymanager is upstream's topology manager
// (pkg/kubelet/cm/topologymanager) as a pure function: at admission it
// asks each hint provider (the CPU manager, then the memory manager)
// where on the node's NUMA nodes a container (or a whole pod, with the pod
// scope) could get what it asks for, merges the hints as the policy and
// its options say, admits or refuses, and has each provider allocate
// within the affinity chosen.
package topologymanager

import (
	"errors"
	"fmt"
	"math/bits"
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Policies and scopes, as topologyManagerPolicy and topologyManagerScope
// name them.
const (
	PolicyNone           = "none"
	PolicyBestEffort     = "best-effort"
	PolicyRestricted     = "restricted"
	PolicySingleNUMANode = "single-numa-node"
	ScopeContainer       = "container"
	ScopePod             = "pod"
)

// defaultMaxNUMANodes is upstream's default max-allowable-numa-nodes:
// beyond it the merge's cross product grows too large.
const defaultMaxNUMANodes = 8

// Admission reasons, as upstream's.
const (
	ReasonTopologyAffinity = "TopologyAffinityError"
	ReasonUnexpected       = "UnexpectedAdmissionError"
)

// Mask is a set of NUMA node IDs, bit i for node i.
type Mask uint64

// Count is the number of NUMA nodes in the mask.
func (m Mask) Count() int { return bits.OnesCount64(uint64(m)) }

// Has reports whether node is in the mask.
func (m Mask) Has(node int) bool { return m&(1<<node) != 0 }

// MaskOf returns the mask of the given nodes.
func MaskOf(nodes ...int) Mask {
	var m Mask
	for _, n := range nodes {
		m |= 1 << n
	}
	return m
}

// Hint is one placement a provider could satisfy: the NUMA nodes (0: any)
// and whether it is one of the narrowest possible.
type Hint struct {
	NUMA      Mask
	Preferred bool
}

// Hints are a provider's placements per resource: a nil list has no
// preference, an empty one can be satisfied nowhere.
type Hints map[string][]Hint

// HintProvider is a resource manager with a say on placement.
type HintProvider interface {
	// ContainerHints are the placements for one container; PodHints for
	// the whole pod (the pod scope).
	ContainerHints(pod *v1.Pod, c *v1.Container) Hints
	PodHints(pod *v1.Pod) Hints
	// Allocate reserves what the container needs within affinity (the
	// zero Hint: anywhere). An error with a Reason() names why the pod is
	// refused; any other is unexpected.
	Allocate(pod *v1.Pod, c *v1.Container, affinity Hint) error
}

// Config is the topology manager's configuration.
type Config struct {
	Policy, Scope string
	// NUMANodes are the node's NUMA node IDs.
	NUMANodes []int
	// Options are topologyManagerPolicyOptions, parsed by NewPolicyOptions
	// (zero: the defaults).
	Options PolicyOptions
	// Distances are each NUMA node's distances to the nodes, indexed by
	// node ID, as sysfs gives them (prefer-closest-numa-nodes needs them).
	Distances map[int][]uint64
}

// Validate refuses a configuration upstream refuses at start.
func (c Config) Validate() error {
	switch c.Policy {
	case PolicyNone, PolicyBestEffort, PolicyRestricted, PolicySingleNUMANode:
	default:
		return fmt.Errorf("unknown policy: %q", c.Policy)
	}
	switch c.Scope {
	case ScopeContainer, ScopePod:
	default:
		return fmt.Errorf("unknown scope: %q", c.Scope)
	}
	if c.Policy == PolicyNone {
		return nil
	}
	if c.Options.PreferClosestNUMA {
		for _, n := range c.NUMANodes {
			if c.Distances[n] == nil {
				return fmt.Errorf("cannot discover NUMA topology: error getting NUMA distances from cadvisor")
			}
		}
	}
	if limit := c.Options.maxNUMANodes(); len(c.NUMANodes) > limit {
		return fmt.Errorf("unsupported on machines with more than %v NUMA Nodes", limit)
	}
	return nil
}

// Pinning counts a hint provider's allocations that required pinning
// (Requests) and those of them that failed (Errors), since it was made.
type Pinning struct{ Requests, Errors int }

// Sub is what p counted since before.
func (p Pinning) Sub(before Pinning) Pinning {
	return Pinning{Requests: p.Requests - before.Requests, Errors: p.Errors - before.Errors}
}

// Rejection is why a pod is refused: upstream's reason and message.
type Rejection struct{ Reason, Message string }

func (r *Rejection) Error() string { return r.Message }

// reasoned is an allocation error that names its own reason
// (SMTAlignmentError).
type reasoned interface{ Reason() string }

// Admit admits a pod as upstream's topology manager's admit handler, and
// has the providers allocate for each of its containers (init containers
// first). On a rejection the caller releases what was allocated.
func Admit(cfg Config, providers []HintProvider, pod *v1.Pod) *Rejection {
	containers := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		containers = append(containers, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		containers = append(containers, &pod.Spec.Containers[i])
	}
	if cfg.Policy == PolicyNone {
		for _, c := range containers {
			if r := allocate(providers, pod, c, Hint{}); r != nil {
				return r
			}
		}
		return nil
	}
	var podHint Hint
	if cfg.Scope == ScopePod {
		var all []Hints
		for _, p := range providers {
			all = append(all, p.PodHints(pod))
		}
		best, ok := Merge(cfg, all)
		if !ok {
			return &Rejection{Reason: ReasonTopologyAffinity, Message: "Resources cannot be allocated with Topology locality"}
		}
		podHint = best
	}
	for _, c := range containers {
		hint := podHint
		if cfg.Scope == ScopeContainer {
			var all []Hints
			for _, p := range providers {
				all = append(all, p.ContainerHints(pod, c))
			}
			best, ok := Merge(cfg, all)
			if !ok {
				return &Rejection{Reason: ReasonTopologyAffinity, Message: "Resources cannot be allocated with Topology locality"}
			}
			hint = best
		}
		if r := allocate(providers, pod, c, hint); r != nil {
			return r
		}
	}
	return nil
}

func allocate(providers []HintProvider, pod *v1.Pod, c *v1.Container, hint Hint) *Rejection {
	for _, p := range providers {
		err := p.Allocate(pod, c, hint)
		if err == nil {
			continue
		}
		var r reasoned
		if errors.As(err, &r) {
			return &Rejection{Reason: r.Reason(), Message: err.Error()}
		}
		return &Rejection{Reason: ReasonUnexpected, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
	}
	return nil
}

// Merge merges the providers' hints as upstream's policies do: every
// combination of one hint per resource, their NUMA nodes intersected,
// preferred when all are; the best is a preferred one first, then the
// narrowest. It reports whether the policy admits that best hint
// (best-effort: always; restricted and single-numa-node: only a preferred
// one).
func Merge(cfg Config, all []Hints) (Hint, bool) {
	any := MaskOf(cfg.NUMANodes...)
	var lists [][]Hint
	for _, hints := range all {
		for _, res := range sortedKeys(hints) {
			list := hints[res]
			if list != nil && cfg.Policy == PolicySingleNUMANode {
				list = singleNUMA(list)
			}
			switch {
			case list == nil:
				list = []Hint{{NUMA: any, Preferred: true}}
			case len(list) == 0:
				list = []Hint{{NUMA: any, Preferred: false}}
			}
			lists = append(lists, list)
		}
	}
	best := Hint{NUMA: any, Preferred: len(lists) == 0}
	found := len(lists) == 0
	var walk func(i int, acc Hint)
	walk = func(i int, acc Hint) {
		if i == len(lists) {
			if acc.NUMA == 0 {
				return
			}
			if !found || cfg.better(acc, best) {
				best, found = acc, true
			}
			return
		}
		for _, h := range lists[i] {
			mask := h.NUMA
			if mask == 0 {
				mask = any
			}
			walk(i+1, Hint{NUMA: acc.NUMA & mask, Preferred: acc.Preferred && h.Preferred})
		}
	}
	walk(0, Hint{NUMA: any, Preferred: true})
	if !found {
		best = Hint{NUMA: any, Preferred: false}
	}
	if cfg.Policy == PolicySingleNUMANode && best.NUMA != any && best.NUMA.Count() != 1 {
		best.Preferred = false
	}
	admit := cfg.Policy == PolicyBestEffort || best.Preferred
	return best, admit
}

// better orders hints as upstream's: preferred first, then fewer NUMA
// nodes, then (prefer-closest-numa-nodes, but with single-numa-node) the
// smaller average distance between their nodes, then lower ones.
func (c Config) better(a, b Hint) bool {
	if a.Preferred != b.Preferred {
		return a.Preferred
	}
	if a.NUMA.Count() != b.NUMA.Count() {
		return a.NUMA.Count() < b.NUMA.Count()
	}
	if c.Options.PreferClosestNUMA && c.Policy != PolicySingleNUMANode {
		if da, db := c.averageDistance(a.NUMA), c.averageDistance(b.NUMA); da != db {
			return da < db
		}
	}
	return a.NUMA < b.NUMA
}

// averageDistance is upstream's CalculateAverageFor: the mean distance
// over every ordered pair of the mask's nodes (itself included).
func (c Config) averageDistance(m Mask) float64 {
	var sum, count float64
	for _, i := range c.NUMANodes {
		if !m.Has(i) {
			continue
		}
		for _, j := range c.NUMANodes {
			if !m.Has(j) {
				continue
			}
			if d := c.Distances[i]; j < len(d) {
				sum += float64(d[j])
			}
			count++
		}
	}
	if count == 0 {
		return 0
	}
	return sum / count
}

// singleNUMA keeps the preferred hints of a single NUMA node, as upstream's
// filterSingleNumaHints (a provider without preference is kept by Merge).
func singleNUMA(list []Hint) []Hint {
	var out []Hint
	for _, h := range list {
		if h.NUMA.Count() == 1 && h.Preferred {
			out = append(out, h)
		}
	}
	if out == nil {
		return []Hint{}
	}
	return out
}

func sortedKeys(h Hints) []string {
	keys := make([]string, 0, len(h))
	for k := range h {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
