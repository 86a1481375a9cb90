package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// ListPods asks for the pods the node runs, with their current status.
// Sender: the kubelet-API actor (GET /pods). Receiver: the pod-manager.
type ListPods struct{}

func (m *ListPods) Summary() string { return "list pods" }

// PodList answers ListPods with copies the asker may keep.
// Sender: the pod-manager. Receiver: whoever asked.
type PodList struct {
	Pods []v1.Pod
	// Active are the UIDs of every pod with a live worker, including
	// orphans being terminated, which Pods does not list.
	Active []types.UID
	// SourcesReady is true once every pod source has sent its pods and the
	// runtime's pods have been listed since, each one no source wants
	// adopted as an orphan (and so in Active): only then does a pod the
	// pod-manager does not know really have no owner, and its directories
	// no container using them. A listing that fails keeps it false until
	// one succeeds.
	SourcesReady bool
}

func (m *PodList) Summary() string { return fmt.Sprintf("%d pods", len(m.Pods)) }

// PodRef names a pod found in the runtime.
type PodRef struct {
	UID             types.UID
	Name, Namespace string
}

// OrphansFound lists the pods the runtime holds that no source wants, found
// once every source has sent its first update.
// Sender and receiver: the pod-manager (from its own goroutine).
type OrphansFound struct {
	Pods []PodRef
	Err  error
}

func (m *OrphansFound) Summary() string {
	if m.Err != nil {
		return "looking for orphans failed: " + m.Err.Error()
	}
	return fmt.Sprintf("%d orphaned pods", len(m.Pods))
}

// FindOrphansDue: the wait after a failed search for orphans is over; look
// again. Sender and receiver: the pod-manager (a timer of its own).
type FindOrphansDue struct{}

func (m *FindOrphansDue) Summary() string { return "look for orphans again" }

// KillDeadline: the time an evicted or preempted pod's kill may take is
// over (upstream's killPodNow timeout). Sender and receiver: the
// pod-manager (a timer of its own).
type KillDeadline struct{ UID types.UID }

func (m *KillDeadline) Summary() string { return "kill deadline of pod " + string(m.UID) }

// RuntimePodsListed gives the UIDs of the pods that had sandboxes or
// containers in the runtime when the pod-manager started: a pod from the API
// server that is not among them, and that no worker of this pod-manager has
// run, holds nothing in the runtime, so its first pass need not list it.
// Sender and receiver: the pod-manager (from its own goroutine).
type RuntimePodsListed struct {
	UIDs map[types.UID]bool
	Err  error
}

func (m *RuntimePodsListed) Summary() string {
	if m.Err != nil {
		return "listing the runtime's pods failed: " + m.Err.Error()
	}
	return fmt.Sprintf("%d pods in the runtime", len(m.UIDs))
}

// ReconcileCPUs: the CPU manager's reconcile period is over; move the
// running containers to their cpusets where the shared pool changed.
// Sender and receiver: the pod-manager (a timer of its own).
type ReconcileCPUs struct{}

func (m *ReconcileCPUs) Summary() string { return "reconcile the containers' cpusets" }

// CPUsReconciled: the containers' cpusets were applied. Applied is the
// cpuset now applied to each running container, by container ID. Sender
// and receiver: the pod-manager (its reconcile's goroutine).
type CPUsReconciled struct{ Applied map[string]string }

func (m *CPUsReconciled) Summary() string {
	return fmt.Sprintf("%d containers' cpusets reconciled", len(m.Applied))
}
