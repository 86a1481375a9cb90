package volume

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/actorlet/actorlet/internal/csi"
)

// This file holds the decisions of growing a CSI PV's filesystem on the
// node (NodeExpandVolume), as upstream's operation executor makes them
// (expandVolumeDuringMount, nodeExpandVolume, NodeExpander and
// resize_util's PVC status marks), as pure functions. csiexpand.go does
// the I/O.

// expandAction is what the node does about a published CSI PV's size.
type expandAction int

const (
	// expandNothing: the claim shows the PV's size, or it waits for its
	// resizer (the controller side is not done, or failed).
	expandNothing expandAction = iota
	// expandRefusedReadOnly: the pod mounts the claim read-only, whose
	// filesystem the node does not grow: events say so, nothing else.
	expandRefusedReadOnly
	// expandCall: NodeExpandVolume to size, then the claim's status.
	expandCall
)

// expandPlan is a node expansion decided from the PV and its claim.
type expandPlan struct {
	action expandAction
	// size is what the driver is asked to grow the volume to.
	size resource.Quantity
	// legacy: the claim's resizer sets neither allocatedResources nor
	// allocatedResourceStatuses (an external-resizer older than the
	// recovery from expansion failures): no in-progress mark before the
	// call, no failure marks after it, as upstream's
	// legacyCallNodeExpandOnPlugin.
	legacy bool
}

// planExpansion is upstream's decision: the node grows the filesystem
// when the PV (which the resizer grew) is larger than the claim's
// status.capacity, to the claim's allocatedResources when its resizer
// sets them and only while allocatedResourceStatuses says the node's
// part is pending or in progress; to the PV's size with an older
// resizer. Never for a read-only mount.
func planExpansion(pv *v1.PersistentVolume, pvc *v1.PersistentVolumeClaim, readOnly bool) expandPlan {
	if pv == nil || pvc == nil {
		return expandPlan{}
	}
	pvCap, statusCap := pv.Spec.Capacity[v1.ResourceStorage], pvc.Status.Capacity[v1.ResourceStorage]
	if pvCap.IsZero() || statusCap.Cmp(pvCap) >= 0 {
		return expandPlan{}
	}
	if readOnly {
		return expandPlan{action: expandRefusedReadOnly}
	}
	resizeStatus := pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage]
	if resizeStatus == "" && pvc.Status.AllocatedResources == nil {
		return expandPlan{action: expandCall, size: pvCap, legacy: true}
	}
	switch resizeStatus {
	case v1.PersistentVolumeClaimNodeResizePending, v1.PersistentVolumeClaimNodeResizeInProgress:
		size := pvc.Status.AllocatedResources[v1.ResourceStorage]
		if size.IsZero() {
			return expandPlan{}
		}
		return expandPlan{action: expandCall, size: size}
	}
	// The controller's part runs, or failed, or is done with no node
	// part: the resizer decides.
	return expandPlan{}
}

// expandRequest is upstream's NodeExpandVolume request of a PV published
// at target: the PV's handle, the size, the publish target as the volume
// path, the PV's staging path (upstream's device mount path, which it
// gives whether or not the driver stages), and a mount capability with
// the PV's fsType, mount options and first access mode.
func (v csiVolume) expandRequest(caps csi.NodeCapabilities, root, target string, size resource.Quantity, secrets map[string]string) *csipb.NodeExpandVolumeRequest {
	req := &csipb.NodeExpandVolumeRequest{
		VolumeId: v.handle, VolumePath: target,
		StagingTargetPath: filepath.Join(csiGlobalDir(root, v.driver, v.handle), csiGlobalMountDir),
		CapacityRange:     &csipb.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapability: &csipb.VolumeCapability{
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.accessMode(caps)},
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: v.fsType, MountFlags: v.mountOptions}},
		},
		Secrets: secrets,
	}
	if v.block {
		// Upstream's block expansion: the pod's publish path (target)
		// and the block mapper's staging path, with a Block capability.
		req.StagingTargetPath = blockPaths(root, "", v.specName).staging
		req.VolumeCapability = v.blockCapability(caps)
	}
	return req
}

// expandFailure is how upstream's NodeExpander reads a failed
// NodeExpandVolume: FailedPrecondition is a driver that cannot grow a
// volume in use (not retried while it stays mounted, the mount not
// failed); InvalidArgument, OutOfRange and NotFound make the expansion
// infeasible.
type expandFailure struct{ inUse, infeasible bool }

func classifyExpandError(err error) expandFailure {
	st, ok := status.FromError(unwrapAll(err))
	if !ok {
		return expandFailure{}
	}
	switch st.Code() {
	case codes.FailedPrecondition:
		return expandFailure{inUse: true}
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		return expandFailure{infeasible: true}
	}
	return expandFailure{}
}

// unwrapAll is the innermost error err wraps: status.FromError reads only
// the error it is given.
func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok || u.Unwrap() == nil {
			return err
		}
		err = u.Unwrap()
	}
}

// The claim's status as upstream's resize_util marks it.

// knownResizeConditions are the claim conditions of a resize.
var knownResizeConditions = map[v1.PersistentVolumeClaimConditionType]bool{
	v1.PersistentVolumeClaimFileSystemResizePending: true,
	v1.PersistentVolumeClaimResizing:                true,
	v1.PersistentVolumeClaimControllerResizeError:   true,
	v1.PersistentVolumeClaimNodeResizeError:         true,
}

// withResizeConditions is upstream's MergeResizeConditionOnPVC: other
// conditions stay; a resize condition given replaces one of its type
// whose status differs; the other resize conditions stay only when keep.
func withResizeConditions(pvc *v1.PersistentVolumeClaim, conds []v1.PersistentVolumeClaimCondition, keep bool) {
	given := map[v1.PersistentVolumeClaimConditionType]int{}
	for i, c := range conds {
		given[c.Type] = i
	}
	done := map[v1.PersistentVolumeClaimConditionType]bool{}
	out := []v1.PersistentVolumeClaimCondition{}
	for _, c := range pvc.Status.Conditions {
		i, ok := given[c.Type]
		switch {
		case !knownResizeConditions[c.Type]:
			out = append(out, c)
		case ok:
			if conds[i].Status != c.Status {
				c = conds[i]
			}
			out = append(out, c)
			done[c.Type] = true
		case keep:
			out = append(out, c)
		}
	}
	for _, c := range conds {
		if !done[c.Type] {
			out = append(out, c)
		}
	}
	pvc.Status.Conditions = out
}

func withStorageStatus(pvc *v1.PersistentVolumeClaim, s v1.ClaimResourceStatus) {
	m := map[v1.ResourceName]v1.ClaimResourceStatus{}
	for k, v := range pvc.Status.AllocatedResourceStatuses {
		m[k] = v
	}
	m[v1.ResourceStorage] = s
	pvc.Status.AllocatedResourceStatuses = m
}

// markExpansionInProgress is upstream's MarkNodeExpansionInProgress.
func markExpansionInProgress(pvc *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	withStorageStatus(out, v1.PersistentVolumeClaimNodeResizeInProgress)
	return out
}

// markExpansionFinished is upstream's MarkNodeExpansionFinishedWithRecovery
// (and MarkFSResizeFinished): the capacity is the new size, the storage
// resize status and every resize condition gone.
func markExpansionFinished(pvc *v1.PersistentVolumeClaim, size resource.Quantity) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if out.Status.Capacity == nil {
		out.Status.Capacity = v1.ResourceList{}
	}
	out.Status.Capacity[v1.ResourceStorage] = size
	delete(out.Status.AllocatedResourceStatuses, v1.ResourceStorage)
	if len(out.Status.AllocatedResourceStatuses) == 0 {
		out.Status.AllocatedResourceStatuses = nil
	}
	withResizeConditions(out, nil, false)
	return out
}

// markExpansionFailed is upstream's MarkNodeExpansionFailedCondition, or
// MarkNodeExpansionInfeasible: a NodeResizeError condition with the
// error, the other resize conditions kept; an infeasible expansion also
// sets the storage resize status to NodeResizeInfeasible, which hands the
// claim back to its resizer.
func markExpansionFailed(pvc *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	out := pvc.DeepCopy()
	if infeasible {
		withStorageStatus(out, v1.PersistentVolumeClaimNodeResizeInfeasible)
	}
	withResizeConditions(out, []v1.PersistentVolumeClaimCondition{{
		Type: v1.PersistentVolumeClaimNodeResizeError, Status: v1.ConditionTrue, LastTransitionTime: now,
		Message: fmt.Sprintf("failed to expand pvc with %v", err),
	}}, true)
	return out
}

// pvcStatusPatch is upstream's createPVCPatch: the strategic merge patch
// from old to updated, carrying old's resourceVersion when checked, so
// that the patch fails (and is retried) if the claim changed meanwhile.
func pvcStatusPatch(old, updated *v1.PersistentVolumeClaim, checked bool) ([]byte, error) {
	a, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(updated)
	if err != nil {
		return nil, err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(a, b, old)
	if err != nil {
		return nil, fmt.Errorf("failed to create 2 way merge patch: %w", err)
	}
	if !checked {
		return patch, nil
	}
	var m map[string]any
	if err := json.Unmarshal(patch, &m); err != nil {
		return nil, err
	}
	meta, _ := m["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		m["metadata"] = meta
	}
	meta["resourceVersion"] = old.ResourceVersion
	return json.Marshal(m)
}
