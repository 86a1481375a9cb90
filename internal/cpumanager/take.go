package cpumanager

import (
	"cmp"
	"fmt"
	"slices"

	"k8s.io/utils/cpuset"
)

// takeByTopology picks n CPUs of available as upstream's packed
// takeByTopology: whole sockets (or NUMA nodes, the larger first) while n
// covers one, then whole cores, then single threads; at each step from
// the socket, NUMA node and core with the fewest free CPUs, so that
// allocations pack together and leave whole cores and sockets free.
func takeByTopology(t *Topology, available cpuset.CPUSet, n int) (cpuset.CPUSet, error) {
	if n <= 0 {
		return cpuset.New(), nil
	}
	if available.Size() < n {
		return cpuset.New(), fmt.Errorf("not enough cpus available to satisfy request: requested=%d, available=%d", n, available.Size())
	}
	a := &accumulator{t: t, free: available, taken: cpuset.New(), need: n}
	levels := []func(CPUInfo) int{
		func(c CPUInfo) int { return c.Socket },
		func(c CPUInfo) int { return c.NUMA },
	}
	if len(t.NUMANodes()) < a.groups(levels[0]) {
		// NUMA nodes span sockets: they are the larger level.
		levels[0], levels[1] = levels[1], levels[0]
	}
	for _, level := range levels {
		a.takeWhole(level)
	}
	a.takeWhole(func(c CPUInfo) int { return c.Core })
	a.takeRemaining()
	if a.need != 0 {
		return cpuset.New(), fmt.Errorf("failed to allocate cpus")
	}
	return a.taken, nil
}

type accumulator struct {
	t           *Topology
	free, taken cpuset.CPUSet
	need        int
}

func (a *accumulator) groups(key func(CPUInfo) int) int {
	seen := map[int]bool{}
	for _, c := range a.t.CPUs {
		seen[key(c)] = true
	}
	return len(seen)
}

// members returns the CPUs of each group of key, by group ID.
func (a *accumulator) members(key func(CPUInfo) int) map[int]cpuset.CPUSet {
	ids := map[int][]int{}
	for _, c := range a.t.CPUs {
		ids[key(c)] = append(ids[key(c)], c.ID)
	}
	out := make(map[int]cpuset.CPUSet, len(ids))
	for g, l := range ids {
		out[g] = cpuset.New(l...)
	}
	return out
}

func (a *accumulator) take(cpus cpuset.CPUSet) {
	a.free = a.free.Difference(cpus)
	a.taken = a.taken.Union(cpus)
	a.need -= cpus.Size()
}

// freeIn counts the free CPUs sharing the group of key with c.
func (a *accumulator) freeIn(key func(CPUInfo) int, c CPUInfo) int {
	n := 0
	for _, o := range a.t.CPUs {
		if key(o) == key(c) && a.free.Contains(o.ID) {
			n++
		}
	}
	return n
}

// takeWhole takes entirely free groups of key while the need covers one,
// from the socket and NUMA node with the fewest free CPUs first.
func (a *accumulator) takeWhole(key func(CPUInfo) int) {
	groups := a.members(key)
	ids := make([]int, 0, len(groups))
	for g := range groups {
		ids = append(ids, g)
	}
	first := func(g int) CPUInfo { c, _ := a.t.info(groups[g].List()[0]); return c }
	slices.SortFunc(ids, func(x, y int) int {
		cx, cy := first(x), first(y)
		return cmp.Or(
			cmp.Compare(a.freeIn(socketOf, cx), a.freeIn(socketOf, cy)),
			cmp.Compare(a.freeIn(numaOf, cx), a.freeIn(numaOf, cy)),
			cmp.Compare(x, y))
	})
	for _, g := range ids {
		cpus := groups[g]
		if a.need >= cpus.Size() && cpus.IsSubsetOf(a.free) {
			a.take(cpus)
		}
	}
}

func socketOf(c CPUInfo) int { return c.Socket }
func numaOf(c CPUInfo) int   { return c.NUMA }
func coreOf(c CPUInfo) int   { return c.Core }

// takeRemaining takes single threads, one at a time, from the socket,
// NUMA node and core with the fewest free CPUs: a partly used core's
// sibling before a free core's thread.
func (a *accumulator) takeRemaining() {
	for a.need > 0 {
		var best *CPUInfo
		var bestKey [4]int
		for _, c := range a.t.CPUs {
			if !a.free.Contains(c.ID) {
				continue
			}
			k := [4]int{a.freeIn(socketOf, c), a.freeIn(numaOf, c), a.freeIn(coreOf, c), c.ID}
			if best == nil || slices.Compare(k[:], bestKey[:]) < 0 {
				c := c
				best, bestKey = &c, k
			}
		}
		if best == nil {
			return
		}
		a.take(cpuset.New(best.ID))
	}
}
