package volume

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// makeNestedMountpoints is upstream's MakeNestedMountpoints: where a
// container mounts another volume beneath this one (this one at /a, the
// other at /a/b), the directory b is made in this volume, since the
// runtime cannot make a mount point in a read-only volume. Only the first
// level is made: /a/b/c beneath /a/b is the other volume's to make.
func makeNestedMountpoints(name, baseDir string, pod *v1.Pod) error {
	dirs, err := nestedMountpoints(name, pod)
	if err != nil {
		return err
	}
	for _, dir := range dirs {
		if err := os.MkdirAll(filepath.Join(baseDir, dir), 0o755); err != nil {
			return fmt.Errorf("unable to create nested volume mountpoints: %v", err)
		}
	}
	return nil
}

// nestedMountpoints lists, relative to the volume, the mount points of
// other volumes directly beneath each place a container of pod mounts the
// volume called name.
func nestedMountpoints(name string, pod *v1.Pod) ([]string, error) {
	var out []string
	check := func(mounts []v1.VolumeMount) error {
		var all, mine []string
		for _, m := range mounts {
			cleaned := filepath.Clean(m.MountPath)
			all = append(all, cleaned)
			if m.Name == name {
				mine = append(mine, cleaned)
			}
		}
		sort.Strings(all)
		for _, my := range mine {
			// A container must not make us create directories outside
			// its root.
			if strings.HasPrefix(my, ".."+string(os.PathSeparator)) {
				return fmt.Errorf("invalid container mount point %v", my)
			}
			prefix := my + string(os.PathSeparator)
			// Sorting does not group a directory's descendants
			// (/d/n, /d/n-v, /d/n/x): remember every nested one found.
			var found []string
			for _, mp := range all {
				if !strings.HasPrefix(mp, prefix) {
					continue
				}
				deeper := false
				for _, f := range found {
					if strings.HasPrefix(mp, f) {
						deeper = true
						break
					}
				}
				if deeper {
					continue
				}
				found = append(found, mp+string(os.PathSeparator))
				out = append(out, mp[len(prefix):])
			}
		}
		return nil
	}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if err := check(cs[i].VolumeMounts); err != nil {
				return nil, err
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if err := check(pod.Spec.EphemeralContainers[i].VolumeMounts); err != nil {
			return nil, err
		}
	}
	return out, nil
}
