package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodStatusReport hands the status-reporter a pod's latest status, to write
// to the API server when it changed (for a static pod: to its mirror pod).
// Sender: the pod-manager, on every PodStatusChanged of a worker. Receiver:
// the status-reporter.
type PodStatusReport struct {
	// Pod is the pod as its source last gave it (metadata, spec, and for an
	// API pod its deletionTimestamp); the receiver must not modify it.
	Pod    *v1.Pod
	Status v1.PodStatus
	// Reconcile: the API shows the pod (for a static pod: its mirror pod)
	// with another status than Status (the node-lifecycle controller marks
	// a lost node's pods not Ready, someone patched a mirror pod's status,
	// say): write it again, on the pod as the API has it now, even though
	// it did not change.
	Reconcile bool
}

func (m *PodStatusReport) Summary() string {
	return fmt.Sprintf("%s/%s: %s", m.Pod.Namespace, m.Pod.Name, m.Status.Phase)
}

// PodFinished tells the status-reporter that a pod's worker is done: its
// containers are stopped and its sandbox removed. An API pod being deleted
// is then deleted for good (grace period 0, UID precondition); a static pod's
// mirror pod is deleted.
// Sender: the pod-manager. Receiver: the status-reporter.
type PodFinished struct {
	Pod *v1.Pod
	// Removed is true when no source wants the pod any more (deleted from
	// the API, manifest removed), as opposed to a pod that ran to completion.
	Removed bool
}

func (m *PodFinished) Summary() string {
	return fmt.Sprintf("%s/%s finished (removed=%v)", m.Pod.Namespace, m.Pod.Name, m.Removed)
}

// NodeStatusTick wakes the status-reporter to check the node's status (every
// nodeStatusUpdateFrequency) and RenewLease to renew the node's lease (every
// nodeLeaseDurationSeconds/4).
// Sender and receiver: the status-reporter (its timers).
type NodeStatusTick struct{}

func (m *NodeStatusTick) Summary() string { return "node status tick" }

// RenewLease: see NodeStatusTick.
type RenewLease struct{}

func (m *RenewLease) Summary() string { return "renew lease" }

// CheckMirrorPod asks the status-reporter to check a static pod's mirror
// pod now rather than at its next node status tick: the mirror was deleted
// or is being deleted in the API, and is recreated at once, as upstream's
// kubelet syncs the static pod when its mirror goes.
// Sender: the pod-manager, which sees the mirror pods in the API server's
// set of pods (and never runs them). Receiver: the status-reporter.
type CheckMirrorPod struct {
	// UID is the static pod's, not the mirror's.
	UID types.UID
}

func (m *CheckMirrorPod) Summary() string { return fmt.Sprintf("check the mirror pod of %s", m.UID) }

// DeleteMirrorPod asks the status-reporter to delete an orphaned mirror
// pod: one whose static pod no source has any more (its manifest went while
// actorlet was down, so that no worker of the static pod ever removes it),
// as upstream's HandlePodCleanups deletes orphaned mirror pods. Sender: the
// pod-manager, once every source has sent its set. Receiver: the
// status-reporter, which retries a failed delete (as DeleteMirrorPod with
// the next Attempt).
type DeleteMirrorPod struct {
	// Pod is the mirror pod; the delete is conditioned on its UID.
	Pod     *v1.Pod
	Attempt int
}

func (m *DeleteMirrorPod) Summary() string {
	return fmt.Sprintf("delete the orphaned mirror pod %s/%s", m.Pod.Namespace, m.Pod.Name)
}

// MirrorPodDeleted is the outcome of a DeleteMirrorPod. Sender and
// receiver: the status-reporter (its delete runs off the mailbox).
type MirrorPodDeleted struct {
	Pod     *v1.Pod
	Attempt int
	Err     error
}

func (m *MirrorPodDeleted) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("orphaned mirror pod %s/%s not deleted: %v", m.Pod.Namespace, m.Pod.Name, m.Err)
	}
	return fmt.Sprintf("orphaned mirror pod %s/%s deleted", m.Pod.Namespace, m.Pod.Name)
}
