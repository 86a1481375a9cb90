// Package ownership gives a volume's files to the pod's fsGroup, as
// upstream's SetVolumeOwnership (pkg/volume/volume_linux.go): every file
// and directory gets the group, group read (and write unless the volume is
// read-only) permission, directories also group execute and setgid, so
// that what the pod creates there inherits the group.
package ownership

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	v1 "k8s.io/api/core/v1"
)

// Upstream's masks: what a file's mode gains.
const (
	rwMask   = os.FileMode(0o660)
	roMask   = os.FileMode(0o440)
	execMask = os.FileMode(0o110)
)

// Set gives dir and everything under it to fsGroup. It does nothing when
// fsGroup is nil, and when policy is OnRootMismatch and dir itself already
// has the group, the permission bits and setgid (upstream's
// requiresPermissionChange); otherwise (policy nil or Always) it walks the
// whole tree. readOnly selects the read-only mask, as upstream does for
// volumes whose mounter says ReadOnly (configMap, secret, downwardAPI,
// projected).
//
// As upstream, a file whose group or mode cannot be changed does not stop
// the walk nor fail it (upstream logs it); an error reading a directory
// does.
func Set(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy, readOnly bool) error {
	if fsGroup == nil {
		return nil
	}
	if policy != nil && *policy == v1.FSGroupChangeOnRootMismatch && !RequiresChange(dir, *fsGroup, readOnly) {
		return nil
	}
	return walkDeep(dir, func(path string, info fs.FileInfo) {
		changeFile(path, *fsGroup, readOnly, info)
	})
}

// changeFile is upstream's changeFilePermission.
func changeFile(path string, fsGroup int64, readOnly bool, info fs.FileInfo) {
	_ = os.Lchown(path, -1, int(fsGroup))
	// chmod follows symlinks: the mode of a symlink (0777) given to its
	// target would override the mode the volume gave the target.
	if info.Mode()&os.ModeSymlink != 0 {
		return
	}
	mask := rwMask
	if readOnly {
		mask = roMask
	}
	if info.IsDir() {
		mask |= os.ModeSetgid | execMask
	}
	_ = os.Chmod(path, info.Mode()|mask)
}

// RequiresChange is upstream's requiresPermissionChange: whether dir is not
// already a directory of group fsGroup with setgid and at least the
// group bits Set would give it. Any doubt (dir unreadable) says yes.
func RequiresChange(dir string, fsGroup int64, readOnly bool) bool {
	info, err := os.Stat(dir)
	if err != nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok || st == nil || int64(st.Gid) != fsGroup {
		return true
	}
	if !info.IsDir() {
		return true
	}
	want := rwMask
	if readOnly {
		want = roMask
	}
	want |= execMask
	return info.Mode().Perm()&want != want || info.Mode()&os.ModeSetgid == 0
}

// walkDeep calls fn on every file under root without following symlinks,
// on a directory after its contents (so that a directory made read-only
// is still entered), and unsorted, as upstream's walkDeep.
func walkDeep(root string, fn func(string, fs.FileInfo)) error {
	info, err := os.Lstat(root)
	if err != nil {
		return err
	}
	return walk(root, info, fn)
}

func walk(path string, info fs.FileInfo, fn func(string, fs.FileInfo)) error {
	if info.IsDir() {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return err
		}
		for _, name := range names {
			child := filepath.Join(path, name)
			ci, err := os.Lstat(child)
			if errors.Is(err, fs.ErrNotExist) {
				continue // removed meanwhile
			}
			if err != nil {
				return err
			}
			if err := walk(child, ci, fn); err != nil {
				return err
			}
		}
	}
	fn(path, info)
	return nil
}
