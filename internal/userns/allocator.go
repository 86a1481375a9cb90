// Package userns gives each pod with hostUsers: false a range of host
// user and group IDs of its own, as upstream's kubelet userns manager:
// the kubelet's range (KubeletMappings) is cut into slots of idsPerPod IDs,
// one slot per pod, recorded in the pod's directory (ROOT/pods/UID/userns,
// upstream's file and JSON shape) so that a restart keeps every pod's
// range, and freed with the pod's directory.
//
// The Allocator is the decisions alone, with no I/O; the Manager is the
// edge that reads and writes the pods' files around it.
package userns

import (
	"fmt"
	"math/bits"

	"k8s.io/apimachinery/pkg/types"
)

const (
	// UnitLength is the size every range is a multiple of: the 16-bit IDs
	// an image's files use must all map.
	UnitLength = 65536
	// DefaultIDsPerPod is upstream's userNamespaces.idsPerPod default.
	DefaultIDsPerPod = 65536
)

// Allocator hands out the slots of idsPerPod IDs of the kubelet's range,
// one per pod. It keeps upstream's rules: no slot maps host ID 0, a pod has
// at most one slot, and a slot recorded from disk must be one this kubelet
// could have allocated. It is not safe for concurrent use.
type Allocator struct {
	idsPerPod uint32
	// off is the first slot's index in units of idsPerPod from host ID 0;
	// n the number of slots.
	off, n int
	used   []uint64
	count  int
	byPod  map[types.UID]uint32 // each pod's first host ID
}

// NewAllocator checks the kubelet's range [firstID, firstID+length) against
// idsPerPod and maxPods as upstream's MakeUserNsManager does, with its
// messages, and returns an allocator of its slots, all free.
func NewAllocator(firstID, length, idsPerPod uint32, maxPods int) (*Allocator, error) {
	switch {
	case idsPerPod == 0 || idsPerPod%UnitLength != 0:
		return nil, fmt.Errorf("kubelet user namespace length %v is not a multiple of %d", idsPerPod, UnitLength)
	case firstID%idsPerPod != 0:
		return nil, fmt.Errorf("kubelet user assigned ID %v is not a multiple of %v", firstID, idsPerPod)
	case firstID < idsPerPod:
		// Mapping host ID 0 into a pod would give it the host's root.
		return nil, fmt.Errorf("kubelet user assigned ID %v must be greater or equal to %v", firstID, idsPerPod)
	case length%idsPerPod != 0:
		return nil, fmt.Errorf("kubelet user assigned IDs length %v is not a multiple of %v", length, idsPerPod)
	case uint64(firstID)+uint64(length) > 1<<32:
		// Not upstream's: a range past the last ID would wrap to host ID 0.
		return nil, fmt.Errorf("kubelet user assigned IDs %v+%v go past the last ID %v", firstID, length, uint32(1<<32-1))
	case int64(length/idsPerPod) < int64(maxPods):
		return nil, fmt.Errorf("kubelet user assigned IDs are not enough to support %v pods", maxPods)
	}
	n := int(length / idsPerPod)
	return &Allocator{
		idsPerPod: idsPerPod,
		off:       int(firstID / idsPerPod),
		n:         n,
		used:      make([]uint64, (n+63)/64),
		byPod:     map[types.UID]uint32{},
	}, nil
}

// IDsPerPod is the length of every pod's range.
func (a *Allocator) IDsPerPod() uint32 { return a.idsPerPod }

// Slots is how many pods the kubelet's range holds.
func (a *Allocator) Slots() int { return a.n }

// Lookup returns the first host ID of the pod's range, if it has one.
func (a *Allocator) Lookup(pod types.UID) (uint32, bool) {
	first, ok := a.byPod[pod]
	return first, ok
}

// Allocate gives the pod a free slot and returns its first host ID; a pod
// that has one keeps it. The search starts at slot start (modulo the
// slots) and goes up, wrapping: upstream starts at a random slot, so that a
// range freed is not the next one handed out, and the caller draws start.
func (a *Allocator) Allocate(pod types.UID, start int) (uint32, error) {
	if first, ok := a.byPod[pod]; ok {
		return first, nil
	}
	if a.count >= a.n {
		return 0, fmt.Errorf("could not find an empty slot to allocate a user namespace")
	}
	start %= a.n
	if start < 0 {
		start += a.n
	}
	i, ok := a.nextFree(start)
	if !ok {
		i, _ = a.nextFree(0)
	}
	a.set(i)
	first := uint32(i+a.off) * a.idsPerPod
	a.byPod[pod] = first
	return first, nil
}

// nextFree is the first free slot at or after from.
func (a *Allocator) nextFree(from int) (int, bool) {
	for w := from / 64; w < len(a.used); w++ {
		free := ^a.used[w]
		if w == from/64 {
			free &^= (1 << (uint(from) % 64)) - 1
		}
		if free == 0 {
			continue
		}
		i := w*64 + bits.TrailingZeros64(free)
		if i >= a.n {
			return 0, false
		}
		return i, true
	}
	return 0, false
}

func (a *Allocator) has(i int) bool { return a.used[i/64]&(1<<(uint(i)%64)) != 0 }
func (a *Allocator) set(i int)      { a.used[i/64] |= 1 << (uint(i) % 64); a.count++ }
func (a *Allocator) clear(i int)    { a.used[i/64] &^= 1 << (uint(i) % 64); a.count-- }

// Record marks [from, from+length) as the pod's, as upstream's record does
// for a range read from the pod's file: it must be one slot of this
// kubelet's range, free or already the pod's.
func (a *Allocator) Record(pod types.UID, from, length uint32) error {
	if length != a.idsPerPod {
		return fmt.Errorf("wrong user namespace length %v", length)
	}
	if from%a.idsPerPod != 0 {
		return fmt.Errorf("wrong user namespace offset specified %v", from)
	}
	prev, found := a.byPod[pod]
	if found && prev != from {
		return fmt.Errorf("different user namespace range already used by pod %q", pod)
	}
	i := int(from/a.idsPerPod) - a.off
	if i < 0 || i >= a.n {
		return fmt.Errorf("id %v is out of range", from)
	}
	if found {
		return nil
	}
	if a.has(i) {
		return fmt.Errorf("range picked for pod %q already taken", pod)
	}
	a.set(i)
	a.byPod[pod] = from
	return nil
}

// Release frees the pod's slot and reports whether it had one.
func (a *Allocator) Release(pod types.UID) bool {
	first, ok := a.byPod[pod]
	if !ok {
		return false
	}
	delete(a.byPod, pod)
	a.clear(int(first/a.idsPerPod) - a.off)
	return true
}

// Pods are the pods that hold a slot.
func (a *Allocator) Pods() []types.UID {
	out := make([]types.UID, 0, len(a.byPod))
	for uid := range a.byPod {
		out = append(out, uid)
	}
	return out
}
