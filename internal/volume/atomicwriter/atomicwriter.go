// Package atomicwriter projects a set of files into a directory so that a
// reader sees either the old set or the new one, never a mix: upstream's
// AtomicWriter (pkg/volume/util/atomic_writer.go), which configMap, secret,
// downwardAPI and projected volumes are written with.
//
// The files live in a hidden timestamped directory (..YYYY_MM_DD_HH_MM_SS.N);
// the symlink ..data points to it, and each top-level name of the payload
// is a symlink into ..data. An update writes a new timestamped directory
// and swaps ..data to it with one rename, which is atomic, then removes the
// old directory. Names starting with ".." are the writer's own.
//
// The writer offers no concurrency guarantee: its caller serialises the
// writes to one directory.
package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

const (
	maxFileNameLength = 255
	maxPathLength     = 4096

	// DataDirName is the symlink to the current timestamped directory.
	DataDirName    = "..data"
	newDataDirName = "..data_tmp"
)

// FileProjection is one file of a payload: its content, its mode, and the
// user that owns it (nil: the writer's own).
type FileProjection struct {
	Data   []byte
	Mode   int32
	FsUser *int64
}

// Write projects payload, whose keys are paths relative to dir, into dir,
// which must exist. Unchanged content is not rewritten; paths of an earlier
// write that payload no longer has are removed. setPerms, if not nil, is
// called with the new timestamped directory's name (relative to dir) once
// its files are written and before they are published, as upstream, where
// the volume plugins apply fsGroup ownership there.
//
// The steps are upstream's: validate; read the current ..data; find the
// paths to remove and whether anything changed; write a new timestamped
// directory; setPerms; symlink ..data_tmp to it and rename that over ..data;
// create the missing top-level symlinks; remove the stale ones; remove the
// old timestamped directory.
func Write(dir string, payload map[string]FileProjection, setPerms func(subPath string) error) error {
	if _, err := os.Stat(dir); err != nil {
		return err
	}
	clean, err := validatePayload(payload)
	if err != nil {
		return err
	}

	dataDirPath := filepath.Join(dir, DataDirName)
	oldTsDir, err := os.Readlink(dataDirPath)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("reading the data directory link: %w", err)
		}
		oldTsDir = ""
	}
	oldTsPath := filepath.Join(dir, oldTsDir)

	var stale map[string]bool
	shouldWrite := true
	if oldTsDir != "" {
		if stale, err = pathsToRemove(clean, oldTsPath); err != nil {
			return fmt.Errorf("finding the paths to remove: %w", err)
		}
		changed, err := payloadChanged(clean, oldTsPath)
		if err != nil {
			return fmt.Errorf("comparing the payload with what is on disk: %w", err)
		}
		if !changed && len(stale) == 0 {
			// Up to date; the user-visible symlinks are still made below,
			// in case an earlier write stopped before making them
			// (upstream's kubernetes#121472), and the current directory
			// is kept.
			shouldWrite = false
			oldTsDir = ""
		}
	}

	if shouldWrite {
		tsDir, err := newTimestampDir(dir)
		if err != nil {
			return err
		}
		tsDirName := filepath.Base(tsDir)
		if err := writePayloadToDir(clean, tsDir); err != nil {
			_ = os.RemoveAll(tsDir)
			return err
		}
		if setPerms != nil {
			if err := setPerms(tsDirName); err != nil {
				_ = os.RemoveAll(tsDir)
				return fmt.Errorf("applying ownership settings: %w", err)
			}
		}
		newDataDirPath := filepath.Join(dir, newDataDirName)
		// A ..data_tmp left by an earlier write that stopped between the
		// symlink and the rename would make the symlink fail for ever.
		if err := os.Remove(newDataDirPath); err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("removing a stale %s: %w", newDataDirName, err)
		}
		if err := os.Symlink(tsDirName, newDataDirPath); err != nil {
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("creating the symbolic link for the atomic update: %w", err)
		}
		if err := os.Rename(newDataDirPath, dataDirPath); err != nil {
			_ = os.Remove(newDataDirPath)
			_ = os.RemoveAll(tsDir)
			return fmt.Errorf("renaming the symbolic link of the data directory: %w", err)
		}
	}

	if err := createUserVisibleFiles(dir, clean); err != nil {
		return fmt.Errorf("creating the visible symlinks: %w", err)
	}
	if err := removeUserVisiblePaths(dir, stale); err != nil {
		return fmt.Errorf("removing the old visible symlinks: %w", err)
	}
	if oldTsDir != "" {
		if err := os.RemoveAll(oldTsPath); err != nil {
			return fmt.Errorf("removing the old data directory: %w", err)
		}
	}
	return nil
}

// validatePayload checks every path and returns a copy of payload with the
// paths cleaned.
func validatePayload(payload map[string]FileProjection) (map[string]FileProjection, error) {
	clean := make(map[string]FileProjection, len(payload))
	for k, content := range payload {
		if err := validatePath(k); err != nil {
			return nil, err
		}
		clean[filepath.Clean(k)] = content
	}
	return clean, nil
}

// validatePath reports, with upstream's wording, a path the writer refuses:
// empty, absolute, longer than 4096 characters, with a '..' element or a
// name longer than 255 characters, or whose first element starts with '..'
// (the writer's own names).
func validatePath(targetPath string) error {
	if targetPath == "" {
		return fmt.Errorf("invalid path: must not be empty: %q", targetPath)
	}
	if path.IsAbs(targetPath) {
		return fmt.Errorf("invalid path: must be relative path: %s", targetPath)
	}
	if len(targetPath) > maxPathLength {
		return fmt.Errorf("invalid path: must be less than or equal to %d characters", maxPathLength)
	}
	items := strings.Split(targetPath, string(os.PathSeparator))
	for _, item := range items {
		if item == ".." {
			return fmt.Errorf("invalid path: must not contain '..': %s", targetPath)
		}
		if len(item) > maxFileNameLength {
			return fmt.Errorf("invalid path: filenames must be less than or equal to %d characters", maxFileNameLength)
		}
	}
	if strings.HasPrefix(items[0], "..") && len(items[0]) > 2 {
		return fmt.Errorf("invalid path: must not start with '..': %s", targetPath)
	}
	return nil
}

// payloadChanged reports whether any file of payload is missing from
// oldTsDir or has other content there. Modes are not compared, as
// upstream: a mode change alone is applied with the next content change.
func payloadChanged(payload map[string]FileProjection, oldTsDir string) (bool, error) {
	for p, fp := range payload {
		full := filepath.Join(oldTsDir, p)
		// ENOTDIR: a parent of the path was a file in the old version.
		if _, err := os.Lstat(full); errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return true, nil
		}
		onDisk, err := os.ReadFile(full)
		if err != nil {
			return false, err
		}
		if !bytes.Equal(fp.Data, onDisk) {
			return true, nil
		}
	}
	return false, nil
}

// pathsToRemove lists the paths under oldTsDir (relative to it) that
// payload neither has nor needs as a parent directory.
func pathsToRemove(payload map[string]FileProjection, oldTsDir string) (map[string]bool, error) {
	paths := map[string]bool{}
	err := filepath.Walk(oldTsDir, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, oldTsDir), string(os.PathSeparator))
		if rel != "" {
			paths[rel] = true
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	for file := range payload {
		// A file's parent directories stay: removing them would remove it.
		for sub := file; sub != "" && sub != "."; sub = filepath.Dir(sub) {
			delete(paths, sub)
		}
	}
	return paths, nil
}

// newTimestampDir creates dir/..YYYY_MM_DD_HH_MM_SS.N with mode 0755, so
// that group and other can traverse it whatever the umask.
func newTimestampDir(dir string) (string, error) {
	tsDir, err := os.MkdirTemp(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	if err != nil {
		return "", fmt.Errorf("creating the timestamped directory: %w", err)
	}
	if err := os.Chmod(tsDir, 0o755); err != nil {
		_ = os.RemoveAll(tsDir)
		return "", fmt.Errorf("setting the mode of the timestamped directory: %w", err)
	}
	return tsDir, nil
}

// writePayloadToDir writes each file under dir with its mode (set again
// after the write, which the umask narrowed) and owner.
func writePayloadToDir(payload map[string]FileProjection, dir string) error {
	for p, fp := range payload {
		mode := os.FileMode(fp.Mode)
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), os.ModePerm); err != nil {
			return fmt.Errorf("creating the directory of %s: %w", p, err)
		}
		if err := os.WriteFile(full, fp.Data, mode); err != nil {
			return fmt.Errorf("writing %s: %w", p, err)
		}
		if err := os.Chmod(full, mode); err != nil {
			return fmt.Errorf("setting the mode of %s: %w", p, err)
		}
		if fp.FsUser != nil {
			if err := os.Lchown(full, int(*fp.FsUser), -1); err != nil {
				return fmt.Errorf("setting the owner of %s: %w", p, err)
			}
		}
	}
	return nil
}

// createUserVisibleFiles makes, for each top-level name of payload that
// has none, the symlink NAME -> ..data/NAME.
func createUserVisibleFiles(dir string, payload map[string]FileProjection) error {
	for p, fp := range payload {
		top, _, _ := strings.Cut(p, string(os.PathSeparator))
		visible := filepath.Join(dir, top)
		if _, err := os.Readlink(visible); err == nil || !errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err := os.Symlink(filepath.Join(DataDirName, top), visible); err != nil {
			return err
		}
		if fp.FsUser != nil {
			if err := os.Lchown(visible, int(*fp.FsUser), -1); err != nil {
				return fmt.Errorf("setting the owner of %s: %w", top, err)
			}
		}
	}
	return nil
}

// removeUserVisiblePaths removes the top-level symlinks among paths (the
// deeper ones went with the old timestamped directory).
func removeUserVisiblePaths(dir string, paths map[string]bool) error {
	var last error
	for p := range paths {
		if strings.Contains(p, string(os.PathSeparator)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, p)); err != nil {
			last = err
		}
	}
	return last
}
