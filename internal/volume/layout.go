package volume

import (
	"path/filepath"
	"strconv"

	"k8s.io/apimachinery/pkg/types"
)

// Plugin directories: upstream's plugin names with "/" escaped to "~", as
// the directories under ROOT/pods/UID/volumes are named.
const (
	PluginEmptyDir    = "kubernetes.io~empty-dir"
	PluginConfigMap   = "kubernetes.io~configmap"
	PluginSecret      = "kubernetes.io~secret"
	PluginDownwardAPI = "kubernetes.io~downward-api"
	PluginProjected   = "kubernetes.io~projected"
	PluginLocal       = "kubernetes.io~local-volume"
	PluginCSI         = "kubernetes.io~csi"
)

// PodDir is ROOT/pods/UID, the pod's directory.
func PodDir(root string, uid types.UID) string {
	return filepath.Join(root, "pods", string(uid))
}

// PodVolumesDir is ROOT/pods/UID/volumes.
func PodVolumesDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "volumes")
}

// VolumeDir is ROOT/pods/UID/volumes/PLUGIN/NAME, where a volume of the
// pod lives on the host.
func VolumeDir(root string, uid types.UID, plugin, name string) string {
	return filepath.Join(PodVolumesDir(root, uid), plugin, name)
}

// PodSubpathsDir is ROOT/pods/UID/volume-subpaths, where the bind mounts
// of subPath volume mounts live.
func PodSubpathsDir(root string, uid types.UID) string {
	return filepath.Join(PodDir(root, uid), "volume-subpaths")
}

// SubpathDir is ROOT/pods/UID/volume-subpaths/VOLUME/CONTAINER/INDEX, the
// bind mount of the subPath of the container's INDEXth volume mount.
func SubpathDir(root string, uid types.UID, volume, container string, index int) string {
	return filepath.Join(PodSubpathsDir(root, uid), volume, container, strconv.Itoa(index))
}
