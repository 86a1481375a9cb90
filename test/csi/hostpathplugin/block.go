package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Block volumes, as csi-driver-host-path makes them: the volume is a file
// of its capacity; NodeStageVolume puts it on a loop device and
// NodeUnstageVolume frees that; NodePublishVolume bind-mounts the loop
// device onto the target, a file it makes, and NodeUnpublishVolume undoes
// that and removes the file.

// makeBackingFile makes a block volume's file, sparse, of size bytes.
func makeBackingFile(path string, size int64) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := f.Truncate(size); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// publishBlock bind-mounts the staged volume's loop device onto target.
func (d *driver) publishBlock(v volume, target string, readOnly bool) error {
	if isDevice(target) {
		return nil // published already: a retried call
	}
	dev, err := loopDevice(d.volumeDir(v.ID))
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if dev == "" {
		return status.Errorf(codes.FailedPrecondition, "volume %s is not staged: no loop device", v.ID)
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_RDWR, 0o640)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	_ = f.Close()
	opts := []string{"bind"}
	if readOnly {
		opts = append(opts, "ro")
	}
	if err := d.mounter.Mount(dev, target, "", opts); err != nil {
		_ = os.Remove(target)
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// unpublishBlock unmounts the device from target and removes the file.
func (d *driver) unpublishBlock(target string) error {
	if err := d.mounter.Unmount(target); err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	if err := os.Remove(target); err != nil && !os.IsNotExist(err) {
		return status.Error(codes.Internal, err.Error())
	}
	return nil
}

// isDevice: path is a device file, not followed if a symlink.
func isDevice(path string) bool {
	fi, err := os.Lstat(path)
	return err == nil && fi.Mode()&os.ModeDevice != 0
}

// attachLoop puts file on a loop device unless one has it already.
func attachLoop(file string) (string, error) {
	if dev, err := loopDevice(file); err != nil || dev != "" {
		return dev, err
	}
	out, err := exec.Command("losetup", "-f", "--show", file).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("losetup -f --show %s: %w: %s", file, err, strings.TrimSpace(string(out)))
	}
	return strings.TrimSpace(string(out)), nil
}

// detachLoop frees the loop device of file, if any.
func detachLoop(file string) error {
	dev, err := loopDevice(file)
	if err != nil || dev == "" {
		return err
	}
	if out, err := exec.Command("losetup", "-d", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -d %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// refreshLoop makes the loop device of file, if any, take file's size.
func refreshLoop(file string) error {
	dev, err := loopDevice(file)
	if err != nil || dev == "" {
		return err
	}
	if out, err := exec.Command("losetup", "-c", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("losetup -c %s: %w: %s", dev, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// loopDevice is the loop device whose backing file is file, "" if none,
// from sysfs.
func loopDevice(file string) (string, error) {
	devices, err := filepath.Glob("/sys/block/loop*")
	if err != nil {
		return "", err
	}
	for _, dev := range devices {
		b, err := os.ReadFile(filepath.Join(dev, "loop", "backing_file"))
		if err != nil {
			continue
		}
		if strings.TrimSpace(string(b)) == file {
			return "/dev/" + filepath.Base(dev), nil
		}
	}
	return "", nil
}
