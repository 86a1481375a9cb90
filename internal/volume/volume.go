package volume

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/mount-utils"

	"github.com/actorlet/actorlet/internal/csi/registry"
)

// Mounted is one of a pod's volumes set up on the host, as its containers'
// mounts need it.
type Mounted struct {
	// Name is the volume's name in the pod's spec.
	Name string
	// Path is the host path that containers' volume mounts bind.
	Path string
	// ReadOnly: containers get it read-only whatever their volume mount
	// says (configMap, secret, downwardAPI and projected volumes, as
	// upstream's ReadOnlyAPIDataVolumes; a read-only PVC).
	ReadOnly bool
	// SELinuxRelabel: the runtime may relabel it for the container, as
	// upstream's plugins that support SELinux relabelling say.
	SELinuxRelabel bool
	// HostPathType is set for a hostPath volume: its Path is the node's
	// own path, which teardown never touches.
	HostPath bool
	// Image is set for an image volume: the image's reference as the pod
	// names it. Such a volume has no Path: the container runtime mounts
	// the image (CRI Mount.image), read-only, once the sync pass has
	// pulled it.
	Image string
	// ImageRef is the pulled image of an image volume, which the runtime
	// mounts: set by the sync pass that pulled it, never by SetUp.
	ImageRef string
	// UniqueName is set for a volume that the attach-detach controller
	// attaches (a CSI volume whose driver requires attach): upstream's
	// unique volume name, which node.status.volumesInUse lists while it
	// is mounted, so that the controller does not detach it under a pod.
	UniqueName string
	// Device is set for a raw block volume (a PV of volumeMode Block):
	// the pod's symlink to the device, which containers' volumeDevices
	// are given. Such a volume has no Path.
	Device string
	// CSIRepublish: the CSI driver asks for NodePublishVolume again
	// periodically (requiresRepublish), so the volume is set up again at
	// every resync, as content volumes are.
	CSIRepublish bool
	// CSIExpandable: a CSI PV mounted read-write by a driver that grows
	// volumes on the node, whose size is checked again at every resync,
	// as upstream's pod resync finds a claim to expand while it is in use.
	CSIExpandable bool
}

// Sources are the API objects that volumes read, as the node reads them:
// the Node authorizer lets a node read only what the pods bound to it
// reference. A missing object is reported with an error for which
// apierrors.IsNotFound holds, so that an optional source can tell.
type Sources interface {
	ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error)
	Secret(ctx context.Context, namespace, name string) (*v1.Secret, error)
	// ServiceAccountToken returns a token of the pod's service account for
	// the projection's audience and lifetime (its path unused), bound to
	// the pod, with its expiry; a cached one until upstream's token
	// manager would refresh it. Projected volumes and CSI drivers'
	// tokenRequests share it.
	ServiceAccountToken(ctx context.Context, pod *v1.Pod, p *v1.ServiceAccountTokenProjection) (authenticationv1.TokenRequestStatus, error)
	// ClusterTrustBundles returns the PEM bundle the projection names (by
	// name, or by signer and label selector).
	ClusterTrustBundles(ctx context.Context, p *v1.ClusterTrustBundleProjection) ([]byte, error)
	// PodCertificateCredentials returns the PEM private key and certificate
	// chain issued for the podCertificate projection at sourceIndex of the
	// pod's projected volume volumeName, or an error while none is issued
	// (the set-up fails and is retried) or after the request was denied or
	// failed.
	PodCertificateCredentials(ctx context.Context, pod *v1.Pod, volumeName string, sourceIndex int) (key, chain []byte, err error)
	PersistentVolumeClaim(ctx context.Context, namespace, name string) (*v1.PersistentVolumeClaim, error)
	PersistentVolume(ctx context.Context, name string) (*v1.PersistentVolume, error)
	// PatchPersistentVolumeClaimStatus patches the claim's status (a
	// node expansion's marks).
	PatchPersistentVolumeClaimStatus(ctx context.Context, namespace, name string, patch []byte) (*v1.PersistentVolumeClaim, error)
	// CSIDriver and VolumeAttachment read the cluster-scoped objects of
	// CSI volumes, which the Node authorizer lets every node read.
	CSIDriver(ctx context.Context, name string) (*storagev1.CSIDriver, error)
	VolumeAttachment(ctx context.Context, name string) (*storagev1.VolumeAttachment, error)
}

// Host is what setting up volumes needs of the node.
type Host struct {
	// RootDir is the kubelet's root directory (ROOT).
	RootDir string
	// NodeName names this node: a local PersistentVolume must be
	// reachable from it.
	NodeName string
	// NodeAllocatable sizes memory-backed emptyDirs of pods without a
	// memory limit, and resolves downward API resource limits that a
	// container does not set.
	NodeAllocatable v1.ResourceList
	// Sources reads API objects; nil on a node without an API server, where
	// only volumes that need none can be set up.
	Sources Sources
	// Mounter makes and inspects mounts.
	Mounter mount.Interface
	// CSIDrivers are the CSI drivers registered on the node; nil: none.
	CSIDrivers registry.Reader
	// KubeletAttaches is enableControllerAttachDetach: false, where
	// upstream's kubelet attaches volumes itself; this node does not, and
	// refuses volumes that need an attach rather than wait for one that
	// nobody makes.
	KubeletAttaches bool
	// Events, when set, records the events of what the set-up does besides
	// mounting (a CSI volume's node expansion).
	Events record.EventRecorder

	csi csiState
}

// SetUpError is a volume that could not be set up, with upstream's wording
// for the FailedMount event.
type SetUpError struct {
	Volume string
	Err    error
}

func (e *SetUpError) Error() string {
	if x, ok := e.Err.(*ExpandError); ok {
		// Mounted, but not grown: upstream's own wording.
		return x.Error()
	}
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.Volume, e.Err)
}

func (e *SetUpError) Unwrap() error { return e.Err }

// SetUp sets up one volume of pod and returns where it is. It is
// idempotent: called again, it reuses what is there and refreshes the
// content of volumes that have any (configMap, secret, downwardAPI,
// projected). The error, if any, is a *SetUpError.
func (h *Host) SetUp(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	m, err := h.setUp(ctx, pod, vol)
	if err != nil {
		return Mounted{}, &SetUpError{Volume: vol.Name, Err: err}
	}
	m.Name = vol.Name
	return m, nil
}

func (h *Host) setUp(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	src := &vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return h.setUpEmptyDir(pod, vol)
	case src.HostPath != nil:
		return h.setUpHostPath(vol)
	case src.ConfigMap != nil, src.Secret != nil, src.DownwardAPI != nil, src.Projected != nil:
		return h.setUpContent(ctx, pod, vol)
	case src.PersistentVolumeClaim != nil:
		return h.setUpClaim(ctx, pod, vol)
	case src.Ephemeral != nil:
		return h.setUpEphemeral(ctx, pod, vol)
	case src.CSI != nil:
		return h.setUpCSI(ctx, pod, csiFromInline(pod, vol))
	case src.Image != nil:
		// Nothing on the host, as upstream's image plugin: the sync pass
		// pulls the image with the pod's pull secrets and the runtime
		// mounts it into each container, always read-only and never
		// relabelled.
		return Mounted{Image: src.Image.Reference, ReadOnly: true}, nil
	}
	return Mounted{}, fmt.Errorf("volume type %s is not supported by this node: it needs an attach or a CSI driver", Type(vol))
}

// HasContent reports whether a volume's files come from API objects or the
// pod itself and are refreshed while the pod runs.
func HasContent(vol *v1.Volume) bool {
	src := &vol.VolumeSource
	return src.ConfigMap != nil || src.Secret != nil || src.DownwardAPI != nil || src.Projected != nil
}

// Type names a volume's source as the API does ("emptyDir", "hostPath",
// ...), for messages.
func Type(vol *v1.Volume) string {
	src := &vol.VolumeSource
	switch {
	case src.EmptyDir != nil:
		return "emptyDir"
	case src.HostPath != nil:
		return "hostPath"
	case src.ConfigMap != nil:
		return "configMap"
	case src.Secret != nil:
		return "secret"
	case src.DownwardAPI != nil:
		return "downwardAPI"
	case src.Projected != nil:
		return "projected"
	case src.PersistentVolumeClaim != nil:
		return "persistentVolumeClaim"
	case src.Ephemeral != nil:
		return "ephemeral"
	case src.CSI != nil:
		return "csi"
	case src.Image != nil:
		return "image"
	case src.NFS != nil:
		return "nfs"
	case src.ISCSI != nil:
		return "iscsi"
	case src.FC != nil:
		return "fc"
	}
	return "unknown"
}
