package volume

import (
	"errors"
	"fmt"
	"os"

	v1 "k8s.io/api/core/v1"
)

// setUpHostPath checks a hostPath volume's type, creating what
// DirectoryOrCreate and FileOrCreate ask for with upstream's modes.
func (h *Host) setUpHostPath(vol *v1.Volume) (Mounted, error) {
	src := vol.HostPath
	if err := checkHostPath(src.Path, src.Type); err != nil {
		return Mounted{}, err
	}
	return Mounted{Path: src.Path, HostPath: true}, nil
}

// checkHostPath is upstream's hostPath SetUp: the path may not go back
// up with "..", and must be of the type asked, DirectoryOrCreate and
// FileOrCreate creating it when nothing is there.
func checkHostPath(path string, typ *v1.HostPathType) error {
	if hasBackstep(path) {
		return fmt.Errorf("invalid HostPath `%s`: must not contain '..'", path)
	}
	if typ == nil || *typ == v1.HostPathUnset {
		return nil
	}
	return checkHostPathType(path, *typ)
}

// checkHostPathType is upstream's checkTypeInternal: symlinks are
// followed, as the container runtime's bind mount follows them.
func checkHostPathType(path string, typ v1.HostPathType) error {
	switch typ {
	case v1.HostPathDirectoryOrCreate:
		if !pathExists(path) {
			return makeHostDir(path)
		}
		return hostPathTypeIs(path, v1.HostPathDirectory, "directory")
	case v1.HostPathDirectory:
		return hostPathTypeIs(path, v1.HostPathDirectory, "directory")
	case v1.HostPathFileOrCreate:
		if !pathExists(path) {
			return makeHostFile(path)
		}
		return hostPathTypeIs(path, v1.HostPathFile, "file")
	case v1.HostPathFile:
		return hostPathTypeIs(path, v1.HostPathFile, "file")
	case v1.HostPathSocket:
		return hostPathTypeIs(path, v1.HostPathSocket, "socket file")
	case v1.HostPathCharDev:
		return hostPathTypeIs(path, v1.HostPathCharDev, "character device")
	case v1.HostPathBlockDev:
		return hostPathTypeIs(path, v1.HostPathBlockDev, "block device")
	}
	return fmt.Errorf("%s is an invalid volume type", typ)
}

// hostPathTypeIs is upstream's typeMatchedOrError, with its wording.
func hostPathTypeIs(path string, want v1.HostPathType, expected string) error {
	got, err := fileType(path)
	if err != nil {
		return fmt.Errorf("hostPath type check failed, %s is not a %s, unable to determine its type: %w", path, expected, err)
	}
	if got != want {
		return fmt.Errorf("hostPath type check failed: %s is not a %s, it's a %s", path, expected, got)
	}
	return nil
}

// errUnknownFileType is upstream's, for a FIFO or anything else a hostPath
// type cannot name.
var errUnknownFileType = errors.New("only recognise file, directory, socket, block device and character device")

// fileType is upstream's hostutil getFileType: what path is, following
// symlinks, in the names of the hostPath types.
func fileType(path string) (v1.HostPathType, error) {
	fi, err := os.Stat(path)
	if os.IsNotExist(err) {
		return "", fmt.Errorf("path %q does not exist", path)
	}
	if err != nil {
		return "", err
	}
	m := fi.Mode()
	switch {
	case m.IsDir():
		return v1.HostPathDirectory, nil
	case m.IsRegular():
		return v1.HostPathFile, nil
	case m&os.ModeSocket != 0:
		return v1.HostPathSocket, nil
	case m&os.ModeDevice != 0 && m&os.ModeCharDevice != 0:
		return v1.HostPathCharDev, nil
	case m&os.ModeDevice != 0:
		return v1.HostPathBlockDev, nil
	}
	return "", errUnknownFileType
}

// pathExists follows symlinks, as upstream's PathExists: a dangling
// symlink does not exist, and DirectoryOrCreate then fails to create over
// it rather than follow it somewhere new.
func pathExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// makeHostDir is upstream's makeDir: the directory and its parents, 0755
// (less the umask, as upstream).
func makeHostDir(path string) error {
	if err := os.MkdirAll(path, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}

// makeHostFile is upstream's makeFile: an empty file 0644 (less the
// umask). As upstream, its parent directory must exist: FileOrCreate does
// not create directories.
func makeHostFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE, 0o644)
	if f != nil {
		_ = f.Close()
	}
	if err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}
