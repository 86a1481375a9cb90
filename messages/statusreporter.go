package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/oomwatch"
)

// RegisterNode asks the status-reporter to (re)try registering its Node.
// Sender and receiver: the status-reporter (its start and its backoff timer).
type RegisterNode struct{}

func (m *RegisterNode) Summary() string { return "register node" }

// NodeRegistered is the outcome of one registration attempt, run outside
// the status-reporter's mailbox: the Node as the API server has it, or why
// the attempt failed.
// Sender and receiver: the status-reporter (from its own goroutine).
type NodeRegistered struct {
	Node *v1.Node
	Err  error
	// Created: this attempt created the Node (not found it there).
	Created bool
}

func (m *NodeRegistered) Summary() string {
	if m.Err != nil {
		return "node registration failed: " + m.Err.Error()
	}
	return fmt.Sprintf("node %s registered (uid %s)", m.Node.Name, m.Node.UID)
}

// NodeStatusUpdated is the outcome of one node status update: the Node as
// written (or as read when nothing needed writing), whether it was patched,
// and the Ready condition computed, so that the receiver can emit
// NodeReady/NodeNotReady on a transition.
// Sender and receiver: the status-reporter (from its own goroutine).
type NodeStatusUpdated struct {
	Node    *v1.Node
	Patched bool
	// ReadyTransition is set when the Ready condition changed status.
	ReadyTransition *v1.ConditionStatus
	// PreviousBootID is the Node's boot ID before this update: another
	// than this boot's is upstream's Rebooted event.
	PreviousBootID string
	Err            error
}

func (m *NodeStatusUpdated) Summary() string {
	if m.Err != nil {
		return "node status update failed: " + m.Err.Error()
	}
	return fmt.Sprintf("node status checked (patched=%v)", m.Patched)
}

// LeaseRenewed is the outcome of one lease renewal.
// Sender and receiver: the status-reporter (from its own goroutine).
type LeaseRenewed struct {
	Err error
}

func (m *LeaseRenewed) Summary() string {
	if m.Err != nil {
		return "lease renewal failed: " + m.Err.Error()
	}
	return "lease renewed"
}

// PodStatusSynced is the outcome of writing one pod's status (and, for a
// static pod, reconciling its mirror pod) at a given version of what the
// status-reporter holds for the pod.
// Sender and receiver: the status-reporter (from one of its writers).
type PodStatusSynced struct {
	UID     types.UID
	Version uint64
	// Done is true when nothing is left to write for the pod: it was
	// deleted from the API, or the pod is gone from the node.
	Done bool
	Err  error
	// APIPod is the pod as the API server answered the write: the base of
	// the pod's next status patch, so that it needs no GET first.
	APIPod *v1.Pod
}

func (m *PodStatusSynced) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("pod %s status v%d failed: %v", m.UID, m.Version, m.Err)
	}
	return fmt.Sprintf("pod %s status v%d written (done=%v)", m.UID, m.Version, m.Done)
}

// RetryPodStatus asks the status-reporter to write a pod's status again
// after a failed attempt.
// Sender and receiver: the status-reporter (its backoff timer).
type RetryPodStatus struct {
	UID types.UID
}

func (m *RetryPodStatus) Summary() string { return fmt.Sprintf("retry pod %s status", m.UID) }

// KernelOOM is an OOM kill the kernel logged, for upstream's SystemOOM
// event.
// Sender: the status-reporter's kernel log reader (its goroutine);
// receiver: the status-reporter.
type KernelOOM struct {
	OOM oomwatch.OOM
}

func (m *KernelOOM) Summary() string {
	return fmt.Sprintf("kernel OOM kill of %s (pid %d), cgroup %s", m.OOM.Process, m.OOM.PID, m.OOM.VictimContainer)
}
