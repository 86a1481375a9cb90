package cgroups

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestJoinV1(t *testing.T) {
	root := t.TempDir()
	for _, h := range []string{"cpu", "memory", "pids"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	m, err := New(Config{Root: root, Layout: Layout{CgroupRoot: "/", Driver: "cgroupfs", PerQOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join("/system.slice/kubelet", 42); err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"cpu", "memory", "pids"} {
		if got := read(t, filepath.Join(root, h, "system.slice/kubelet/cgroup.procs")); got != "42" {
			t.Errorf("%s: cgroup.procs = %q", h, got)
		}
	}
	if got, err := m.Procs("/system.slice/kubelet"); err != nil || !reflect.DeepEqual(got, []int{42}) {
		t.Errorf("Procs = %v, %v", got, err)
	}
}

func TestSystemPids(t *testing.T) {
	kernel := func(pid int) bool { return pid == 2 || pid == 3 }
	got := SystemPids([]int{1, 2, 3, 10, 11, 12}, kernel, 11)
	if want := []int{10, 12}; !reflect.DeepEqual(got, want) {
		t.Errorf("SystemPids = %v, want %v", got, want)
	}
}
