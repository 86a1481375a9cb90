package volume

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

// maxStackedMounts bounds the unmounts of one directory: a directory
// mounted over several times (a crash between a mount and its record)
// needs one unmount each, and a mount that comes back after each unmount
// must end in an error rather than a loop.
const maxStackedMounts = 8

// TearDownPod unmounts every mount under the pod's volumes and
// volume-subpaths directories and removes them and the pod's directory.
// It never removes through a mount point: a mount it cannot unmount is an
// error and its directory stays. It goes on past a volume it cannot tear
// down, so that one stuck mount leaves only itself, and reports them all.
// A pod directory that does not exist is torn down already.
func (h *Host) TearDownPod(uid types.UID) error {
	err := errors.Join(
		h.tearDownChildren(PodSubpathsDir(h.RootDir, uid), 3),
		h.tearDownChildren(PodVolumesDir(h.RootDir, uid), 2),
	)
	if err != nil {
		return fmt.Errorf("tearing down the volumes of pod %s: %w", uid, err)
	}
	return removeAllOneFilesystem(h.Mounter, PodDir(h.RootDir, uid))
}

// PodDirs lists the UIDs of the pod directories under ROOT/pods.
func (h *Host) PodDirs() ([]types.UID, error) {
	entries, err := os.ReadDir(filepath.Join(h.RootDir, "pods"))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var uids []types.UID
	for _, e := range entries {
		if e.IsDir() {
			uids = append(uids, types.UID(e.Name()))
		}
	}
	return uids, nil
}

// tearDownChildren tears down the mount points depth levels below dir:
// ROOT/pods/UID/volumes/PLUGIN/NAME (depth 2) and
// ROOT/pods/UID/volume-subpaths/VOLUME/CONTAINER/INDEX (depth 3). Each is
// unmounted, then removed with what it holds (an emptyDir's files) on its
// own filesystem only; the directories above them are removed once empty.
func (h *Host) tearDownChildren(dir string, depth int) error {
	if depth == 0 {
		if err := h.unmountAll(dir); err != nil {
			return err
		}
		return removeAllOneFilesystem(h.Mounter, dir)
	}
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		errs = append(errs, h.tearDownChildren(filepath.Join(dir, e.Name()), depth-1))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !os.IsNotExist(err) {
		return err
	}
	return nil
}

// unmountAll unmounts path until it is no mount point. It checks with
// IsMountPoint, which sees bind mounts of a directory of the same
// filesystem (a local volume, a subPath), where a device comparison would
// not. It unmounts plainly, never lazily: a busy mount stays and is
// reported, as upstream's teardown does.
func (h *Host) unmountAll(path string) error {
	for range maxStackedMounts {
		isMnt, err := h.Mounter.IsMountPoint(path)
		switch {
		case os.IsNotExist(err):
			return nil
		case err != nil && !mount.IsCorruptedMnt(err):
			return fmt.Errorf("checking mount point %s: %w", path, err)
		case err == nil && !isMnt:
			return nil
		}
		if err := h.Mounter.Unmount(path); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s is still mounted after %d unmounts", path, maxStackedMounts)
}

// removeAllOneFilesystem is upstream's removeall.RemoveAllOneFilesystem,
// like `rm -rf --one-file-system` but failing instead: it removes path
// and everything under it, and refuses to enter a directory that is a
// mount point, whose files belong to another filesystem (a tmpfs still
// mounted, a container's mount propagated back, the node's own data bound
// in). It removes what it can and returns the first error.
func removeAllOneFilesystem(m mount.Interface, path string) error {
	err := os.Remove(path)
	if err == nil || os.IsNotExist(err) {
		return nil
	}
	fi, serr := os.Lstat(path)
	if serr != nil {
		if os.IsNotExist(serr) {
			return nil
		}
		return serr
	}
	if !fi.IsDir() {
		return err
	}
	isMnt, merr := m.IsMountPoint(path)
	if merr != nil {
		return merr
	}
	if isMnt {
		return fmt.Errorf("cannot delete directory %s: it is a mount point", path)
	}
	f, err := os.Open(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil
		}
		return err
	}
	var first error
	for {
		names, rerr := f.Readdirnames(100)
		for _, name := range names {
			if err := removeAllOneFilesystem(m, filepath.Join(path, name)); err != nil && first == nil {
				first = err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			break
		}
		if rerr != nil {
			if first == nil {
				first = rerr
			}
			break
		}
	}
	_ = f.Close()
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) && first == nil {
		first = err
	}
	return first
}
