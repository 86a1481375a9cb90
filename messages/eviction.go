package messages

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// EvictPod asks the pod-manager to evict a running pod: its worker kills it
// within GracePeriod seconds, and its status becomes Failed with Reason
// ("Evicted") and Message, as upstream's eviction manager's killPodFunc.
// The pod is not started again.
// Sender: the eviction actor, the node-shutdown actor (reason Terminated).
// Receiver: the pod-manager.
type EvictPod struct {
	UID             types.UID
	Name, Namespace string
	GracePeriod     int64
	Reason, Message string
}

func (m *EvictPod) Summary() string {
	return fmt.Sprintf("evict %s/%s (grace %ds): %s", m.Namespace, m.Name, m.GracePeriod, m.Message)
}

// ReclaimDiskSpace asks the gc actor for a container GC pass and an image GC
// pass freeing every unused image (upstream's DeleteAllUnusedContainers and
// DeleteUnusedImages), before any pod is evicted for disk pressure. The gc
// actor answers DiskSpaceReclaimed to the sender once both are done.
// Sender: the eviction actor. Receiver: the gc actor.
type ReclaimDiskSpace struct{}

func (*ReclaimDiskSpace) Summary() string { return "reclaim disk space" }

// DiskSpaceReclaimed answers ReclaimDiskSpace.
// Sender: the gc actor. Receiver: the eviction actor.
type DiskSpaceReclaimed struct {
	ImagesRemoved int
	BytesFreed    uint64
}

func (m *DiskSpaceReclaimed) Summary() string {
	return fmt.Sprintf("disk space reclaimed: %d images, %d bytes", m.ImagesRemoved, m.BytesFreed)
}

// EvictionPass wakes the eviction actor for one pass (every monitoring
// interval).
// Sender and receiver: the eviction actor (its timer).
type EvictionPass struct{}

func (*EvictionPass) Summary() string { return "eviction pass" }

// SignalsObserved carries the node's statistics, read outside the eviction
// actor's mailbox. AfterReclaim: read again after the node reclaimed disk
// space of its own, to tell whether a pod must still go.
// Sender and receiver: the eviction actor (from its own goroutine).
type SignalsObserved struct {
	At           time.Time
	Stats        *statsapi.Summary
	AfterReclaim bool
	Err          error
}

func (m *SignalsObserved) Summary() string {
	if m.Err != nil {
		return "node statistics unreadable: " + m.Err.Error()
	}
	return fmt.Sprintf("node statistics: %d pods", len(m.Stats.Pods))
}
