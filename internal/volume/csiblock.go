package volume

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
)

// losetupTimeout bounds one losetup: it only asks the kernel for a loop
// device, so a hung one stalls the pod that called it and no more.
const losetupTimeout = 30 * time.Second

// csiCall is what setUpCSI learnt before the volume's own steps: the
// driver's endpoint, its CSIDriver policy and Node capabilities, and the
// VolumeAttachment's publish context.
type csiCall struct {
	drv            registry.Driver
	policy         csiDriverPolicy
	caps           csi.NodeCapabilities
	publishContext map[string]string
}

// mapCSIBlock maps a block volume into the pod as upstream's MapVolume:
// NodeStageVolume once per node (when the driver stages), NodePublishVolume
// onto a file per pod, a bind mount of that device in the volume's global
// map directory, held open by a loop device so that the device cannot be
// silently replaced while in use, and the pod's symlink to it, which the
// runtime resolves for the containers' volumeDevices. Each step is
// idempotent: a set-up again (a restart) finds what is there.
func (h *Host) mapCSIBlock(ctx, callCtx context.Context, pod *v1.Pod, v csiVolume, c csiCall) (Mounted, error) {
	key := CSIUniqueVolumeName(v.driver, v.handle)
	unlock, err := h.csi.lock(ctx, key)
	if err != nil {
		return Mounted{}, err
	}
	defer unlock()
	paths := blockPaths(h.RootDir, pod.UID, v.specName)
	m := Mounted{Device: paths.link, ReadOnly: v.readOnly, CSIExpandable: v.pv != nil && !v.readOnly && c.caps.ExpandVolume}
	// Published before this set-up: an expansion now is online.
	online := isDevice(paths.publish)
	if v.needsAttach(c.policy) {
		m.UniqueName = key
	}
	// Written first, as upstream's NewBlockVolumeMapper: whatever the
	// driver did, teardown finds the volume's driver and handle.
	if err := os.MkdirAll(paths.data, 0o750); err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: failed to create data dir %s: %w", paths.data, err)
	}
	if err := saveVolData(paths.data, v.blockVolData(h.NodeName)); err != nil {
		return Mounted{}, fmt.Errorf("kubernetes.io/csi: failed to save volume info data: %w", err)
	}
	if v.needsStage(c.caps) && !h.csi.marked(h.csi.staged, key) {
		secrets, err := h.csiSecrets(ctx, v.stageSecretRef)
		if err != nil {
			return Mounted{}, fmt.Errorf("failed to get NodeStageSecretRef %s/%s: %w", v.stageSecretRef.Namespace, v.stageSecretRef.Name, err)
		}
		if err := os.MkdirAll(paths.staging, 0o750); err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: blockMapper.stageVolumeForBlock failed to create dir %s: %w", paths.staging, err)
		}
		if err := csi.NodeStageVolume(callCtx, c.drv.Endpoint, v.blockStageRequest(c.caps, paths.staging, c.publishContext, secrets)); err != nil {
			return Mounted{}, fmt.Errorf("MapVolume.SetUpDevice failed: %w", err)
		}
		h.csi.mark(h.csi.staged, key, true)
	}
	// The pod's link before the publish: it is the pod's record of the
	// volume, which teardown follows to unpublish. The runtime is given
	// it only once the set-up succeeded.
	if err := os.MkdirAll(filepath.Dir(paths.link), 0o750); err != nil {
		return Mounted{}, err
	}
	if err := replaceSymlink(paths.publish, paths.link); err != nil {
		return Mounted{}, fmt.Errorf("MapVolume.MapBlockVolume failed: %w", err)
	}
	if !isDevice(paths.publish) {
		secrets, err := h.csiSecrets(ctx, v.publishSecretRef)
		if err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: blockMapper.publishVolumeForBlock failed to get NodePublishSecretRef %s/%s: %w", v.publishSecretRef.Namespace, v.publishSecretRef.Name, err)
		}
		if err := os.MkdirAll(paths.publishDir, 0o750); err != nil {
			return Mounted{}, fmt.Errorf("kubernetes.io/csi: blockMapper.publishVolumeForBlock failed to create dir %s: %w", paths.publishDir, err)
		}
		if err := csi.NodePublishVolume(callCtx, c.drv.Endpoint, v.blockPublishRequest(c.policy, c.caps, pod, paths, c.publishContext, secrets)); err != nil {
			return Mounted{}, fmt.Errorf("MapVolume.MapPodDevice failed: %w", err)
		}
		if !isDevice(paths.publish) {
			return Mounted{}, fmt.Errorf("MapVolume.MapPodDevice failed: driver %s put no device at %s", v.driver, paths.publish)
		}
	}
	if err := h.bindDevice(paths.publish, paths.globalMap, paths.globalMapPod); err != nil {
		return Mounted{}, fmt.Errorf("MapVolume.MapBlockVolume failed: %w", err)
	}
	lctx, cancel := context.WithTimeout(ctx, losetupTimeout)
	defer cancel()
	if err := attachLoop(lctx, paths.globalMapPod); err != nil {
		return Mounted{}, fmt.Errorf("MapVolume.MapBlockVolume failed: blkUtil.AttachFileDevice failed. globalMapPath:%s, podUID: %s: %w", paths.globalMap, pod.UID, err)
	}
	// As upstream's map: the claim grown is expanded once mapped, on the
	// pod's publish path; at each resync while mapped (online).
	if err := h.expandCSI(ctx, pod, v, c.drv, c.caps, paths.publish, online); err != nil {
		return Mounted{}, err
	}
	return m, nil
}

// bindDevice bind-mounts the device at file into dir as name, as
// upstream's mapBindMountDevice: a device there already is the mount.
func (h *Host) bindDevice(device, dir, file string) error {
	if isDevice(file) {
		return nil
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(file, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := h.Mounter.MountSensitiveWithoutSystemd(device, file, "", []string{"bind"}, nil); err != nil {
		return fmt.Errorf("failed to bind mount devicePath: %s to linkPath %s: %w", device, file, err)
	}
	return nil
}

// tearDownCSIBlock unmaps every block volume of the pod that its device
// map directory holds (so after a restart as well), in upstream's order:
// the loop device released, the pod's link removed, the global bind mount
// undone, NodeUnpublishVolume; then, once no other pod maps the volume,
// NodeUnstageVolume and the volume's directories removed. A volume it
// cannot unmap keeps its link, for the next try, and is reported.
func (h *Host) tearDownCSIBlock(uid types.UID) error {
	return eachEntry(filepath.Join(PodVolumeDevicesDir(h.RootDir, uid), PluginCSI), func(name string) error {
		return h.unmapCSIBlock(uid, name)
	})
}

func (h *Host) unmapCSIBlock(uid types.UID, specName string) error {
	paths := blockPaths(h.RootDir, uid, specName)
	data, err := loadVolData(paths.data)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: unmapper failed to load volume data file [%s]: %w", paths.data, err)
	}
	driver, handle := data[volDataDriverName], data[volDataVolHandle]
	ctx, cancel := context.WithTimeout(context.Background(), CSITimeout)
	defer cancel()
	unlock, err := h.csi.lock(ctx, CSIUniqueVolumeName(driver, handle))
	if err != nil {
		return err
	}
	defer unlock()
	drv, err := h.csiDriver(driver)
	if err != nil {
		return fmt.Errorf("kubernetes.io/csi: blockMapper.UnmapPodDevice failed to get CSI client: %w", err)
	}
	lctx, lcancel := context.WithTimeout(ctx, losetupTimeout)
	defer lcancel()
	if err := detachLoop(lctx, paths.globalMapPod); err != nil {
		return fmt.Errorf("UnmapVolume.UnmapBlockVolume failed: blkUtil.DetachFileDevice failed. globalUnmapPath:%s, podUID: %s: %w", paths.globalMap, uid, err)
	}
	if err := h.unbindDevice(paths.globalMapPod); err != nil {
		return fmt.Errorf("UnmapVolume.UnmapBlockVolume failed: %w", err)
	}
	if err := csi.NodeUnpublishVolume(ctx, drv.Endpoint, handle, paths.publish); err != nil {
		return fmt.Errorf("UnmapVolume.UnmapPodDevice failed: %w", err)
	}
	// The driver removes the target, as the CSI spec says; one it left,
	// no longer a mount, is removed here.
	if err := h.removeUnmounted(paths.publish); err != nil {
		return fmt.Errorf("UnmapVolume.UnmapPodDevice failed to clean %s: %w", paths.publish, err)
	}
	// The link goes last: until the device is unpublished it is the
	// pod's record of the volume.
	if err := os.Remove(paths.link); err != nil && !os.IsNotExist(err) {
		return err
	}
	others, err := h.blockMaps()
	if err != nil {
		return err
	}
	if !lastBlockUser(uid, specName, others) {
		return nil
	}
	if _, err := os.Stat(paths.staging); err == nil {
		if err := csi.NodeUnstageVolume(ctx, drv.Endpoint, handle, paths.staging); err != nil {
			return fmt.Errorf("UnmapDevice.TearDownDevice failed: blockMapper.unstageVolumeForBlock failed: %w", err)
		}
	}
	h.csi.mark(h.csi.staged, CSIUniqueVolumeName(driver, handle), false)
	// What is left is empty directories and vol_data.json: none of it a
	// mount, which removing refuses.
	for _, d := range []string{paths.staging, paths.publishDir, paths.volumeDir} {
		if err := removeAllOneFilesystem(h.Mounter, d); err != nil {
			return fmt.Errorf("UnmapDevice.TearDownDevice failed to clean %s: %w", d, err)
		}
	}
	return nil
}

// unbindDevice undoes bindDevice, as upstream's unmapBindMountDevice.
func (h *Host) unbindDevice(file string) error {
	if isDevice(file) {
		if err := h.Mounter.Unmount(file); err != nil {
			return fmt.Errorf("failed to unmount linkPath %s: %w", file, err)
		}
	}
	if err := os.Remove(file); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("failed to remove file %s: %w", file, err)
	}
	return nil
}

// blockMaps are the block volumes each pod on the node maps, by name.
func (h *Host) blockMaps() (map[types.UID][]string, error) {
	uids, err := h.PodDirs()
	if err != nil {
		return nil, err
	}
	out := map[types.UID][]string{}
	for _, uid := range uids {
		entries, err := os.ReadDir(filepath.Join(PodVolumeDevicesDir(h.RootDir, uid), PluginCSI))
		if err != nil {
			continue
		}
		for _, e := range entries {
			out[uid] = append(out[uid], e.Name())
		}
	}
	return out, nil
}

// replaceSymlink makes link point at target, replacing what is there (a
// link from before a reboot may be stale), as upstream's
// mapSymlinkDevice.
func replaceSymlink(target, link string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	if err := os.Remove(link); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Symlink(target, link)
}

// isDevice: path is a device file (not followed if a symlink).
func isDevice(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeDevice != 0
}

// attachLoop gives the device at path a loop device unless one is there,
// as upstream's AttachFileDevice: the loop device holds the device open.
func attachLoop(ctx context.Context, path string) error {
	if dev, err := loopDeviceOf(path); err != nil || dev != "" {
		return err
	}
	if out, err := exec.CommandContext(ctx, "losetup", "-f", path).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -f %s failed: %w: %s", path, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// detachLoop releases the loop device of path, if any, as upstream's
// DetachFileDevice.
func detachLoop(ctx context.Context, path string) error {
	dev, err := loopDeviceOf(path)
	if err != nil || dev == "" {
		return err
	}
	if out, err := exec.CommandContext(ctx, "losetup", "-d", dev).CombinedOutput(); err != nil {
		if _, serr := os.Stat(dev); os.IsNotExist(serr) {
			return nil
		}
		return fmt.Errorf("losetup -d %s failed: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// sysBlock is where the kernel lists block devices; a test points it
// elsewhere.
var sysBlock = "/sys/block"

// loopDeviceOf is the loop device whose backing file is path, "" when
// none, as upstream's getLoopDeviceFromSysfs.
func loopDeviceOf(path string) (string, error) {
	devices, err := filepath.Glob(filepath.Join(sysBlock, "loop*"))
	if err != nil {
		return "", err
	}
	for _, d := range devices {
		b, err := os.ReadFile(filepath.Join(d, "loop", "backing_file"))
		if err != nil {
			continue
		}
		if backingFile(string(b)) == path {
			return "/dev/" + filepath.Base(d), nil
		}
	}
	return "", nil
}

// backingFile is a loop device's backing file as sysfs tells it: without
// the newline, and without the " (deleted)" the kernel adds once the file
// is gone.
func backingFile(s string) string {
	s = strings.TrimSpace(s)
	return strings.TrimSpace(strings.TrimSuffix(s, "(deleted)"))
}
