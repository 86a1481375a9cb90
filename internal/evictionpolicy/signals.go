package evictionpolicy

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// Observation is what one signal measured: how much is available of how
// much, and when.
type Observation struct {
	Available, Capacity resource.Quantity
	Time                time.Time
}

// Observations are the signals measured in one pass.
type Observations map[Signal]Observation

// Observe derives the signals from a /stats/summary, as upstream's
// makeSignalObservations: memory.available is the root cgroup's
// available memory (capacity less working set), capacity being available
// plus working set; allocatableMemory.available is the "pods" system
// container's; nodefs from the root directory's filesystem; imagefs and
// containerfs from the runtime's; pid.available is the kernel's pid_max
// less the processes running. A figure missing from the summary leaves
// its signal out.
func Observe(summary *statsapi.Summary) Observations {
	out := Observations{}
	if summary == nil {
		return out
	}
	bin := func(v uint64) resource.Quantity { return *resource.NewQuantity(int64(v), resource.BinarySI) }
	dec := func(v uint64) resource.Quantity { return *resource.NewQuantity(int64(v), resource.DecimalSI) }
	memory := func(s Signal, m *statsapi.MemoryStats) {
		if m != nil && m.AvailableBytes != nil && m.WorkingSetBytes != nil {
			out[s] = Observation{Available: bin(*m.AvailableBytes), Capacity: bin(*m.AvailableBytes + *m.WorkingSetBytes), Time: m.Time.Time}
		}
	}
	fs := func(bytes, inodes Signal, f *statsapi.FsStats) {
		if f == nil {
			return
		}
		if f.AvailableBytes != nil && f.CapacityBytes != nil {
			out[bytes] = Observation{Available: bin(*f.AvailableBytes), Capacity: bin(*f.CapacityBytes), Time: f.Time.Time}
		}
		if f.InodesFree != nil && f.Inodes != nil {
			out[inodes] = Observation{Available: dec(*f.InodesFree), Capacity: dec(*f.Inodes), Time: f.Time.Time}
		}
	}
	n := summary.Node
	memory(SignalMemoryAvailable, n.Memory)
	for _, c := range n.SystemContainers {
		if c.Name == statsapi.SystemContainerPods {
			memory(SignalAllocatableMemoryAvailable, c.Memory)
		}
	}
	fs(SignalNodeFsAvailable, SignalNodeFsInodesFree, n.Fs)
	if n.Runtime != nil {
		fs(SignalImageFsAvailable, SignalImageFsInodesFree, n.Runtime.ImageFs)
		fs(SignalContainerFsAvailable, SignalContainerFsInodesFree, n.Runtime.ContainerFs)
	}
	if r := n.Rlimit; r != nil && r.MaxPID != nil && r.NumOfRunningProcesses != nil {
		avail := *r.MaxPID - *r.NumOfRunningProcesses
		out[SignalPIDAvailable] = Observation{
			Available: *resource.NewQuantity(avail, resource.DecimalSI),
			Capacity:  *resource.NewQuantity(*r.MaxPID, resource.DecimalSI),
			Time:      r.Time.Time,
		}
	}
	return out
}
