package stats

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// fsInfo is what statfs tells of the filesystem holding a path, as
// cAdvisor's GetDirFsInfo.
type fsInfo struct {
	at                        time.Time
	capacity, available, used uint64
	inodes, inodesFree        uint64
	hasInodes                 bool
}

func statFS(path string) (fsInfo, error) {
	var s unix.Statfs_t
	if err := unix.Statfs(path, &s); err != nil {
		return fsInfo{}, fmt.Errorf("statfs %s: %w", path, err)
	}
	bs := uint64(s.Bsize)
	return fsInfo{
		at:        time.Now(),
		capacity:  s.Blocks * bs,
		available: s.Bavail * bs,
		used:      (s.Blocks - s.Bfree) * bs,
		inodes:    s.Files,
		// Filesystems without inodes (btrfs reports 0) have none to tell.
		inodesFree: s.Ffree,
		hasInodes:  s.Files > 0,
	}, nil
}

// capacityStats is the filesystem's size and free space, without usage:
// the base of a container's rootfs and logs figures.
func (f fsInfo) capacityStats() *statsapi.FsStats {
	s := &statsapi.FsStats{
		Time:           metaTime(f.at),
		AvailableBytes: ptrTo(f.available),
		CapacityBytes:  ptrTo(f.capacity),
	}
	if f.hasInodes {
		s.Inodes, s.InodesFree = ptrTo(f.inodes), ptrTo(f.inodesFree)
	}
	return s
}

// fullStats is capacityStats with the filesystem's own usage: the node's
// fs.
func (f fsInfo) fullStats() *statsapi.FsStats {
	s := f.capacityStats()
	s.UsedBytes = ptrTo(f.used)
	if f.hasInodes {
		s.InodesUsed = ptrTo(saturatingSub(f.inodes, f.inodesFree))
	}
	return s
}

// fileUsage is the disk space (allocated blocks, as du) and inodes of the
// regular files directly in dir, as upstream counts a log directory:
// subdirectories (the containers' log directories in a pod's) are left to
// their own figures.
func fileUsage(dir string) (used, inodes uint64, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		u, err := diskUsage(filepath.Join(dir, e.Name()))
		if err != nil {
			if os.IsNotExist(err) {
				continue // rotated away meanwhile
			}
			return 0, 0, err
		}
		used += u
		inodes++
	}
	return used, inodes, nil
}

// diskUsage is a file's allocated size: st_blocks is in 512-byte units
// whatever the filesystem's block size.
func diskUsage(path string) (uint64, error) {
	fi, err := os.Lstat(path)
	if err != nil {
		return 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return uint64(fi.Size()), nil
	}
	return uint64(st.Blocks) * 512, nil
}

// addUsage adds used bytes and inodes to an FsStats built on capacityStats.
func addUsage(s *statsapi.FsStats, used, inodes uint64) {
	s.UsedBytes = ptrTo(deref(s.UsedBytes) + used)
	s.InodesUsed = ptrTo(deref(s.InodesUsed) + inodes)
}

func deref(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}
