package stats

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/volume"
)

// PodSpecs looks up the spec of a pod by its UID; nil when the pod is not
// known. The summary names a pod's volumes from it.
type PodSpecs func(uid string) *v1.Pod

// volumeRef is what the summary says of a volume directory beyond its
// figures: the volume's name, its claim, and whether its usage counts in
// the pod's ephemeral storage.
type volumeRef struct {
	name   string
	pvcRef *statsapi.PVCReference
	// ephemeral is upstream's IsLocalEphemeralVolume of the volume's
	// spec; nil when there is no spec to tell (the pod is not known, or
	// the directory matches none of its volumes): the plugin and the
	// filesystem then decide, as volume.PodVolume.Ephemeral.
	ephemeral *bool
}

// claimName is the claim a volume of the pod is backed by, as upstream's
// volume stats calculator: a persistentVolumeClaim's, or a generic
// ephemeral volume's (<pod name>-<volume name>); "" for any other volume.
func claimName(pod *v1.Pod, vol *v1.Volume) string {
	switch {
	case vol.PersistentVolumeClaim != nil:
		return vol.PersistentVolumeClaim.ClaimName
	case vol.Ephemeral != nil:
		return ephemeral.VolumeClaimName(pod, vol)
	}
	return ""
}

// nameVolume names a volume directory as upstream's summary names the
// volume: by the pod's volume name, with the claim of a PVC-backed one.
// The directory of a claim's volume (CSI or local) is named by its
// PersistentVolume, which boundPV (claim name → PV name) tells; any other
// directory is named by the volume. Without pod, or for a directory none
// of its volumes owns, the directory's name stays.
func nameVolume(pod *v1.Pod, boundPV map[string]string, dir volume.PodVolume) volumeRef {
	if pod == nil {
		return volumeRef{name: dir.Name}
	}
	byPV := dir.Plugin == volume.PluginCSI || dir.Plugin == volume.PluginLocal
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		claim := claimName(pod, vol)
		switch {
		case claim != "":
			if !byPV || boundPV[claim] != dir.Name {
				continue
			}
		case vol.Name != dir.Name:
			continue
		}
		ref := volumeRef{name: vol.Name, ephemeral: ptrTo(isLocalEphemeral(vol))}
		if claim != "" {
			ref.pvcRef = &statsapi.PVCReference{Name: claim, Namespace: pod.Namespace}
		}
		return ref
	}
	return volumeRef{name: dir.Name}
}

// isLocalEphemeral is upstream's IsLocalEphemeralVolume: the volumes whose
// usage counts in the pod's ephemeral storage.
func isLocalEphemeral(vol *v1.Volume) bool {
	return vol.GitRepo != nil || (vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault) || vol.ConfigMap != nil
}
