package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

// SubpathError is a subPath that could not be prepared. Its text is
// upstream's, which names the volume mount and the container only: the
// cause may tell of the host's filesystem (where a symlink points), so it
// is for the node's log, through errors.Unwrap, and not for the pod's
// status or events.
type SubpathError struct {
	// Volume is the volume mount's name (the volume's).
	Volume    string
	Container string
	// Create: the subPath did not exist and could not be created.
	Create bool
	Err    error
}

func (e *SubpathError) Error() string {
	if e.Create {
		return fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", e.Volume, e.Container)
	}
	return fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", e.Volume, e.Container)
}

func (e *SubpathError) Unwrap() error { return e.Err }

// PrepareSubpath bind-mounts subPath of the volume at volPath for the
// container's index-th volume mount, at SubpathDir, and returns that path.
// It follows upstream's safe subpath rules: subPath is resolved inside
// volPath component by component without following any symlink out of
// it, so that a symlink planted by a container never reaches outside the
// volume. A subPath that does not exist is created as a directory, as
// upstream. An absolute subPath or one with ".." is refused with
// upstream's message; any other failure is a *SubpathError.
func (h *Host) PrepareSubpath(uid types.UID, volume, volPath, container string, index int, subPath string) (string, error) {
	if filepath.IsAbs(subPath) {
		return "", fmt.Errorf("error SubPath `%s` must not be an absolute path", subPath)
	}
	if hasBackstep(subPath) {
		return "", fmt.Errorf("unable to provision SubPath `%s`: must not contain '..'", subPath)
	}
	path := filepath.Join(volPath, subPath)
	if !pathExists(path) {
		// Created now, with the volume's own mode (the setgid bit of an
		// fsGroup included), rather than by the runtime later with its
		// own.
		fi, err := os.Stat(volPath)
		if err != nil {
			return "", &SubpathError{Volume: volume, Container: container, Create: true, Err: err}
		}
		if err := safeMakeDir(subPath, volPath, fi.Mode()); err != nil && !errors.Is(err, os.ErrExist) {
			return "", &SubpathError{Volume: volume, Container: container, Create: true, Err: err}
		}
	}
	target := SubpathDir(h.RootDir, uid, volume, container, index)
	if err := h.bindSubpath(PodDir(h.RootDir, uid), volPath, path, target); err != nil {
		return "", &SubpathError{Volume: volume, Container: container, Err: err}
	}
	return target, nil
}

// hasBackstep is upstream's ValidatePathNoBacksteps: a path with a ".."
// component, which could lead out of where it is joined.
func hasBackstep(p string) bool {
	return slices.Contains(strings.Split(filepath.ToSlash(p), "/"), "..")
}

// bindSubpath is upstream's doBindSubPath: it opens path safely (every
// component inside the volume, none a symlink) and bind-mounts that open
// file, through /proc/PID/fd/N, at target. What the mount binds is the
// file opened and checked, even if a container swaps a component for a
// symlink between the check and the mount.
func (h *Host) bindSubpath(podDir, volPath, path, target string) error {
	realVol, err := filepath.EvalSymlinks(volPath)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %q: %w", volPath, err)
	}
	realPath, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %q: %w", path, err)
	}
	if !mount.PathWithinBase(realPath, realVol) {
		return fmt.Errorf("subpath %q not within volume path %q", realPath, realVol)
	}
	fd, err := safeOpen(realPath, realVol)
	if err != nil {
		return fmt.Errorf("error opening subpath %v: %w", realPath, err)
	}
	defer unix.Close(fd)

	mounted, err := h.prepareSubpathTarget(realPath, target)
	if err != nil || mounted {
		return err
	}
	source := fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), fd)
	// --no-canonicalize: mount(8) must bind the open file, not the path
	// the /proc link names now.
	err = h.Mounter.MountSensitiveWithoutSystemdWithMountFlags(source, target, "", []string{"bind"}, nil, []string{"--no-canonicalize"})
	if err != nil {
		if cerr := mount.CleanupMountPoint(target, h.Mounter, true); cerr == nil {
			_ = removeEmptyDirs(podDir, filepath.Dir(target))
		}
		return fmt.Errorf("error mounting %s: %w", realPath, err)
	}
	return nil
}

// prepareSubpathTarget is upstream's: it reports whether target is
// already the bind mount of path (a restart, or a container restarted),
// replaces a bind mount of something else with a lazy unmount (a hung
// filesystem must not block the pod), and otherwise creates target, a
// directory for a directory and an empty file for anything else.
func (h *Host) prepareSubpathTarget(path, target string) (bool, error) {
	isMnt, err := h.Mounter.IsMountPoint(target)
	switch {
	case os.IsNotExist(err):
		isMnt = false
	case mount.IsCorruptedMnt(err):
		if err := h.Mounter.Unmount(target); err != nil {
			return false, fmt.Errorf("error unmounting corrupted mount %s: %w", target, err)
		}
		isMnt = false
	case err != nil:
		return false, fmt.Errorf("error checking path %s for mount: %w", target, err)
	}
	if isMnt {
		same, err := sameFile(path, target)
		if err != nil {
			return false, fmt.Errorf("error checking subpath mount info for %s: %w", target, err)
		}
		if same {
			return true, nil
		}
		if err := unix.Unmount(target, unix.MNT_DETACH); err != nil {
			return false, fmt.Errorf("error lazy-unmounting stale subpath mount %s: %w", target, err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return false, fmt.Errorf("error creating directory %s: %w", filepath.Dir(target), err)
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return false, fmt.Errorf("lstat %s failed: %w", path, err)
	}
	if fi.IsDir() {
		if err := os.Mkdir(target, 0o750); err != nil && !os.IsExist(err) {
			return false, fmt.Errorf("error creating directory %s: %w", target, err)
		}
	} else if err := os.WriteFile(target, nil, 0o640); err != nil {
		// A file takes the bind mount of any non-directory: a device,
		// a socket, a FIFO.
		return false, fmt.Errorf("error creating file %s: %w", target, err)
	}
	return false, nil
}

func sameFile(a, b string) (bool, error) {
	fa, err := os.Lstat(a)
	if err != nil {
		return false, err
	}
	fb, err := os.Lstat(b)
	if err != nil {
		return false, err
	}
	return os.SameFile(fa, fb), nil
}

// removeEmptyDirs removes the empty directories from end up to base,
// excluded, as upstream's: it stops at the first one that is not empty.
func removeEmptyDirs(base, end string) error {
	if !mount.PathWithinBase(end, base) {
		return fmt.Errorf("endDir %q is not within baseDir %q", end, base)
	}
	for dir := end; dir != base; dir = filepath.Dir(dir) {
		err := unix.Rmdir(dir)
		switch {
		case err == nil, errors.Is(err, unix.ENOENT):
		case errors.Is(err, unix.ENOTEMPTY), errors.Is(err, unix.EEXIST):
			return nil
		default:
			return fmt.Errorf("error removing directory %q: %w", dir, err)
		}
	}
	return nil
}

// nofollow opens a directory to walk it without following a symlink;
// openPath opens any file without reading it (a FIFO must not block).
const (
	nofollow = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	openPath = unix.O_PATH | unix.O_NOFOLLOW | unix.O_CLOEXEC
)

// safeOpen is upstream's doSafeOpen: it opens path, which must be base or
// under it with its symlinks already resolved, component by component from
// base with openat and O_NOFOLLOW, so that no component can be (or become)
// a symlink, and returns the last one's descriptor.
func safeOpen(path, base string) (int, error) {
	path, base = filepath.Clean(path), filepath.Clean(base)
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return -1, err
	}
	parent, err := unix.Open(base, nofollow, 0)
	if err != nil {
		return -1, fmt.Errorf("cannot open directory %s: %w", base, err)
	}
	if rel == "." {
		return parent, nil
	}
	current := base
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		current = filepath.Join(current, seg)
		if !mount.PathWithinBase(current, base) {
			_ = unix.Close(parent)
			return -1, fmt.Errorf("path %s is outside of allowed base %s", current, base)
		}
		// The trailing slash triggers an automount, as upstream does;
		// its error (a file, not a directory) does not matter.
		var st unix.Stat_t
		_ = unix.Fstatat(parent, seg+"/", &st, unix.AT_SYMLINK_NOFOLLOW)
		child, err := unix.Openat(parent, seg, openPath, 0)
		_ = unix.Close(parent)
		if err != nil {
			return -1, fmt.Errorf("cannot open %s: %w", current, err)
		}
		if err := unix.Fstat(child, &st); err != nil {
			_ = unix.Close(child)
			return -1, fmt.Errorf("error running fstat on %s: %w", current, err)
		}
		if st.Mode&unix.S_IFMT == unix.S_IFLNK {
			_ = unix.Close(child)
			return -1, fmt.Errorf("unexpected symlink found %s", current)
		}
		parent = child
	}
	return parent, nil
}

// safeMakeDir is upstream's SafeMakeDir: it creates subdir under base,
// refusing to create anything outside base, whatever symlinks the
// existing part of the path holds, and gives each directory it creates
// perm (umask or not: chmod after mkdir), as upstream.
func safeMakeDir(subdir, base string, perm os.FileMode) error {
	realBase, err := filepath.EvalSymlinks(base)
	if err != nil {
		return fmt.Errorf("error resolving symlinks in %s: %w", base, err)
	}
	path := filepath.Join(realBase, subdir)
	if !mount.PathWithinBase(path, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", path, realBase)
	}
	if fi, err := os.Stat(path); err == nil {
		if fi.IsDir() {
			return nil
		}
		return &os.PathError{Op: "mkdir", Path: path, Err: unix.ENOTDIR}
	}
	existing, toCreate, err := findExistingPrefix(realBase, path)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %w", path, err)
	}
	realExisting, err := filepath.EvalSymlinks(existing)
	if err != nil {
		return fmt.Errorf("error opening directory %s: %w", existing, err)
	}
	if !mount.PathWithinBase(realExisting, realBase) {
		return fmt.Errorf("path %s is outside of allowed base %s", realExisting, realBase)
	}
	parent, err := safeOpen(realExisting, realBase)
	if err != nil {
		return fmt.Errorf("cannot open directory %s: %w", existing, err)
	}
	defer func() { _ = unix.Close(parent) }()
	current := realExisting
	for _, dir := range toCreate {
		current = filepath.Join(current, dir)
		if err := unix.Mkdirat(parent, dir, uint32(perm.Perm())); err != nil {
			return fmt.Errorf("cannot create directory %s: %w", current, &os.PathError{Op: "mkdir", Path: current, Err: err})
		}
		// O_NOFOLLOW: the directory just made cannot have become a
		// symlink; a file put in its place fails the next mkdirat or is
		// bound, which the container could reach anyway.
		child, err := unix.Openat(parent, dir, nofollow, 0)
		if err != nil {
			return fmt.Errorf("cannot open %s: %w", current, err)
		}
		_ = unix.Close(parent)
		parent = child
		if err := unix.Fchmod(parent, kernelMode(perm)); err != nil {
			return fmt.Errorf("chmod %q failed: %w", current, err)
		}
	}
	return nil
}

// kernelMode is perm as chmod(2) takes it, with setgid, setuid and sticky.
func kernelMode(perm os.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&os.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&os.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&os.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// findExistingPrefix is upstream's: the longest prefix of path under base
// that exists (symlinks followed, as the later EvalSymlinks checks where
// it lands) and the directories left to create.
func findExistingPrefix(base, path string) (string, []string, error) {
	rel, err := filepath.Rel(base, path)
	if err != nil {
		return base, nil, err
	}
	dirs := strings.Split(rel, string(filepath.Separator))
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return path, nil, fmt.Errorf("error opening %s: %w", base, err)
	}
	defer func() { _ = unix.Close(fd) }()
	current := base
	for i, dir := range dirs {
		// O_PATH: a FIFO put in a directory's place must not hang us.
		child, err := unix.Openat(fd, dir, unix.O_PATH|unix.O_CLOEXEC, 0)
		if errors.Is(err, unix.ENOENT) {
			return current, dirs[i:], nil
		}
		if err != nil {
			return base, nil, err
		}
		_ = unix.Close(fd)
		fd = child
		current = filepath.Join(current, dir)
	}
	return path, nil, nil
}
