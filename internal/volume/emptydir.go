package volume

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"
)

// emptyDirPerm is the mode of an emptyDir's directory, as upstream: every
// container user may write it whatever its uid.
const emptyDirPerm os.FileMode = 0o777

// setUpEmptyDir sets up an emptyDir: a directory of mode 0777 on disk, or
// a tmpfs sized as upstream for medium Memory; fsGroup ownership.
//
// As upstream's SetUpAt, it does so once: a volume with its ready mark
// is returned as it is (on disk while its directory exists; in memory
// while its tmpfs is mounted), so that the pod's files are never walked
// again. The volume-manager calls SetUp on every change of the pod and
// every resync; a second fsGroup walk would widen the mode of the files
// the pod made since (a 0600 file would become 0660). A ready mark whose
// directory is gone is removed and the volume set up afresh; a memory
// volume whose tmpfs is gone is mounted and walked again, as upstream.
func (h *Host) setUpEmptyDir(pod *v1.Pod, vol *v1.Volume) (Mounted, error) {
	dir := VolumeDir(h.RootDir, pod.UID, PluginEmptyDir, vol.Name)
	src := vol.EmptyDir
	ready := h.readyDir(pod, PluginEmptyDir, vol.Name)
	if isReady(ready) {
		switch src.Medium {
		case v1.StorageMediumMemory:
			if h.Mounter != nil {
				notMnt, err := h.Mounter.IsLikelyNotMountPoint(dir)
				if err != nil && !os.IsNotExist(err) {
					return Mounted{}, err
				}
				if err == nil && !notMnt {
					return Mounted{Path: dir, SELinuxRelabel: true}, nil
				}
			}
		case v1.StorageMediumDefault:
			if _, err := os.Stat(dir); err == nil {
				return Mounted{Path: dir, SELinuxRelabel: true}, nil
			}
			// Upstream: "This situation should not happen unless user
			// manually delete volume dir." Its error is ignored, as
			// upstream's: the set-up below rewrites the mark.
			_ = os.RemoveAll(ready)
		}
	}
	switch {
	case src.Medium == v1.StorageMediumDefault:
		if err := makeWorldWritableDir(dir); err != nil {
			return Mounted{}, err
		}
	case src.Medium == v1.StorageMediumMemory:
		if h.Mounter == nil {
			return Mounted{}, errors.New("memory storage requested, but mounter is nil")
		}
		if err := makeWorldWritableDir(dir); err != nil {
			return Mounted{}, err
		}
		// The tmpfs's root keeps the kernel's mode, 1777, as upstream's
		// does (its e2e tests expect the sticky bit on it).
		if err := h.mountTmpfs(dir, emptyDirMemorySize(h.NodeAllocatable.Memory(), src.SizeLimit, pod)); err != nil {
			return Mounted{}, err
		}
	case isHugePageMedium(src.Medium):
		return Mounted{}, fmt.Errorf("emptyDir medium %q is not supported by this node", src.Medium)
	default:
		return Mounted{}, fmt.Errorf("unknown storage medium %q", src.Medium)
	}
	// Upstream ignores the emptyDir's ownership error, and applies no
	// fsGroupChangePolicy to it: the volume is the pod's own.
	_ = localVolumeOwnership(dir, fsGroupOf(pod), nil)
	if err := setReady(ready); err != nil {
		return Mounted{}, err
	}
	return Mounted{Path: dir, SELinuxRelabel: true}, nil
}

// makeWorldWritableDir creates dir with mode 0777 and corrects the mode
// the process's umask took away with a chmod, as upstream's setupDir,
// rather than clearing the umask of the whole process.
func makeWorldWritableDir(dir string) error {
	if err := os.MkdirAll(dir, emptyDirPerm); err != nil {
		return err
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() == emptyDirPerm {
		return nil
	}
	return os.Chmod(dir, emptyDirPerm)
}

// emptyDirMemorySize is the size of a memory-backed emptyDir, as upstream's
// calculateEmptyDirMemorySize: node allocatable memory, lowered to the
// pod's memory limit, lowered to the volume's sizeLimit, each only when it
// is positive and not above what it lowers. With no allocatable memory
// known (upstream always has one) the pod's limit or sizeLimit still
// bound it; with none of the three, nil: tmpfs's default (half the RAM).
func emptyDirMemorySize(allocatable *resource.Quantity, sizeLimit *resource.Quantity, pod *v1.Pod) *resource.Quantity {
	var size *resource.Quantity
	if allocatable != nil && allocatable.Sign() > 0 {
		size = allocatable
	}
	lower := func(q *resource.Quantity) {
		if q != nil && q.Sign() > 0 && (size == nil || q.Cmp(*size) <= 0) {
			size = q
		}
	}
	lower(podMemoryLimit(pod))
	lower(sizeLimit)
	return size
}

// podMemoryLimit is the memory limit of the pod's cgroup, as upstream's
// ResourceConfigForPod sets it: the pod-level limit if the pod has one,
// else the sum of its containers' limits (the larger of the largest init
// container's and the sum of the app containers', with restartable init
// containers as upstream's resource helpers count them) plus the pod's
// overhead, but only when every container declares a limit; nil when the
// pod's memory is unbounded.
func podMemoryLimit(pod *v1.Pod) *resource.Quantity {
	declared := true
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if cs[i].Resources.Limits.Memory().IsZero() {
				declared = false
			}
		}
	}
	if pod.Spec.Resources != nil && !pod.Spec.Resources.Limits.Memory().IsZero() {
		declared = true
	}
	if !declared {
		return nil
	}
	limits := resourcehelper.PodLimits(pod, resourcehelper.PodResourcesOptions{})
	m, ok := limits[v1.ResourceMemory]
	if !ok || m.Sign() <= 0 {
		return nil
	}
	return resource.NewQuantity(m.Value(), resource.BinarySI)
}

// isHugePageMedium is upstream's v1helper.IsHugePageMedium: "HugePages"
// or "HugePages-<size>".
func isHugePageMedium(m v1.StorageMedium) bool {
	return m == v1.StorageMediumHugePages || strings.HasPrefix(string(m), string(v1.StorageMediumHugePagesPrefix))
}

// readyDir is ROOT/pods/UID/plugins/PLUGIN/NAME, where upstream keeps the
// "ready" mark of a set-up emptyDir: an upstream kubelet started later on
// the node finds the volume as its own.
func (h *Host) readyDir(pod *v1.Pod, plugin, name string) string {
	return filepath.Join(PodDir(h.RootDir, pod.UID), "plugins", plugin, name)
}

// isReady is upstream's volumeutil.IsReady: dir holds a regular file
// "ready".
func isReady(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, "ready"))
	return err == nil && fi.Mode().IsRegular()
}

// setReady writes upstream's ready mark (volumeutil.SetReady: a directory
// 0750 holding an empty file "ready" 0600).
func setReady(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(dir, "ready"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
