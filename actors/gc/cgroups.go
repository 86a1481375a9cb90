package gc

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// podCgroupPrefix starts a pod cgroup's name under the pods' parent
// (podruntime.CgroupParent: PARENT/pod<UID>).
const podCgroupPrefix = "pod"

// removePodCgroups removes the cgroups of pods that known does not hold
// and that have nothing left in the runtime, in every cgroup v1 hierarchy
// under root (and the unified one), as upstream's
// cleanupOrphanedPodCgroups. The runtime removes a container's cgroup with
// the container but leaves the pod's, so without this they pile up, one
// per pod ever run. A cgroup changed since known.At may belong to a pod
// being created: it stays. rmdir only removes a cgroup without processes;
// one that still has some stays for a later pass.
func removePodCgroups(root, parent string, known knownPods, left map[types.UID]bool) (int, []error) {
	hierarchies, err := os.ReadDir(root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, []error{fmt.Errorf("read cgroup hierarchies %s: %w", root, err)}
	}
	removed := map[types.UID]bool{}
	var errs []error
	for _, h := range hierarchies {
		dir := filepath.Join(root, h.Name(), parent)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // not mounted here, or no pods yet
		}
		for _, e := range entries {
			if !e.IsDir() || !strings.HasPrefix(e.Name(), podCgroupPrefix) {
				continue
			}
			uid := types.UID(strings.TrimPrefix(e.Name(), podCgroupPrefix))
			if uid == "" || known.has(uid) || left[uid] {
				continue
			}
			if fi, err := e.Info(); err != nil || !fi.ModTime().Before(known.At) {
				continue
			}
			if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
				errs = append(errs, fmt.Errorf("remove pod cgroup: %w", err))
				continue
			}
			removed[uid] = true
		}
	}
	return len(removed), errs
}

// rmdirTree removes a cgroup and its children, deepest first: a cgroup
// directory is removed with rmdir, never by deleting its files.
func rmdirTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	return os.Remove(dir)
}
