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

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/volume/fdwalk"
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
	return walkDeep(dir, func(fd int, st *unix.Stat_t) {
		changeFile(fd, st, *fsGroup, readOnly)
	})
}

// changeFile is upstream's changeFilePermission, on the file fd pins
// (st is its stat): the group, then the mode with the mask added.
func changeFile(fd int, st *unix.Stat_t, fsGroup int64, readOnly bool) {
	_ = fdwalk.Chgrp(fd, int(fsGroup))
	// A symlink's own mode means nothing, and upstream never chmods one:
	// chmod would follow it and override the mode the volume gave the
	// target.
	if fdwalk.IsSymlink(st) {
		return
	}
	mask := uint32(rwMask)
	if readOnly {
		mask = uint32(roMask)
	}
	if fdwalk.IsDir(st) {
		mask |= unix.S_ISGID | uint32(execMask)
	}
	_ = fdwalk.Chmod(fd, st.Mode&0o7777|mask)
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

// testHookInspected, when set, is called once the walk has pinned the
// entry name of dir and read its stat, before it descends into it or
// changes it: a test swaps the entry there, as a container could.
var testHookInspected func(dir, name string)

// walkDeep calls fn on every file under root without following symlinks,
// on a directory after its contents (so that a directory made read-only
// is still entered), and unsorted, as upstream's walkDeep. It works on
// file descriptors: each entry is pinned with O_PATH|O_NOFOLLOW relative
// to its parent's descriptor, and fn gets that descriptor with its stat,
// so that a container swapping a directory for a symlink meanwhile cannot
// lead the walk, or the change, out of the tree.
func walkDeep(root string, fn func(fd int, st *unix.Stat_t)) error {
	fd, err := unix.Open(root, fdwalk.Path, 0)
	if err != nil {
		return &fs.PathError{Op: "open", Path: root, Err: err}
	}
	defer unix.Close(fd)
	return walk(root, fd, fn)
}

func walk(path string, fd int, fn func(int, *unix.Stat_t)) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if fdwalk.IsDir(&st) {
		names, err := fdwalk.ReadNames(fd)
		if err != nil {
			return &fs.PathError{Op: "readdir", Path: path, Err: err}
		}
		for _, name := range names {
			child, err := unix.Openat(fd, name, fdwalk.Path, 0)
			if errors.Is(err, unix.ENOENT) {
				continue // removed meanwhile
			}
			if err != nil {
				return &fs.PathError{Op: "open", Path: filepath.Join(path, name), Err: err}
			}
			if testHookInspected != nil {
				testHookInspected(path, name)
			}
			err = walk(filepath.Join(path, name), child, fn)
			_ = unix.Close(child)
			if err != nil {
				return err
			}
		}
	}
	fn(fd, &st)
	return nil
}
