package volume

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// PodVolume is one of a pod's volumes as found on disk, at
// ROOT/pods/UID/volumes/PLUGIN/NAME.
type PodVolume struct {
	// Name is the directory's name: the volume's name in the pod's spec,
	// except for a local PersistentVolume, which upstream's local plugin
	// (and this package) mounts under the PV's name.
	Name string
	// Plugin is the directory's plugin name (PluginEmptyDir, ...).
	Plugin string
	// Path is the volume's directory.
	Path string
}

// PodVolumes lists the volumes set up on disk for the pod; none when the
// pod has no volumes directory. hostPath volumes, which live at the node's
// own path, are not among them, as upstream measures none.
func PodVolumes(root string, uid types.UID) ([]PodVolume, error) {
	dir := PodVolumesDir(root, uid)
	plugins, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []PodVolume
	for _, p := range plugins {
		if !p.IsDir() {
			continue
		}
		vols, err := os.ReadDir(filepath.Join(dir, p.Name()))
		if err != nil {
			if os.IsNotExist(err) {
				continue // torn down meanwhile
			}
			return nil, err
		}
		for _, v := range vols {
			if v.IsDir() {
				out = append(out, PodVolume{Name: v.Name(), Plugin: p.Name(), Path: filepath.Join(dir, p.Name(), v.Name())})
			}
		}
	}
	return out, nil
}

// Metrics are a volume's figures, as upstream's volume.Metrics: what the
// volume uses, and the size and free space of the filesystem it is on.
type Metrics struct {
	Used, InodesUsed                        uint64
	Capacity, Available, Inodes, InodesFree uint64
	// OnTmpfs: the volume is memory (an emptyDir of medium Memory, a
	// secret or projected volume).
	OnTmpfs bool
}

// Metrics measures the volume as upstream's plugin for it does: a local
// PersistentVolume with statfs alone (MetricsStatFS: it owns its
// filesystem, or shares it knowingly), every other volume by walking its
// files (MetricsDu) plus statfs for the filesystem's size.
func (v PodVolume) Metrics() (Metrics, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(v.Path, &st); err != nil {
		return Metrics{}, fmt.Errorf("statfs %s: %w", v.Path, err)
	}
	bs := uint64(st.Bsize)
	m := Metrics{
		Capacity:   st.Blocks * bs,
		Available:  st.Bavail * bs,
		Inodes:     st.Files,
		InodesFree: st.Ffree,
		OnTmpfs:    st.Type == unix.TMPFS_MAGIC,
	}
	if v.Plugin == PluginLocal {
		m.Used = (st.Blocks - st.Bfree) * bs
		m.InodesUsed = st.Files - st.Ffree
		return m, nil
	}
	u, err := DiskUsage(v.Path)
	if err != nil {
		return Metrics{}, err
	}
	m.Used, m.InodesUsed = u.Bytes, u.Inodes
	return m, nil
}

// Ephemeral reports whether the volume's usage counts in the pod's
// ephemeral storage, as upstream's IsLocalEphemeralVolume: an emptyDir
// on the node's disk and a configMap volume. (Upstream leaves out
// downwardAPI, secret and projected volumes, and memory.)
func (v PodVolume) Ephemeral(m Metrics) bool {
	return (v.Plugin == PluginEmptyDir && !m.OnTmpfs) || v.Plugin == PluginConfigMap
}

// Usage is what a directory tree takes of its filesystem.
type Usage struct {
	// Bytes are the allocated blocks, as du counts them.
	Bytes uint64
	// Inodes count the directory itself and everything under it.
	Inodes uint64
}

// DiskUsage is upstream's fs.DiskUsage without filesystem quotas: the
// blocks and inodes of path and everything under it on the same
// filesystem (like du -x: a mount inside is not entered), each hard link
// counted once, files that vanish during the walk skipped.
func DiskUsage(path string) (Usage, error) {
	var top unix.Stat_t
	if err := unix.Stat(path, &top); err != nil {
		return Usage{}, err
	}
	var u Usage
	seen := map[uint64]struct{}{}
	err := filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("unable to count inodes for %s: %w", p, err)
		}
		fi, err := d.Info()
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		s, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("unsupported fileinfo for %s", p)
		}
		if s.Dev != top.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if s.Nlink > 1 {
			if _, dup := seen[s.Ino]; dup {
				return nil
			}
			seen[s.Ino] = struct{}{}
		}
		u.Bytes += uint64(s.Blocks) * 512
		u.Inodes++
		return nil
	})
	return u, err
}
