package gc

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/cgroups"
)

// podCgroups is where pod cgroups are, as podcgroups lays them out: below
// each of Parents (kubepods, kubepods/burstable and kubepods/besteffort,
// in cgroupfs form) in every hierarchy under Root, named by Driver
// (pod<UID> directories, or kubepods-burstable-pod<UID>.slice slices with
// systemd).
type podCgroups struct {
	Root, Driver string
	Parents      []string
	// StopSlice, with the systemd driver, stops the slice unit of a pod
	// cgroup once its directories are gone: systemd loaded it when the
	// runtime put the pod's first container in it, and keeps it otherwise,
	// one unit per pod ever run, as upstream's cgroup manager stops it
	// through D-Bus. Nil: the directories alone are removed.
	StopSlice func(unit string) error
}

// removePodCgroups removes the cgroups of pods that known does not hold
// and that have nothing left in the runtime, in every cgroup v1 hierarchy
// under root (and the unified one), as upstream's
// cleanupOrphanedPodCgroups. The runtime removes a container's cgroup with
// the container but leaves the pod's, so without this they pile up, one
// per pod ever run. A cgroup changed since known.At may belong to a pod
// being created: it stays. rmdir only removes a cgroup without processes;
// one that still has some stays for a later pass. With systemd, the slice
// is removed the same way, proving it empty, before its unit is stopped:
// stopping a unit would kill what is still in it.
func removePodCgroups(c podCgroups, known knownPods, left map[types.UID]bool) (int, []error) {
	hierarchies, err := os.ReadDir(c.Root)
	if err != nil {
		if os.IsNotExist(err) {
			return 0, nil
		}
		return 0, []error{fmt.Errorf("read cgroup hierarchies %s: %w", c.Root, err)}
	}
	removed := map[types.UID]string{}
	var errs []error
	// The hierarchies of cgroup v1 (and a hybrid's unified one), and on a
	// v2 machine the unified hierarchy at Root itself.
	dirs := []string{c.Root}
	for _, h := range hierarchies {
		dirs = append(dirs, filepath.Join(c.Root, h.Name()))
	}
	for _, h := range dirs {
		for _, parent := range c.Parents {
			errs = append(errs, removeBelow(c, filepath.Join(h, parent), parent, known, left, removed)...)
		}
	}
	if c.Driver == cgroups.CgroupDriverSystemd && c.StopSlice != nil {
		for _, unit := range removed {
			if err := c.StopSlice(unit); err != nil {
				errs = append(errs, fmt.Errorf("stop pod slice %s: %w", unit, err))
			}
		}
	}
	return len(removed), errs
}

// removeBelow removes the cgroups of gone pods in dir, the directory of
// the cgroup parent in one hierarchy, recording them in removed.
func removeBelow(c podCgroups, dir, parent string, known knownPods, left map[types.UID]bool, removed map[types.UID]string) []error {
	var errs []error
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil // not mounted here, or no pods yet
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid, ok := cgroups.PodCgroupUID(parent, c.Driver, e.Name())
		if !ok || known.has(uid) || left[uid] {
			continue
		}
		if fi, err := e.Info(); err != nil || !fi.ModTime().Before(known.At) {
			continue
		}
		if err := rmdirTree(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, fmt.Errorf("remove pod cgroup: %w", err))
			continue
		}
		removed[uid] = e.Name()
	}
	return errs
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
