package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/volume/atomicwriter"
	"github.com/actorlet/actorlet/internal/volume/ownership"
)

// contentDirPerm is the mode upstream's emptyDir gives its directory; the
// content plugins set up their directory through a wrapped emptyDir.
const contentDirPerm os.FileMode = 0o777

// setUpContent sets up a configMap, secret, downwardAPI or projected
// volume as upstream's plugins do: the payload is collected first (a
// missing object leaves nothing on disk), then the directory is set up as
// the emptyDir upstream wraps (on disk for configMap; a tmpfs for secret,
// downwardAPI and projected, so that secrets and tokens never reach the
// disk), the mount points of volumes nested in it are made, and the
// payload is written by the atomic writer, with fsGroup ownership applied
// before it is published.
//
// Called again, it reuses the directory (a tmpfs already mounted is not
// mounted over) and rewrites only a changed payload: that is the refresh
// of a running pod's volume.
func (h *Host) setUpContent(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	plugin, memory := contentPlugin(vol)
	payload, err := h.contentPayload(ctx, pod, vol)
	if err != nil {
		return Mounted{}, err
	}

	dir := VolumeDir(h.RootDir, pod.UID, plugin, vol.Name)
	_, err = os.Lstat(filepath.Join(dir, atomicwriter.DataDirName))
	first := errors.Is(err, fs.ErrNotExist)
	if memory {
		// Sized as the memory emptyDir upstream wraps it in.
		err = h.mountTmpfs(dir, emptyDirMemorySize(h.NodeAllocatable.Memory(), nil, pod))
	} else {
		err = makeContentDir(dir)
	}
	if err != nil {
		return Mounted{}, err
	}
	fsGroup := contentFSGroup(pod)
	if first {
		// The wrapped emptyDir's own ownership change, read-write, which
		// upstream does once, when it first sets the directory up, and
		// whose error it ignores: the writer's change below reports.
		_ = ownership.Set(dir, fsGroup, nil, false)
	}
	if err := makeNestedMountpoints(vol.Name, dir, pod); err != nil {
		return Mounted{}, err
	}
	// As upstream, the whole volume (the new files may not be the only
	// ones) is given to fsGroup, read-only, with no fsGroupChangePolicy:
	// upstream's content plugins pass none, so every write walks it.
	setPerms := func(string) error { return ownership.Set(dir, fsGroup, nil, true) }
	if err := atomicwriter.Write(dir, payload, setPerms); err != nil {
		return Mounted{}, err
	}
	return Mounted{Path: dir, ReadOnly: true, SELinuxRelabel: true}, nil
}

// contentPlugin names the directory of a content volume's plugin and says
// whether upstream backs it with memory (its wrapped emptyDir's medium).
func contentPlugin(vol *v1.Volume) (plugin string, memory bool) {
	src := &vol.VolumeSource
	switch {
	case src.Secret != nil:
		return PluginSecret, true
	case src.DownwardAPI != nil:
		return PluginDownwardAPI, true
	case src.Projected != nil:
		return PluginProjected, true
	}
	// configMap: upstream keeps it on disk until tmpfs memory can be
	// charged to the pod's cgroup.
	return PluginConfigMap, false
}

// contentPayload collects the files of a content volume.
func (h *Host) contentPayload(ctx context.Context, pod *v1.Pod, vol *v1.Volume) (map[string]atomicwriter.FileProjection, error) {
	src := &vol.VolumeSource
	switch {
	case src.ConfigMap != nil:
		return h.configMapVolumePayload(ctx, pod, vol.Name, src.ConfigMap)
	case src.Secret != nil:
		return h.secretVolumePayload(ctx, pod, vol.Name, src.Secret)
	case src.DownwardAPI != nil:
		return downwardAPIPayload(src.DownwardAPI.Items, pod, h.NodeAllocatable, src.DownwardAPI.DefaultMode)
	case src.Projected != nil:
		return h.projectedPayload(ctx, pod, vol.Name, src.Projected)
	}
	return nil, fmt.Errorf("volume %q is not a content volume", vol.Name)
}

// makeContentDir is upstream's emptyDir setupDir: the directory with mode 0777
// whatever the umask.
func makeContentDir(dir string) error {
	if err := os.MkdirAll(dir, contentDirPerm); err != nil {
		return err
	}
	info, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if info.Mode().Perm() != contentDirPerm {
		return os.Chmod(dir, contentDirPerm)
	}
	return nil
}

// contentFSGroup is the pod's fsGroup, as upstream's mounter arguments carry it.
func contentFSGroup(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// errNoClient is upstream's error for a volume that needs the API on a
// node without a client.
func errNoClient(kind, volName string) error {
	return fmt.Errorf("cannot setup %s volume %v because kube client is not configured", kind, volName)
}
