// Package fdwalk holds the file-descriptor primitives of the walks over
// directories a container can write (fsGroup ownership, disk usage,
// teardown). A walk that goes by path strings resolves every component
// again at each step, so a container that swaps a directory for a symlink
// between two steps turns the next step on a host path; a walk that holds
// each directory open and names only its entries relative to that
// descriptor, with O_NOFOLLOW, can never leave the tree.
package fdwalk

import (
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// Open flags of the walks.
const (
	// Dir opens a directory to read or to name entries in, never through
	// a symlink.
	Dir = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	// Path pins an entry whatever its type without opening the file
	// itself: a FIFO does not block, a device's driver is not called, a
	// symlink is the link itself.
	Path = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// ReadNames lists the entries of the directory fd (which may be an O_PATH
// descriptor), unsorted and without "." and "..".
func ReadNames(fd int) ([]string, error) {
	dfd, err := unix.Openat(fd, ".", Dir, 0)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dfd), ".")
	defer f.Close()
	return f.Readdirnames(-1)
}

// Chmod sets the mode of the file fd refers to (an O_PATH descriptor of
// anything but a symlink): fchmodat2 with AT_EMPTY_PATH where the kernel
// has it, else chmod through /proc/self/fd, which names that very inode.
func Chmod(fd int, mode uint32) error {
	err := unix.Fchmodat(fd, "", mode, unix.AT_EMPTY_PATH)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) {
		err = chmodProc(fd, mode)
	}
	return err
}

// chmodProc is Chmod where the kernel has no fchmodat2.
func chmodProc(fd int, mode uint32) error {
	return unix.Chmod(fmt.Sprintf("/proc/self/fd/%d", fd), mode)
}

// Chgrp gives the file fd refers to (an O_PATH descriptor, a symlink
// included: the link itself) to group gid.
func Chgrp(fd int, gid int) error {
	return unix.Fchownat(fd, "", -1, gid, unix.AT_EMPTY_PATH|unix.AT_SYMLINK_NOFOLLOW)
}

// IsDir reports whether st is a directory's.
func IsDir(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFDIR }

// IsSymlink reports whether st is a symlink's.
func IsSymlink(st *unix.Stat_t) bool { return st.Mode&unix.S_IFMT == unix.S_IFLNK }
