package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/volume/fdwalk"
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
	// Path is the volume's directory; a raw block volume's link.
	Path string
	// Block: a raw block CSI volume, found by its link under
	// ROOT/pods/UID/volumeDevices/kubernetes.io~csi, named by its PV.
	Block bool

	root string
	uid  types.UID
}

// PodVolumes lists the volumes set up on disk for the pod, raw block CSI
// volumes too (as upstream's ListBlockVolumesForPod); none when the pod
// has neither. hostPath volumes, which live at the node's own path, are
// not among them, as upstream measures none.
func PodVolumes(root string, uid types.UID) ([]PodVolume, error) {
	out, err := podVolumeDirs(root, uid)
	if err != nil {
		return nil, err
	}
	links, err := os.ReadDir(filepath.Join(PodVolumeDevicesDir(root, uid), PluginCSI))
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	for _, l := range links {
		out = append(out, PodVolume{Name: l.Name(), Plugin: PluginCSI, Block: true, root: root, uid: uid,
			Path: filepath.Join(PodVolumeDevicesDir(root, uid), PluginCSI, l.Name())})
	}
	return out, nil
}

func podVolumeDirs(root string, uid types.UID) ([]PodVolume, error) {
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
//
// It works on file descriptors, as every walk over a directory a container
// can write: each directory is opened with O_NOFOLLOW relative to its
// parent's descriptor and its entries are stat'ed relative to it, so that
// a directory swapped for a symlink is counted as the link and never
// entered.
func DiskUsage(path string) (Usage, error) {
	fd, err := unix.Open(path, fdwalk.Dir, 0)
	if err != nil {
		return Usage{}, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var top unix.Stat_t
	if err := unix.Fstat(fd, &top); err != nil {
		return Usage{}, &os.PathError{Op: "fstat", Path: path, Err: err}
	}
	d := du{dev: top.Dev, seen: map[uint64]struct{}{}}
	d.count(&top)
	err = d.walk(fd, path)
	return d.u, err
}

// testHookDuBeforeDescend, when set, is called once the disk usage walk has
// counted the directory name of dir, before it opens it: a test swaps the
// entry there, as a container could.
var testHookDuBeforeDescend func(dir, name string)

// du is one DiskUsage walk.
type du struct {
	dev  uint64
	seen map[uint64]struct{}
	u    Usage
}

func (d *du) count(st *unix.Stat_t) {
	if st.Nlink > 1 && !fdwalk.IsDir(st) {
		if _, dup := d.seen[st.Ino]; dup {
			return
		}
		d.seen[st.Ino] = struct{}{}
	}
	d.u.Bytes += uint64(st.Blocks) * 512
	d.u.Inodes++
}

// walk counts what the directory fd, at path, holds.
func (d *du) walk(fd int, path string) error {
	names, err := fdwalk.ReadNames(fd)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("unable to count inodes for %s: %w", path, err)
	}
	for _, name := range names {
		var st unix.Stat_t
		err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
		if errors.Is(err, unix.ENOENT) {
			continue
		}
		if err != nil {
			return &os.PathError{Op: "lstat", Path: filepath.Join(path, name), Err: err}
		}
		if st.Dev != d.dev {
			continue // another filesystem, mounted here: not entered
		}
		d.count(&st)
		if !fdwalk.IsDir(&st) {
			continue
		}
		if testHookDuBeforeDescend != nil {
			testHookDuBeforeDescend(path, name)
		}
		child, err := unix.Openat(fd, name, fdwalk.Dir, 0)
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
			continue // removed or replaced meanwhile
		}
		if err != nil {
			return &os.PathError{Op: "open", Path: filepath.Join(path, name), Err: err}
		}
		var cst unix.Stat_t
		if err := unix.Fstat(child, &cst); err == nil && cst.Dev == d.dev {
			err = d.walk(child, filepath.Join(path, name))
			if err != nil {
				_ = unix.Close(child)
				return err
			}
		}
		_ = unix.Close(child)
	}
	return nil
}

// CSIPublished is a pod's CSI volume as its directory tells it: the driver
// that published it, the volume's handle and the publish target, which
// upstream's metricsCsi hands the driver to measure.
type CSIPublished struct {
	Driver, Handle, Target string
}

// CSI reads the vol_data.json of a CSI volume (Plugin PluginCSI). A
// directory without one has nothing published yet. A raw block volume's
// target is its bind mount in the global map, where upstream's block
// mapper has it measured.
func (v PodVolume) CSI() (CSIPublished, error) {
	if v.Plugin != PluginCSI {
		return CSIPublished{}, fmt.Errorf("%s is no CSI volume", v.Path)
	}
	dataDir, target := v.Path, filepath.Join(v.Path, csiPodMountDir)
	if v.Block {
		paths := blockPaths(v.root, v.uid, v.Name)
		dataDir, target = paths.data, paths.globalMapPod
	}
	data, err := loadVolData(dataDir)
	if err != nil {
		return CSIPublished{}, err
	}
	p := CSIPublished{Driver: data[volDataDriverName], Handle: data[volDataVolHandle], Target: target}
	if p.Driver == "" || p.Handle == "" {
		return CSIPublished{}, fmt.Errorf("%s names no driver or volume handle", filepath.Join(v.Path, volDataFile))
	}
	return p, nil
}
