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
	n, errs := removePodCgroups(root, "/kubepods", known, map[types.UID]bool{"left": true})
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
	if n, _ := removePodCgroups(root, "/kubepods", knownPods{At: time.Now()}, nil); n != 0 {
		t.Errorf("removed %d pods before the pod set was complete", n)
	}
}
