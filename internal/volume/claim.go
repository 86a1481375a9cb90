package volume

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulingcorev1 "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/mount-utils"
)

// pvcProtectionFinalizer is upstream's: a PVC being deleted that still
// has it is kept for the pods that use it, so they may still mount it.
const pvcProtectionFinalizer = "kubernetes.io/pvc-protection"

// setUpClaim resolves a persistentVolumeClaim to its bound PV and sets up
// a hostPath, local or CSI PV (a PV's node affinity must admit this
// node; its volume mode must be how the containers use it); a block PV
// only from a CSI driver; any other PV is refused with a clear reason.
func (h *Host) setUpClaim(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	src := vol.PersistentVolumeClaim
	return h.setUpClaimed(ctx, pod, vol.Name, src.ClaimName, src.ReadOnly, nil)
}

// setUpEphemeral sets up a generic ephemeral volume as upstream's
// desired-state populator does: as the claim named after the pod and the
// volume, which kube-controller-manager's ephemeral volume controller
// makes, owned by the pod; until it exists and is bound the pod waits. A
// claim of that name that the pod does not control is refused, so that a
// pod never mounts a claim someone else made.
func (h *Host) setUpEphemeral(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	return h.setUpClaimed(ctx, pod, vol.Name, ephemeral.VolumeClaimName(pod, vol), false, func(pvc *v1.PersistentVolumeClaim) error {
		return ephemeral.VolumeIsForPod(pod, pvc)
	})
}

// setUpClaimed sets up the PV bound to the claim of the pod's volume
// volName; forPod, when set, checks the claim once it is bound and before
// its PV is read, where upstream's populator checks an ephemeral volume's
// claim.
func (h *Host) setUpClaimed(ctx context.Context, pod *v1.Pod, volName, claimName string, readOnly bool, forPod func(*v1.PersistentVolumeClaim) error) (Mounted, error) {
	pvc, err := h.boundClaim(ctx, pod.Namespace, claimName)
	if err != nil {
		return Mounted{}, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)
	}
	if forPod != nil {
		// Unwrapped, as upstream: the error names the claim and the pod.
		if err := forPod(pvc); err != nil {
			return Mounted{}, err
		}
	}
	pv, err := h.claimedVolume(ctx, pvc)
	if err != nil {
		return Mounted{}, fmt.Errorf("error processing PVC %s/%s: %w", pod.Namespace, claimName, err)
	}
	mode := volumeModeOf(pv)
	if err := checkVolumeMode(pod, volName, mode); err != nil {
		return Mounted{}, err
	}
	if err := checkNodeAffinity(pv, h.NodeName); err != nil {
		return Mounted{}, fmt.Errorf("persistent volume %s is not reachable from node %s: %w", pv.Name, h.NodeName, err)
	}
	if mode == v1.PersistentVolumeBlock && pv.Spec.CSI == nil {
		return Mounted{}, fmt.Errorf("persistent volume %s is a block volume of type %s: only CSI block volumes are supported by this node", pv.Name, pvType(pv))
	}
	switch {
	case pv.Spec.HostPath != nil:
		if err := checkHostPath(pv.Spec.HostPath.Path, pv.Spec.HostPath.Type); err != nil {
			return Mounted{}, err
		}
		return Mounted{Path: pv.Spec.HostPath.Path, HostPath: true, ReadOnly: readOnly}, nil
	case pv.Spec.Local != nil:
		dir := VolumeDir(h.RootDir, pod.UID, PluginLocal, pv.Name)
		if err := h.mountLocal(pod, pv, dir, readOnly); err != nil {
			return Mounted{}, err
		}
		return Mounted{Path: dir, ReadOnly: readOnly, SELinuxRelabel: true}, nil
	case pv.Spec.CSI != nil:
		v := csiFromPV(pv, readOnly)
		v.pv, v.claim = pv, pvc
		return h.setUpCSI(ctx, pod, v)
	}
	return Mounted{}, fmt.Errorf("persistent volume %s is of type %s, which this node cannot attach or mount: only hostPath, local and CSI persistent volumes are supported", pv.Name, pvType(pv))
}

// boundClaim is the claim, with upstream's checks (getPVCExtractPV): the
// claim is bound to a volume and not being deleted without protection.
// Until then the pod waits, as upstream's.
func (h *Host) boundClaim(ctx context.Context, namespace, claimName string) (*v1.PersistentVolumeClaim, error) {
	if h.Sources == nil {
		return nil, errors.New("this node has no API server to read the claim from")
	}
	pvc, err := h.Sources.PersistentVolumeClaim(ctx, namespace, claimName)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PVC from API server: %w", err)
	}
	if pvc.DeletionTimestamp != nil && !slices.Contains(pvc.Finalizers, pvcProtectionFinalizer) {
		return nil, errors.New("PVC is being deleted")
	}
	if pvc.Status.Phase != v1.ClaimBound {
		return nil, errors.New("PVC is not bound")
	}
	if pvc.Spec.VolumeName == "" {
		return nil, errors.New("PVC has empty pvc.Spec.VolumeName")
	}
	return pvc, nil
}

// claimedVolume is the PV bound to the claim, with upstream's checks
// (getPVSpec): the PV's claimRef points back at the claim.
func (h *Host) claimedVolume(ctx context.Context, pvc *v1.PersistentVolumeClaim) (*v1.PersistentVolume, error) {
	name := pvc.Spec.VolumeName
	pv, err := h.Sources.PersistentVolume(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("failed to fetch PV %s from API server: %w", name, err)
	}
	if pv.Spec.ClaimRef == nil {
		return nil, fmt.Errorf("found PV object %s but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim", name)
	}
	if pv.Spec.ClaimRef.UID != pvc.UID {
		return nil, fmt.Errorf("found PV object %s but its pv.Spec.ClaimRef.UID %s does not point to claim.UID %s", name, pv.Spec.ClaimRef.UID, pvc.UID)
	}
	return pv, nil
}

// checkNodeAffinity is upstream's CheckNodeAffinity for this node. Upstream
// matches the Node object's labels; this node knows its name only, which
// it matches as the kubernetes.io/hostname label (the label upstream
// itself sets to the node's name by default, and the one local volume
// provisioners write) and as the metadata.name field.
func checkNodeAffinity(pv *v1.PersistentVolume, nodeName string) error {
	if pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil {
		return nil
	}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   nodeName,
		Labels: map[string]string{v1.LabelHostname: nodeName},
	}}
	ok, err := schedulingcorev1.MatchNodeSelectorTerms(node, pv.Spec.NodeAffinity.Required)
	if err != nil {
		return err
	}
	if !ok {
		return errors.New("no matching NodeSelectorTerms")
	}
	return nil
}

// mountLocal bind-mounts a local PV's directory at dir, as upstream's local
// plugin SetUpAt: once (a mount already there is kept), read-only when
// the claim is, with the PV's mount options; the fsGroup is applied only
// by the first pod to mount it, and never to a read-only mount.
func (h *Host) mountLocal(pod *v1.Pod, pv *v1.PersistentVolume, dir string, readOnly bool) error {
	path := pv.Spec.Local.Path
	if path == "" {
		return fmt.Errorf("LocalVolume volume %q path is empty", pv.Name)
	}
	if hasBackstep(path) {
		return fmt.Errorf("invalid path: %s must not contain '..'", path)
	}
	if typ, err := fileType(path); err != nil {
		return fmt.Errorf("local volume %s: %w", pv.Name, err)
	} else if typ != v1.HostPathDirectory {
		return fmt.Errorf("local volume %s: %s is a %s: only directories are supported by this node", pv.Name, path, typ)
	}
	isMnt, err := h.Mounter.IsMountPoint(dir)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if err == nil && isMnt {
		return nil
	}
	refs, err := h.podMountRefs(path)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	opts := []string{"bind"}
	if readOnly {
		opts = append(opts, "ro")
	}
	opts = append(opts, pv.Spec.MountOptions...)
	if err := h.Mounter.MountSensitiveWithoutSystemd(path, dir, "", opts, nil); err != nil {
		// As upstream: leave no half mount and no directory behind, so
		// that the next attempt starts afresh.
		_ = mount.CleanupMountPoint(dir, h.Mounter, true)
		return fmt.Errorf("mounting local volume %s at %s: %w", pv.Name, dir, err)
	}
	if !readOnly && len(refs) == 0 {
		return localVolumeOwnership(dir, fsGroupOf(pod), fsGroupChangePolicyOf(pod))
	}
	return nil
}

// podMountRefs are the mounts of path by other pods (under ROOT/pods), as
// upstream's filterPodMounts.
func (h *Host) podMountRefs(path string) ([]string, error) {
	refs, err := h.Mounter.GetMountRefs(path)
	if err != nil {
		return nil, fmt.Errorf("cannot collect mounting information: %s %w", path, err)
	}
	podsDir := filepath.Join(h.RootDir, "pods") + string(os.PathSeparator)
	var out []string
	for _, r := range refs {
		if strings.HasPrefix(r, podsDir) {
			out = append(out, r)
		}
	}
	return out, nil
}

// pvType names a PV's source for messages, as the API does.
func pvType(pv *v1.PersistentVolume) string {
	s := &pv.Spec.PersistentVolumeSource
	switch {
	case s.CSI != nil:
		return "csi"
	case s.HostPath != nil:
		return "hostPath"
	case s.Local != nil:
		return "local"
	case s.NFS != nil:
		return "nfs"
	case s.ISCSI != nil:
		return "iscsi"
	case s.FC != nil:
		return "fc"
	case s.RBD != nil:
		return "rbd"
	case s.CephFS != nil:
		return "cephfs"
	case s.Glusterfs != nil:
		return "glusterfs"
	case s.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case s.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case s.AzureDisk != nil:
		return "azureDisk"
	case s.AzureFile != nil:
		return "azureFile"
	case s.VsphereVolume != nil:
		return "vsphereVolume"
	}
	return "unknown"
}
