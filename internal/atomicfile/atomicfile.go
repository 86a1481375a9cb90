// Package atomicfile writes the state files actorlet keeps across restarts
// (the pods' allocations, the actuated resources): a crash or a power cut
// leaves either the old content or the new, never an empty or partial file.
//
// A rename alone is not enough: on ext4 and xfs a rename can reach the disk
// before the renamed file's data, so that after a power cut the name points
// at an empty file. Write therefore syncs the new file before the rename,
// and the directory after it, so that the rename itself is durable.
package atomicfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces path with data, with mode perm: data goes to path.tmp,
// which is synced, closed and renamed over path, and then path's directory
// is synced. On an error before the rename path is unchanged and path.tmp
// is gone (a full disk keeps no partial file taking the space that the
// next write needs); a crash leaves at most path.tmp, which the next Write
// replaces. Writes of one path must not run concurrently.
func Write(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = os.Remove(tmp)
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}()
	// perm is set on the descriptor, so that neither the umask nor a
	// crashed write's leftover changes it.
	if err = f.Chmod(perm); err != nil {
		return err
	}
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// Remove deletes path, if it is there, and syncs its directory, so that a
// crash after Remove does not bring the file back.
func Remove(path string) error {
	err := os.Remove(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}
