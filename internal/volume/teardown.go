package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"

	"github.com/actorlet/actorlet/internal/volume/fdwalk"
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
	err := h.tearDownChildren(PodSubpathsDir(h.RootDir, uid), 3)
	// CSI volumes (block ones, then filesystems) before the others: their
	// drivers unpublish them (and unstage the last use). One that failed keeps the pod's volumes
	// directory whole, so that its vol_data.json, which says what to
	// unpublish, is there for the next try.
	if cerr := errors.Join(h.tearDownCSIBlock(uid), h.tearDownCSI(uid)); cerr != nil {
		err = errors.Join(err, cerr)
	} else {
		err = errors.Join(err, h.tearDownChildren(PodVolumesDir(h.RootDir, uid), 2))
	}
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
//
// It works on file descriptors, as every walk over a directory a container
// can write: each directory is opened with O_NOFOLLOW relative to its
// parent's descriptor and its entries are removed with unlinkat relative
// to it, so that a directory swapped for a symlink is removed as the link
// and never entered. A directory whose device or mount differs from its
// parent's is a mount point, as the mounter's check by path also says.
func removeAllOneFilesystem(m mount.Interface, path string) error {
	path = filepath.Clean(path)
	parent, err := unix.Open(filepath.Dir(path), fdwalk.Dir, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return &os.PathError{Op: "open", Path: filepath.Dir(path), Err: err}
	}
	defer unix.Close(parent)
	pm, err := mountOf(parent)
	if err != nil {
		return &os.PathError{Op: "statx", Path: filepath.Dir(path), Err: err}
	}
	return removeAt(m, parent, pm, path, filepath.Base(path))
}

// testHookBeforeDescend, when set, is called once removeAt has found name
// in parent to be a directory and no mount point, before it opens it: a
// test swaps the entry there, as a container could.
var testHookBeforeDescend func(path string)

// fsMount identifies the filesystem and the mount a directory is on.
type fsMount struct {
	dev   uint64
	mntID uint64 // 0 where the kernel does not tell (before Linux 5.8)
}

// mountOf is the filesystem and mount of the file fd refers to.
func mountOf(fd int) (fsMount, error) {
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW, unix.STATX_BASIC_STATS|unix.STATX_MNT_ID, &stx); err != nil {
		return fsMount{}, err
	}
	m := fsMount{dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor)}
	if stx.Mask&unix.STATX_MNT_ID != 0 {
		m.mntID = stx.Mnt_id
	}
	return m, nil
}

// removeAt removes name, at path, in the directory parent (on parentMnt)
// and everything under it on the same filesystem.
func removeAt(m mount.Interface, parent int, parentMnt fsMount, path, name string) error {
	err := removeEntry(parent, name)
	if err == nil || errors.Is(err, unix.ENOENT) {
		return nil
	}
	var st unix.Stat_t
	if serr := unix.Fstatat(parent, name, &st, unix.AT_SYMLINK_NOFOLLOW); serr != nil {
		if errors.Is(serr, unix.ENOENT) || errors.Is(serr, unix.ENOTDIR) {
			return nil
		}
		return &os.PathError{Op: "lstat", Path: path, Err: serr}
	}
	if !fdwalk.IsDir(&st) {
		return &os.PathError{Op: "remove", Path: path, Err: err}
	}
	isMnt, merr := m.IsMountPoint(path)
	if merr != nil {
		return merr
	}
	if isMnt {
		return fmt.Errorf("cannot delete directory %s: it is a mount point", path)
	}
	if testHookBeforeDescend != nil {
		testHookBeforeDescend(path)
	}
	dir, err := unix.Openat(parent, name, fdwalk.Dir, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil // removed meanwhile
	case errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		// No longer a directory (a symlink put in its place): remove
		// the entry itself, never what it points to.
		if err := unix.Unlinkat(parent, name, 0); err != nil && !errors.Is(err, unix.ENOENT) {
			return &os.PathError{Op: "remove", Path: path, Err: err}
		}
		return nil
	case err != nil:
		return &os.PathError{Op: "open", Path: path, Err: err}
	}
	dm, err := mountOf(dir)
	if err != nil {
		_ = unix.Close(dir)
		return &os.PathError{Op: "statx", Path: path, Err: err}
	}
	if dm.dev != parentMnt.dev || dm.mntID != parentMnt.mntID {
		_ = unix.Close(dir)
		return fmt.Errorf("cannot delete directory %s: it is a mount point", path)
	}
	names, first := fdwalk.ReadNames(dir)
	if first != nil {
		first = &os.PathError{Op: "readdir", Path: path, Err: first}
	}
	for _, n := range names {
		if err := removeAt(m, dir, dm, filepath.Join(path, n), n); err != nil && first == nil {
			first = err
		}
	}
	_ = unix.Close(dir)
	if err := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) && first == nil {
		first = &os.PathError{Op: "remove", Path: path, Err: err}
	}
	return first
}

// removeEntry is os.Remove relative to the directory parent: unlink, else
// rmdir, with the error that says why.
func removeEntry(parent int, name string) error {
	e := unix.Unlinkat(parent, name, 0)
	if e == nil || errors.Is(e, unix.ENOENT) {
		return e
	}
	e1 := unix.Unlinkat(parent, name, unix.AT_REMOVEDIR)
	if e1 == nil || errors.Is(e1, unix.ENOENT) {
		return e1
	}
	// Both failed: unlink's error unless it was only "a directory".
	if !errors.Is(e1, unix.ENOTDIR) {
		e = e1
	}
	return e
}
