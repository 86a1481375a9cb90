package volume

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
)

// This file holds the decisions of mounting a CSI volume, as upstream's
// pkg/volume/csi makes them, as pure functions: what the CSIDriver object
// says, where things go, what each call asks of the driver, who applies
// the fsGroup. csi.go does the I/O.

// CSIPluginName is upstream's in-tree CSI plugin: it names the global
// mount directories (ROOT/plugins/kubernetes.io/csi) and, with "/"
// escaped, the pods' volume directories (PluginCSI).
const CSIPluginName = "kubernetes.io/csi"

// The keys of vol_data.json, upstream's volDataKey: what teardown reads
// after a restart to know what to unpublish and unstage.
const (
	volDataFile            = "vol_data.json"
	volDataSpecVolID       = "specVolID"
	volDataVolHandle       = "volumeHandle"
	volDataDriverName      = "driverName"
	volDataNodeName        = "nodeName"
	volDataAttachmentID    = "attachmentID"
	volDataLifecycleMode   = "volumeLifecycleMode"
	csiVolNameSep          = "^"
	csiGlobalMountDir      = "globalmount"
	csiPodMountDir         = "mount"
	csiPodInfoKeyPrefix    = "csi.storage.k8s.io/"
	csiEphemeralVolHandleP = "csi-"
)

// csiVolume is a CSI volume of a pod resolved to what mounting it needs:
// from a PV bound to the pod's claim, or from the pod's inline csi
// volume.
type csiVolume struct {
	driver, handle string
	// specName names the volume's directory: the PV's name, or the pod's
	// volume's name for an inline volume (upstream's spec.Name()).
	specName         string
	mode             storagev1.VolumeLifecycleMode
	readOnly         bool
	fsType           string
	accessModes      []v1.PersistentVolumeAccessMode
	mountOptions     []string
	attributes       map[string]string
	stageSecretRef   *v1.SecretReference
	publishSecretRef *v1.SecretReference
	expandSecretRef  *v1.SecretReference
	// pv and claim are a PV's objects as the set-up read them, which its
	// node expansion compares; nil for an inline volume.
	pv    *v1.PersistentVolume
	claim *v1.PersistentVolumeClaim
	// block: the PV's volumeMode is Block, mapped into containers as a
	// device (csiblock.go) rather than mounted.
	block bool
}

// csiFromPV is a CSI PV as the claim of a pod mounts it: read-only when
// the claim's volume or the PV's source says so.
func csiFromPV(pv *v1.PersistentVolume, claimReadOnly bool) csiVolume {
	src := pv.Spec.CSI
	return csiVolume{
		driver: src.Driver, handle: src.VolumeHandle, specName: pv.Name,
		mode:     storagev1.VolumeLifecyclePersistent,
		readOnly: claimReadOnly || src.ReadOnly, fsType: src.FSType,
		accessModes: pv.Spec.AccessModes, mountOptions: pv.Spec.MountOptions,
		attributes:     src.VolumeAttributes,
		stageSecretRef: src.NodeStageSecretRef, publishSecretRef: src.NodePublishSecretRef,
		expandSecretRef: src.NodeExpandSecretRef,
		block:           volumeModeOf(pv) == v1.PersistentVolumeBlock,
	}
}

// csiFromInline is a pod's inline (ephemeral) CSI volume: its handle is
// upstream's makeVolumeHandle, its secret in the pod's namespace, its
// access mode ReadWriteOnce.
func csiFromInline(pod *v1.Pod, vol *v1.Volume) csiVolume {
	src := vol.CSI
	v := csiVolume{
		driver: src.Driver, handle: ephemeralVolumeHandle(pod.UID, vol.Name), specName: vol.Name,
		mode:       storagev1.VolumeLifecycleEphemeral,
		readOnly:   src.ReadOnly != nil && *src.ReadOnly,
		attributes: src.VolumeAttributes,
	}
	if src.FSType != nil {
		v.fsType = *src.FSType
	}
	if src.NodePublishSecretRef != nil {
		v.publishSecretRef = &v1.SecretReference{Name: src.NodePublishSecretRef.Name, Namespace: pod.Namespace}
	}
	return v
}

// ephemeralVolumeHandle is upstream's makeVolumeHandle.
func ephemeralVolumeHandle(podUID types.UID, volName string) string {
	return fmt.Sprintf("%s%x", csiEphemeralVolHandleP, sha256.Sum256([]byte(string(podUID)+volName)))
}

// csiAttachmentName is upstream's getAttachmentName: the VolumeAttachment
// that the attach-detach controller makes for the volume on the node.
func csiAttachmentName(handle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(handle+driver+nodeName)))
}

// CSIUniqueVolumeName is upstream's unique name of a CSI volume
// (kubernetes.io/csi/DRIVER^HANDLE), as node.status.volumesInUse and
// volumesAttached list it.
func CSIUniqueVolumeName(driver, handle string) string {
	return CSIPluginName + "/" + driver + csiVolNameSep + handle
}

// csiGlobalDir is ROOT/plugins/kubernetes.io/csi/DRIVER/sha256(HANDLE):
// the staging target is its globalmount, with vol_data.json beside it
// (upstream's makeDeviceMountPath).
func csiGlobalDir(root, driver, handle string) string {
	return filepath.Join(root, "plugins", CSIPluginName, driver, fmt.Sprintf("%x", sha256.Sum256([]byte(handle))))
}

// csiPodDir is ROOT/pods/UID/volumes/kubernetes.io~csi/NAME: the publish
// target is its mount, with vol_data.json beside it.
func csiPodDir(root string, uid types.UID, specName string) string {
	return VolumeDir(root, uid, PluginCSI, escapeQualifiedName(specName))
}

// escapeQualifiedName is upstream's utilstrings.EscapeQualifiedName.
func escapeQualifiedName(in string) string {
	out := []byte(in)
	for i, c := range out {
		if c == '/' {
			out[i] = '~'
		}
	}
	return string(out)
}

// csiDriverPolicy is what the CSIDriver object says of a driver, with
// upstream's defaults where the cluster has none.
type csiDriverPolicy struct {
	attachRequired    bool
	podInfoOnMount    bool
	requiresRepublish bool
	fsGroupPolicy     storagev1.FSGroupPolicy
	// found: there is a CSIDriver object; without one only persistent
	// volumes may be mounted.
	found bool
	modes []storagev1.VolumeLifecycleMode
	// tokenRequests are the audiences (with lifetimes) of the tokens of
	// the pod's service account that the driver is given at each
	// publish; tokensInSecrets: in the publish's secrets rather than its
	// volume context (serviceAccountTokenInSecrets).
	tokenRequests   []storagev1.TokenRequest
	tokensInSecrets bool
}

// driverPolicy reads d (nil: no CSIDriver object for the driver) as
// upstream's csi plugin does: attach required and fsGroupPolicy
// ReadWriteOnceWithFSType by default; an object without fsGroupPolicy
// (which the API server defaults) is upstream's error.
func driverPolicy(d *storagev1.CSIDriver) (csiDriverPolicy, error) {
	p := csiDriverPolicy{attachRequired: true, fsGroupPolicy: storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy}
	if d == nil {
		return p, nil
	}
	p.found, p.modes = true, d.Spec.VolumeLifecycleModes
	if d.Spec.AttachRequired != nil {
		p.attachRequired = *d.Spec.AttachRequired
	}
	p.podInfoOnMount = d.Spec.PodInfoOnMount != nil && *d.Spec.PodInfoOnMount
	p.requiresRepublish = d.Spec.RequiresRepublish != nil && *d.Spec.RequiresRepublish
	p.tokenRequests = d.Spec.TokenRequests
	p.tokensInSecrets = d.Spec.ServiceAccountTokenInSecrets != nil && *d.Spec.ServiceAccountTokenInSecrets
	if d.Spec.FSGroupPolicy == nil || *d.Spec.FSGroupPolicy == "" {
		return p, errors.New("kubernetes.io/csi: expected valid fsGroupPolicy, received nil value or empty string")
	}
	p.fsGroupPolicy = *d.Spec.FSGroupPolicy
	return p, nil
}

// supportsMode is upstream's supportsVolumeLifecycleMode.
func (p csiDriverPolicy) supportsMode(driver string, mode storagev1.VolumeLifecycleMode) error {
	switch {
	case !p.found && mode == storagev1.VolumeLifecyclePersistent:
		return nil
	case !p.found:
		return fmt.Errorf("volume mode %q not supported by driver %s (no CSIDriver object)", mode, driver)
	case slices.Contains(p.modes, mode):
		return nil
	}
	return fmt.Errorf("volume mode %q not supported by driver %s (only supports %q)", mode, driver, p.modes)
}

// needsAttach: the volume waits for its VolumeAttachment. Inline volumes
// are never attached.
func (v csiVolume) needsAttach(p csiDriverPolicy) bool {
	return v.mode == storagev1.VolumeLifecyclePersistent && p.attachRequired
}

// needsStage: the volume is staged once per node before it is published.
// Inline volumes never are (upstream's CanDeviceMount).
func (v csiVolume) needsStage(caps csi.NodeCapabilities) bool {
	return v.mode == storagev1.VolumeLifecyclePersistent && caps.StageUnstage
}

// fsGroupPlan is who applies the pod's fsGroup to the volume: the driver
// (mountGroup, given as volume_mount_group), the kubelet (walk, after the
// publish), or nobody.
type fsGroupPlan struct {
	mountGroup *int64
	walk       bool
}

// planFSGroup is upstream's choice in SetUpAt: a driver with
// VOLUME_MOUNT_GROUP applies the fsGroup itself; otherwise the kubelet
// does, as supportsFSGroup says: never read-only or with policy None;
// always with File; with ReadWriteOnceWithFSType only for a volume with
// an fsType that is ReadWriteOnce (every inline volume is).
func (v csiVolume) planFSGroup(p csiDriverPolicy, caps csi.NodeCapabilities, fsGroup *int64) fsGroupPlan {
	if fsGroup == nil {
		return fsGroupPlan{}
	}
	if caps.VolumeMountGroup {
		return fsGroupPlan{mountGroup: fsGroup}
	}
	if p.fsGroupPolicy == storagev1.NoneFSGroupPolicy || v.readOnly {
		return fsGroupPlan{}
	}
	if p.fsGroupPolicy == storagev1.FileFSGroupPolicy {
		return fsGroupPlan{walk: true}
	}
	if v.fsType == "" {
		return fsGroupPlan{}
	}
	if v.mode == storagev1.VolumeLifecycleEphemeral {
		return fsGroupPlan{walk: true}
	}
	return fsGroupPlan{walk: slices.Contains(v.accessModes, v1.ReadWriteOnce)}
}

// accessMode is the CSI access mode of the volume, as upstream's
// NodeStage and NodePublish map the PV's first access mode (a PV without
// any, and an inline volume, are ReadWriteOnce).
func (v csiVolume) accessMode(caps csi.NodeCapabilities) csipb.VolumeCapability_AccessMode_Mode {
	am := v1.ReadWriteOnce
	if len(v.accessModes) > 0 {
		am = v.accessModes[0]
	}
	switch am {
	case v1.ReadWriteOnce:
		if caps.SingleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_MULTI_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	case v1.ReadOnlyMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_READER_ONLY
	case v1.ReadWriteMany:
		return csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	case v1.ReadWriteOncePod:
		if caps.SingleNodeMultiWriter {
			return csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER
		}
		return csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csipb.VolumeCapability_AccessMode_UNKNOWN
}

// capability is a filesystem volume's mount capability (a block volume's
// is blockCapability).
func (v csiVolume) capability(caps csi.NodeCapabilities, mountGroup *int64) *csipb.VolumeCapability {
	mnt := &csipb.VolumeCapability_MountVolume{FsType: v.fsType, MountFlags: v.mountOptions}
	if mountGroup != nil {
		mnt.VolumeMountGroup = strconv.FormatInt(*mountGroup, 10)
	}
	return &csipb.VolumeCapability{
		AccessMode: &csipb.VolumeCapability_AccessMode{Mode: v.accessMode(caps)},
		AccessType: &csipb.VolumeCapability_Mount{Mount: mnt},
	}
}

// stageRequest is upstream's MountDevice's NodeStageVolume: the PV's
// attributes (no pod information: the stage is the node's, not a pod's).
func (v csiVolume) stageRequest(caps csi.NodeCapabilities, stagingPath string, publishContext, secrets map[string]string, mountGroup *int64) *csipb.NodeStageVolumeRequest {
	return &csipb.NodeStageVolumeRequest{
		VolumeId: v.handle, PublishContext: publishContext, StagingTargetPath: stagingPath,
		VolumeCapability: v.capability(caps, mountGroup), Secrets: secrets, VolumeContext: v.attributes,
	}
}

// publishRequest is upstream's SetUpAt's NodePublishVolume: the volume
// context is the volume's attributes, with the pod's csi.storage.k8s.io/*
// keys when the driver asks for podInfoOnMount; the service account's
// tokens (tokenAttrs' key, when the driver asks for any) go into the
// volume context, or into the secrets when the driver says so.
func (v csiVolume) publishRequest(p csiDriverPolicy, caps csi.NodeCapabilities, pod *v1.Pod, stagingPath, targetPath string, publishContext, secrets, tokens map[string]string, mountGroup *int64) *csipb.NodePublishVolumeRequest {
	attrs := v.attributes
	if p.podInfoOnMount {
		attrs = mergeMaps(attrs, podInfoAttrs(pod, v.mode))
	}
	if len(tokens) > 0 {
		if p.tokensInSecrets {
			secrets = mergeMaps(secrets, tokens)
		} else {
			attrs = mergeMaps(attrs, tokens)
		}
	}
	return &csipb.NodePublishVolumeRequest{
		VolumeId: v.handle, PublishContext: publishContext, StagingTargetPath: stagingPath,
		TargetPath: targetPath, VolumeCapability: v.capability(caps, mountGroup),
		Readonly: v.readOnly, Secrets: secrets, VolumeContext: attrs,
	}
}

// mergeMaps is a new map of a's keys and b's, b's winning, as upstream's
// mergeMap; a and b stay as they are.
func mergeMaps(a, b map[string]string) map[string]string {
	out := make(map[string]string, len(a)+len(b))
	maps.Copy(out, a)
	maps.Copy(out, b)
	return out
}

// csiServiceAccountTokensKey is upstream's key of the pod's service
// account tokens in a publish's volume context (or secrets).
const csiServiceAccountTokensKey = csiPodInfoKeyPrefix + "serviceAccount.tokens"

// tokenAttrs is what upstream's podServiceAccountTokenAttrs passes: the
// tokens by audience ("" for the API server's own), each with its expiry,
// as JSON under one key.
func tokenAttrs(tokens map[string]authenticationv1.TokenRequestStatus) (map[string]string, error) {
	b, err := json.Marshal(tokens)
	if err != nil {
		return nil, err
	}
	return map[string]string{csiServiceAccountTokensKey: string(b)}, nil
}

// redactedError is an error whose message had the tokens a request
// carried taken out; it still unwraps to the original.
type redactedError struct {
	err error
	msg string
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// redactTokens takes the tokens out of a driver's error, which it may
// have built from the request it refused: a token must not reach a log
// line or an event.
func redactTokens(err error, tokens map[string]authenticationv1.TokenRequestStatus) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, t := range tokens {
		if t.Token != "" {
			msg = strings.ReplaceAll(msg, t.Token, "[redacted]")
		}
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{err: err, msg: msg}
}

// podInfoAttrs is upstream's getPodInfoAttrs.
func podInfoAttrs(pod *v1.Pod, mode storagev1.VolumeLifecycleMode) map[string]string {
	return map[string]string{
		csiPodInfoKeyPrefix + "pod.name":            pod.Name,
		csiPodInfoKeyPrefix + "pod.namespace":       pod.Namespace,
		csiPodInfoKeyPrefix + "pod.uid":             string(pod.UID),
		csiPodInfoKeyPrefix + "serviceAccount.name": pod.Spec.ServiceAccountName,
		csiPodInfoKeyPrefix + "ephemeral":           strconv.FormatBool(mode == storagev1.VolumeLifecycleEphemeral),
	}
}

// podVolData is the vol_data.json beside a pod's publish target.
func (v csiVolume) podVolData(nodeName string) map[string]string {
	return map[string]string{
		volDataSpecVolID: v.specName, volDataVolHandle: v.handle, volDataDriverName: v.driver,
		volDataNodeName: nodeName, volDataLifecycleMode: string(v.mode),
		volDataAttachmentID: csiAttachmentName(v.handle, v.driver, nodeName),
	}
}

// globalVolData is the vol_data.json beside the staging target.
func (v csiVolume) globalVolData() map[string]string {
	return map[string]string{volDataVolHandle: v.handle, volDataDriverName: v.driver}
}

// attachment reads a VolumeAttachment as upstream's waitForVolumeAttachment
// does: nil while it is not attached yet (the pod waits), its publish
// context once it is, an error for a failed attach or one being deleted.
func attachment(va *storagev1.VolumeAttachment) (publishContext map[string]string, attached bool, err error) {
	if va.DeletionTimestamp != nil {
		return nil, false, fmt.Errorf("volume attachment %s is being deleted", va.Name)
	}
	if va.Status.Attached {
		return va.Status.AttachmentMetadata, true, nil
	}
	if e := va.Status.AttachError; e != nil {
		return nil, false, fmt.Errorf("volume attachment %s failed: %s", va.Name, e.Message)
	}
	return nil, false, nil
}

// lastUser reports whether no vol_data.json of a pod other than uid (by
// UID) names the same driver and handle: then teardown may unstage.
func lastUser(uid types.UID, driver, handle string, others map[types.UID][]map[string]string) bool {
	for other, datas := range others {
		if other == uid {
			continue
		}
		for _, d := range datas {
			if d[volDataDriverName] == driver && d[volDataVolHandle] == handle {
				return false
			}
		}
	}
	return true
}
