package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/volume"
)

// PodVolumes are a pod's volumes as set up on the host, by volume name.
type PodVolumes map[string]volume.Mounted

// MountVolumes asks for a pod's volumes to be set up; for a pod whose
// volumes are set up already, their content is brought up to date (its
// labels or annotations changed, which downward API files show).
// Sender: the pod-manager, when a pod that needs volumes starts to run and
// when its metadata changes. Receiver: the volume-manager.
type MountVolumes struct{ Pod *v1.Pod }

func (m *MountVolumes) Summary() string {
	return fmt.Sprintf("%s/%s: %d volumes", m.Pod.Namespace, m.Pod.Name, len(m.Pod.Spec.Volumes))
}

// UnmountVolumes says nothing of a pod runs any more: its volumes are torn
// down and its directory removed.
// Sender: the pod-manager, when the pod's worker is done. Receiver: the
// volume-manager.
type UnmountVolumes struct{ UID types.UID }

func (m *UnmountVolumes) Summary() string { return fmt.Sprintf("%s: unmount", m.UID) }

// VolumesReady says every volume of a pod is set up, where each is.
// Sender: the volume-manager, once per pod (again after it restarted).
// Receiver: the pod-manager, which hands it to the pod's worker; the
// worker starts the pod's containers only then.
type VolumesReady struct {
	UID     types.UID
	Volumes PodVolumes
}

func (m *VolumesReady) Summary() string {
	return fmt.Sprintf("%s: %d volumes ready", m.UID, len(m.Volumes))
}

// VolumesUnmounted says a pod's volumes are torn down and its directory
// removed: a pod deleted from the API may go from it now, as upstream
// deletes a pod only once its resources are reclaimed.
// Sender: the volume-manager, after each successful teardown. Receiver:
// the pod-manager.
type VolumesUnmounted struct{ UID types.UID }

func (m *VolumesUnmounted) Summary() string { return fmt.Sprintf("%s: volumes unmounted", m.UID) }

// VolumeManagerRestarted asks for every running pod's volumes again, a
// MountVolumes each, and for the teardowns not yet confirmed, an
// UnmountVolumes each: a restart lost what the volume-manager knew.
// Sender: the volume-manager after a restart. Receiver: the pod-manager.
type VolumeManagerRestarted struct{}

func (m *VolumeManagerRestarted) Summary() string { return "volume-manager restarted: resend pods" }

// VolumesSetUp is the outcome of setting up (or refreshing) a pod's
// volumes, numbered Gen.
// Sender and receiver: the volume-manager (from its own goroutine).
type VolumesSetUp struct {
	UID     types.UID
	Gen     uint64
	Volumes PodVolumes
	// InUse are the attachable volumes the set-up resolved, set up or
	// not: listed in the Node's status.volumesInUse from then on.
	InUse []v1.UniqueVolumeName
	Err   error
}

func (m *VolumesSetUp) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s #%d: %v", m.UID, m.Gen, m.Err)
	}
	return fmt.Sprintf("%s #%d: %d volumes set up", m.UID, m.Gen, len(m.Volumes))
}

// VolumesTornDown is the outcome of tearing down a pod's volumes.
// Sender and receiver: the volume-manager (from its own goroutine).
type VolumesTornDown struct {
	UID types.UID
	Err error
}

func (m *VolumesTornDown) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("%s: teardown failed: %v", m.UID, m.Err)
	}
	return fmt.Sprintf("%s: torn down", m.UID)
}

// VolumeSourceChanged says an API object that volumes read (a ConfigMap or
// a Secret) changed; the pods whose volumes show it are refreshed.
// Sender: the volume-manager's object cache (from outside the tree).
// Receiver: the volume-manager.
type VolumeSourceChanged struct{ Kind, Namespace, Name string }

func (m *VolumeSourceChanged) Summary() string {
	return fmt.Sprintf("%s %s/%s changed", m.Kind, m.Namespace, m.Name)
}

// VolumesResync is the volume-manager's periodic timer: content volumes are
// refreshed (service-account tokens rotate through it) and the directories
// of pods that are gone are looked for.
// Sender and receiver: the volume-manager.
type VolumesResync struct{}

func (m *VolumesResync) Summary() string { return "resync volumes" }

// VolumeRetryDue wakes the volume-manager to set up a pod's volumes again
// after a failure, numbered Gen.
// Sender and receiver: the volume-manager.
type VolumeRetryDue struct {
	UID types.UID
	Gen uint64
}

func (m *VolumeRetryDue) Summary() string { return fmt.Sprintf("%s: retry #%d due", m.UID, m.Gen) }

// OrphanedPodDirs lists the pod directories under ROOT/pods that no pod
// the pod-manager knows owns, and that the volume-manager does not track.
// Sender and receiver: the volume-manager (from its own goroutine).
type OrphanedPodDirs struct {
	UIDs []types.UID
	Err  error
}

func (m *OrphanedPodDirs) Summary() string {
	return fmt.Sprintf("%d orphaned pod directories", len(m.UIDs))
}

// VolumesInUseRequest asks which attachable volumes the node's pods have
// mounted or are setting up. The asker waits for a VolumesInUse with a
// timeout.
// Sender: the status-reporter, at each node status update. Receiver: the
// volume-manager.
type VolumesInUseRequest struct{}

func (m *VolumesInUseRequest) Summary() string { return "volumes in use?" }

// VolumesInUse answers a VolumesInUseRequest: upstream's unique names of
// the attachable volumes mounted or being set up for the node's pods,
// sorted, which the
// Node's status.volumesInUse lists so that the attach-detach controller
// does not detach them.
// Sender: the volume-manager. Receiver: whoever asked.
type VolumesInUse struct{ Names []v1.UniqueVolumeName }

func (m *VolumesInUse) Summary() string { return fmt.Sprintf("%d volumes in use", len(m.Names)) }

// VolumesReportedInUse tells which volumes the Node's status lists in use
// after a node status update, as upstream's MarkVolumesAsReportedInUse:
// the set-up of an attachable volume waits until its volume is listed.
// Sender: the status-reporter, after each successful node status update.
// Receiver: the volume-manager.
type VolumesReportedInUse struct{ Names []v1.UniqueVolumeName }

func (m *VolumesReportedInUse) Summary() string {
	return fmt.Sprintf("%d volumes listed in use", len(m.Names))
}

// VolumesInUseChanged asks for a node status update now: a pod's set-up
// waits for its attachable volumes to be listed in use. Upstream waits for
// the next periodic update (up to nodeStatusUpdateFrequency).
// Sender: the volume-manager. Receiver: the status-reporter.
type VolumesInUseChanged struct{}

func (m *VolumesInUseChanged) Summary() string {
	return "volumes in use changed: update the node status"
}
