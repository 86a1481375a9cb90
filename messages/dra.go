package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PrepareClaims asks for the pod's ResourceClaims to be prepared by their
// DRA drivers; asked again with a newer pod while not yet prepared.
// Sender: a pod-worker whose pod has claims. Receiver: the dra-manager,
// which answers the sender with ClaimsPrepared once they are.
type PrepareClaims struct{ Pod *v1.Pod }

func (m *PrepareClaims) Summary() string {
	return fmt.Sprintf("%s/%s: prepare %d claims", m.Pod.Namespace, m.Pod.Name, len(m.Pod.Spec.ResourceClaims))
}

// ClaimsPrepared says the pod's claims are prepared: Devices are the CDI
// device IDs each container gets, by container name.
// Sender: the dra-manager. Receiver: the pod-worker that asked.
type ClaimsPrepared struct {
	UID     types.UID
	Devices map[string][]string
}

func (m *ClaimsPrepared) Summary() string {
	return fmt.Sprintf("%s: claims prepared, devices for %d containers", m.UID, len(m.Devices))
}

// UnprepareClaims says nothing of the pod runs any more: its claims are
// unprepared (those no other pod uses).
// Sender: a pod-worker once its kill ended. Receiver: the dra-manager,
// which answers the sender with ClaimsUnprepared once they are.
type UnprepareClaims struct{ Pod *v1.Pod }

func (m *UnprepareClaims) Summary() string {
	return fmt.Sprintf("%s/%s: unprepare claims", m.Pod.Namespace, m.Pod.Name)
}

// ClaimsUnprepared says the pod's claims are unprepared.
// Sender: the dra-manager. Receiver: the pod-worker that asked.
type ClaimsUnprepared struct{ UID types.UID }

func (m *ClaimsUnprepared) Summary() string { return fmt.Sprintf("%s: claims unprepared", m.UID) }

// DRAWorkDone carries the outcome of the dra-manager's own work (an
// event of its machine) back to it.
// Sender and receiver: the dra-manager (from its own goroutine).
type DRAWorkDone struct{ Event any }

func (m *DRAWorkDone) Summary() string { return fmt.Sprintf("%T", m.Event) }

// DRARetryDue wakes the dra-manager to try the pod's request again.
// Sender and receiver: the dra-manager (its timer).
type DRARetryDue struct{ UID types.UID }

func (m *DRARetryDue) Summary() string { return fmt.Sprintf("%s: retry due", m.UID) }

// DRAActivePods gives the dra-manager the pods with a live worker, as
// the pod-manager listed them (Listed; unlisted: its timer asks for a
// listing): once the pod sources are Ready, the claims of any other pod
// are unprepared, as upstream's reconcile loop.
// Sender and receiver: the dra-manager (its timer and its own goroutine).
type DRAActivePods struct {
	UIDs          []types.UID
	Ready, Listed bool
}

func (m *DRAActivePods) Summary() string { return fmt.Sprintf("%d active pods", len(m.UIDs)) }

// DRASlicesWipeDue: a DRA driver's last plugin went a while ago (empty
// Driver: the plugin-manager started); its ResourceSlices of the node are
// deleted unless it registered again, as upstream's.
// Sender and receiver: the plugin-manager (its timer).
type DRASlicesWipeDue struct{ Driver string }

func (m *DRASlicesWipeDue) Summary() string { return "wipe ResourceSlices of DRA driver " + m.Driver }

// DRASlicesWiped is the outcome of deleting ResourceSlices (Selector).
// Sender and receiver: the plugin-manager (from its own goroutine).
type DRASlicesWiped struct {
	Selector string
	Err      error
}

func (m *DRASlicesWiped) Summary() string { return "ResourceSlices deleted: " + m.Selector }
