package gc

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestRemovePodCgroups(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(path string, at time.Time) {
		t.Helper()
		full := filepath.Join(root, path)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, at, at); err != nil {
			t.Fatal(err)
		}
	}
	// gone: in two hierarchies, with a container's cgroup inside; known and
	// left are wanted; fresh was made after the pod list was taken.
	mk("memory/kubepods/podgone/abc", old)
	mk("memory/kubepods/podgone", old)
	mk("cpu/kubepods/podgone", old)
	mk("memory/kubepods/podknown", old)
	mk("memory/kubepods/podleft", old)
	mk("memory/kubepods/podfresh", time.Now().Add(time.Hour))
	mk("memory/kubepods/burstable", old)
	known := knownPods{UIDs: map[types.UID]bool{"known": true}, At: time.Now(), Complete: true}
	n, errs := removePodCgroups(podCgroups{Root: root, Parents: []string{"/kubepods"}}, known, map[types.UID]bool{"left": true})
	if n != 1 || len(errs) != 0 {
		t.Fatalf("removed %d pods, errors %v; want 1, none", n, errs)
	}
	for path, want := range map[string]bool{
		"memory/kubepods/podgone": false, "cpu/kubepods/podgone": false,
		"memory/kubepods/podknown": true, "memory/kubepods/podleft": true,
		"memory/kubepods/podfresh": true, "memory/kubepods/burstable": true,
	} {
		_, err := os.Stat(filepath.Join(root, path))
		if exists := err == nil; exists != want {
			t.Errorf("%s exists = %v, want %v", path, exists, want)
		}
	}
	// Before the sources are complete nothing goes.
	mk("memory/kubepods/podother", old)
	if n, _ := removePodCgroups(podCgroups{Root: root, Parents: []string{"/kubepods"}}, knownPods{At: time.Now()}, nil); n != 0 {
		t.Errorf("removed %d pods before the pod set was complete", n)
	}
}

// TestRemovePodSlices: with the systemd driver, the pods' cgroups are
// slices (podruntime.CgroupParent); a gone pod's slice is removed and its
// unit stopped, other slices below kubepods.slice (QoS) stay.
func TestRemovePodSlices(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mk := func(path string) {
		t.Helper()
		full := filepath.Join(root, path)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
	}
	mk("memory/kubepods.slice/kubepods-podgone_1.slice/cri-containerd-abc.scope")
	mk("memory/kubepods.slice/kubepods-podgone_1.slice")
	mk("cpu/kubepods.slice/kubepods-podgone_1.slice")
	mk("memory/kubepods.slice/kubepods-podknown_1.slice")
	mk("memory/kubepods.slice/kubepods-burstable.slice")
	var stopped []string
	c := podCgroups{Root: root, Parents: []string{"/kubepods.slice"}, Driver: "systemd",
		StopSlice: func(unit string) error { stopped = append(stopped, unit); return nil }}
	known := knownPods{UIDs: map[types.UID]bool{"known-1": true}, At: time.Now(), Complete: true}
	n, errs := removePodCgroups(c, known, nil)
	if n != 1 || len(errs) != 0 {
		t.Fatalf("removed %d pods, errors %v; want 1, none", n, errs)
	}
	if len(stopped) != 1 || stopped[0] != "kubepods-podgone_1.slice" {
		t.Errorf("stopped units %v, want [kubepods-podgone_1.slice]", stopped)
	}
	for path, want := range map[string]bool{
		"memory/kubepods.slice/kubepods-podgone_1.slice":  false,
		"cpu/kubepods.slice/kubepods-podgone_1.slice":     false,
		"memory/kubepods.slice/kubepods-podknown_1.slice": true,
		"memory/kubepods.slice/kubepods-burstable.slice":  true,
	} {
		_, err := os.Stat(filepath.Join(root, path))
		if exists := err == nil; exists != want {
			t.Errorf("%s exists = %v, want %v", path, exists, want)
		}
	}
}

// TestRemovePodCgroupsQoS: with cgroupsPerQOS, pod cgroups are in
// kubepods (Guaranteed), kubepods/burstable and kubepods/besteffort; gone
// pods' are removed from each, the QoS cgroups stay.
func TestRemovePodCgroupsQoS(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-time.Hour)
	for _, p := range []string{"memory/kubepods/poda", "memory/kubepods/burstable/podb", "cpu/kubepods/burstable/podb",
		"memory/kubepods/besteffort/podc", "memory/kubepods/besteffort/podknown", "memory/kubepods/burstable", "memory/kubepods/besteffort"} {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(full, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(full, old, old); err != nil {
			t.Fatal(err)
		}
	}
	c := podCgroups{Root: root, Parents: []string{"/kubepods", "/kubepods/burstable", "/kubepods/besteffort"}}
	known := knownPods{UIDs: map[types.UID]bool{"known": true}, At: time.Now(), Complete: true}
	if n, errs := removePodCgroups(c, known, nil); n != 3 || len(errs) != 0 {
		t.Fatalf("removed %d pods, errors %v; want 3, none", n, errs)
	}
	for path, want := range map[string]bool{
		"memory/kubepods/poda": false, "memory/kubepods/burstable/podb": false, "cpu/kubepods/burstable/podb": false,
		"memory/kubepods/besteffort/podc": false, "memory/kubepods/besteffort/podknown": true,
		"memory/kubepods/burstable": true, "memory/kubepods/besteffort": true,
	} {
		_, err := os.Stat(filepath.Join(root, path))
		if exists := err == nil; exists != want {
			t.Errorf("%s exists = %v, want %v", path, exists, want)
		}
	}
}
