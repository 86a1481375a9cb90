package volume

import (
	"context"
	"errors"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// OWNER: helper H2 (emptyDir, hostPath, claims, teardown, subpaths, stats).

// setUpEmptyDir sets up an emptyDir: a directory of mode 0777 on disk, or
// a tmpfs sized as upstream for medium Memory; fsGroup ownership.
func (h *Host) setUpEmptyDir(pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	return Mounted{}, errors.New("emptyDir: not implemented yet")
}

// setUpHostPath checks a hostPath volume's type, creating what
// DirectoryOrCreate and FileOrCreate ask for with upstream's modes.
func (h *Host) setUpHostPath(vol *v1.Volume) (Mounted, error) {
	return Mounted{}, errors.New("hostPath: not implemented yet")
}

// setUpClaim resolves a persistentVolumeClaim to its bound PV and sets up
// a hostPath or local PV (a local PV's node affinity must admit this node);
// any other PV is refused with a clear reason.
func (h *Host) setUpClaim(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	return Mounted{}, errors.New("persistentVolumeClaim: not implemented yet")
}

// TearDownPod unmounts every mount under the pod's volumes and
// volume-subpaths directories and removes them and the pod's directory.
// It never removes through a mount point: a mount it cannot unmount is an
// error and its directory stays.
func (h *Host) TearDownPod(uid types.UID) error {
	return errors.New("teardown: not implemented yet")
}

// PodDirs lists the UIDs of the pod directories under ROOT/pods.
func (h *Host) PodDirs() ([]types.UID, error) {
	return nil, errors.New("PodDirs: not implemented yet")
}

// PrepareSubpath bind-mounts subPath of the volume at volPath for the
// container's index-th volume mount, at SubpathDir, and returns that path.
// It follows upstream's safe subpath rules: subPath is resolved inside
// volPath component by component without following any symlink out of
// it, so that a symlink planted by a container never reaches outside the
// volume. A subPath that does not exist is created as a directory, as
// upstream.
func (h *Host) PrepareSubpath(uid types.UID, volume, volPath, container string, index int, subPath string) (string, error) {
	return "", errors.New("subPath: not implemented yet")
}
