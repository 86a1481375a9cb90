package volume

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/events"
)

// ExpandError is a node expansion of a CSI PV that failed, with upstream's
// wording: online (the volume was in use) it is a VolumeResizeFailed
// event; at the mount it fails the mount (FailedMount).
type ExpandError struct {
	// Volume is the PV's name.
	Volume string
	Online bool
	Err    error
}

func (e *ExpandError) Error() string {
	if e.Online {
		return fmt.Sprintf("NodeExpandVolume.NodeExpandVolume failed for volume %q : %v", e.Volume, e.Err)
	}
	return fmt.Sprintf("MountVolume.Setup failed while expanding volume for volume %q : %v", e.Volume, e.Err)
}

func (e *ExpandError) Unwrap() error { return e.Err }

// Reason is the event reason of the failure.
func (e *ExpandError) Reason() string {
	if e.Online {
		return events.VolumeResizeFailed
	}
	return events.FailedMountVolume
}

// expandCSI grows the filesystem of the CSI PV published at target when
// its claim asks (planExpansion), as upstream's node expansion: the claim
// marked in progress, NodeExpandVolume (when the driver has EXPAND_VOLUME),
// then the claim's new capacity; a failure is marked on the claim and
// returned, so the set-up is retried. online: the volume was published
// before this set-up.
func (h *Host) expandCSI(ctx context.Context, pod *v1.Pod, v csiVolume, drv registry.Driver, caps csi.NodeCapabilities, target string, online bool) error {
	plan := planExpansion(v.pv, v.claim, v.readOnly)
	switch plan.action {
	case expandNothing:
		return nil
	case expandRefusedReadOnly:
		msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", v.specName)
		h.event(pod, v1.EventTypeWarning, events.FileSystemResizeFailed, msg)
		h.event(v.claim, v1.EventTypeWarning, events.FileSystemResizeFailed, msg)
		return nil
	}
	key := CSIUniqueVolumeName(v.driver, v.handle)
	if online && h.csi.marked(h.csi.inUseExpandFailed, key) {
		// The driver said it cannot grow the volume while it is in use:
		// upstream waits for it to be mounted again.
		return nil
	}
	fail := func(err error) error { return &ExpandError{Volume: v.specName, Online: online, Err: err} }
	pvc := v.claim
	if !plan.legacy {
		var err error
		if pvc, err = h.patchClaim(ctx, pvc, markExpansionInProgress(pvc), true); err != nil {
			return fail(fmt.Errorf("MountVolume.NodeExpandVolume failed to mark node expansion in progress: %w", err))
		}
	}
	err := h.nodeExpand(ctx, v, drv, caps, target, plan)
	if err != nil {
		f := classifyExpandError(err)
		if f.inUse {
			h.csi.mark(h.csi.inUseExpandFailed, key, true)
		}
		if !plan.legacy {
			// A failed mark is only logged upstream: the error that
			// counts is the driver's.
			_, _ = h.patchClaim(ctx, pvc, markExpansionFailed(pvc, err, f.infeasible, metav1.Now()), false)
		}
		if f.inUse {
			// Upstream does not fail the mount for it.
			return nil
		}
		return fail(err)
	}
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", v.specName, h.NodeName)
	h.event(pod, v1.EventTypeNormal, events.FileSystemResizeSuccess, msg)
	h.event(pvc, v1.EventTypeNormal, events.FileSystemResizeSuccess, msg)
	if _, err := h.patchClaim(ctx, pvc, markExpansionFinished(pvc, plan.size), true); err != nil {
		return fail(fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err))
	}
	return nil
}

// nodeExpand is upstream's csi plugin NodeExpand: the driver must have
// EXPAND_VOLUME; the PV's nodeExpandSecretRef is read and sent.
func (h *Host) nodeExpand(ctx context.Context, v csiVolume, drv registry.Driver, caps csi.NodeCapabilities, target string, plan expandPlan) error {
	if !caps.ExpandVolume {
		return fmt.Errorf("NodeExpand is not supported by the CSI driver %s", v.driver)
	}
	secrets, err := h.csiSecrets(ctx, v.expandSecretRef)
	if err != nil {
		return fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %w", v.expandSecretRef.Namespace, v.expandSecretRef.Name, err)
	}
	callCtx, cancel := context.WithTimeout(ctx, CSITimeout)
	defer cancel()
	if err := csi.NodeExpandVolume(callCtx, drv.Endpoint, v.expandRequest(caps, h.RootDir, target, plan.size, secrets)); err != nil {
		return fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", err)
	}
	return nil
}

// patchClaim patches the claim's status from old to updated; nothing when
// they do not differ.
func (h *Host) patchClaim(ctx context.Context, old, updated *v1.PersistentVolumeClaim, checked bool) (*v1.PersistentVolumeClaim, error) {
	patch, err := pvcStatusPatch(old, updated, checked)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %w", old.Name, err)
	}
	out, err := h.Sources.PatchPersistentVolumeClaimStatus(ctx, old.Namespace, old.Name, patch)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %w", old.Name, err)
	}
	return out, nil
}

// event records an event on obj, when the host records any.
func (h *Host) event(obj runtime.Object, typ, reason, msg string) {
	if h.Events != nil {
		h.Events.Event(obj, typ, reason, msg)
	}
}

// EventReason is the event reason of a set-up error: an *ExpandError's,
// or FailedMount.
func EventReason(err error) string {
	var e *ExpandError
	if errors.As(err, &e) {
		return e.Reason()
	}
	return events.FailedMountVolume
}
