package podruntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestPodCgroupNames checks the pods' parent and a pod's cgroup against
// upstream's CgroupName.ToCgroupfs and ToSystemd (pkg/kubelet/cm), whose
// own examples are the systemd rows.
func TestPodCgroupNames(t *testing.T) {
	const uid = types.UID("1234-abcd-5678-efgh")
	for _, tc := range []struct {
		name, cgroupRoot, driver string
		parent, pod              string
		err                      string
	}{
		{name: "cgroupfs default root", cgroupRoot: "", driver: "cgroupfs",
			parent: "/kubepods", pod: "/kubepods/pod1234-abcd-5678-efgh"},
		{name: "cgroupfs slash root", cgroupRoot: "/", driver: "cgroupfs",
			parent: "/kubepods", pod: "/kubepods/pod1234-abcd-5678-efgh"},
		{name: "cgroupfs custom root", cgroupRoot: "/custom/nested", driver: "cgroupfs",
			parent: "/custom/nested/kubepods", pod: "/custom/nested/kubepods/pod1234-abcd-5678-efgh"},
		{name: "empty driver is cgroupfs", cgroupRoot: "/", driver: "",
			parent: "/kubepods", pod: "/kubepods/pod1234-abcd-5678-efgh"},
		{name: "systemd default root", cgroupRoot: "", driver: "systemd",
			parent: "/kubepods.slice", pod: "/kubepods.slice/kubepods-pod1234_abcd_5678_efgh.slice"},
		{name: "systemd slash root", cgroupRoot: "/", driver: "systemd",
			parent: "/kubepods.slice", pod: "/kubepods.slice/kubepods-pod1234_abcd_5678_efgh.slice"},
		{name: "systemd custom root", cgroupRoot: "/custom", driver: "systemd",
			parent: "/custom.slice/custom-kubepods.slice",
			pod:    "/custom.slice/custom-kubepods.slice/custom-kubepods-pod1234_abcd_5678_efgh.slice"},
		{name: "systemd dashed root is escaped", cgroupRoot: "/my-root", driver: "systemd",
			parent: "/my_root.slice/my_root-kubepods.slice",
			pod:    "/my_root.slice/my_root-kubepods.slice/my_root-kubepods-pod1234_abcd_5678_efgh.slice"},
		{name: "systemd root in slice form", cgroupRoot: "/custom.slice", driver: "systemd", err: `component "custom.slice"`},
		{name: "systemd root with underscore", cgroupRoot: "/a_b", driver: "systemd", err: `component "a_b"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent, err := PodsCgroupParent(tc.cgroupRoot, tc.driver)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "cgroupRoot") {
					t.Fatalf("error %v, want one naming cgroupRoot and %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if parent != tc.parent {
				t.Errorf("parent %q, want %q", parent, tc.parent)
			}
			pod := CgroupParent(Options{CgroupParentRoot: parent, CgroupDriver: tc.driver}, uid)
			if pod != tc.pod {
				t.Errorf("pod cgroup %q, want %q", pod, tc.pod)
			}
			got, ok := PodCgroupUID(parent, tc.driver, filepath.Base(pod))
			if !ok || got != uid {
				t.Errorf("PodCgroupUID(%q) = %q, %v; want %q", filepath.Base(pod), got, ok, uid)
			}
		})
	}
}

func TestQoSChildCgroup(t *testing.T) {
	// Upstream's ToSystemd example: {"kubepods", "burstable", "pod1234-abcd-5678-efgh"}.
	burstable := ChildCgroup("/kubepods.slice", CgroupDriverSystemd, "burstable")
	got := PodCgroupName(burstable, CgroupDriverSystemd, "1234-abcd-5678-efgh")
	if want := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1234_abcd_5678_efgh.slice"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := PodCgroupName(ChildCgroup("/kubepods", "cgroupfs", "burstable"), "cgroupfs", "u1"); got != "/kubepods/burstable/podu1" {
		t.Errorf("cgroupfs: got %q", got)
	}
}

func TestPodCgroupUIDOthers(t *testing.T) {
	for _, tc := range []struct{ parent, driver, name string }{
		{"/kubepods.slice", "systemd", "kubepods-burstable.slice"},
		{"/kubepods.slice", "systemd", "kubepods-besteffort.slice"},
		{"/kubepods.slice", "systemd", "kubepods-pod.slice"},
		{"/kubepods.slice", "systemd", "kubepods-pod1234"},
		{"/kubepods.slice", "systemd", "other-pod1234.slice"},
		{"/kubepods.slice", "systemd", "kubepods-burstable-pod1234.slice"},
		{"/kubepods", "cgroupfs", "burstable"},
		{"/kubepods", "cgroupfs", "pod"},
	} {
		if uid, ok := PodCgroupUID(tc.parent, tc.driver, tc.name); ok {
			t.Errorf("PodCgroupUID(%q, %q, %q) = %q, want none", tc.parent, tc.driver, tc.name, uid)
		}
	}
}

func TestCheckCgroupDriver(t *testing.T) {
	dir := t.TempDir()
	running := filepath.Join(dir, "system")
	if err := os.Mkdir(running, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing")
	for _, tc := range []struct {
		driver, runDir string
		fails          bool
	}{
		{"systemd", running, false},
		{"systemd", missing, true},
		{"systemd", file, true},
		{"cgroupfs", missing, false},
		{"", missing, false},
	} {
		err := CheckCgroupDriver(tc.driver, tc.runDir)
		if (err != nil) != tc.fails {
			t.Errorf("CheckCgroupDriver(%q, %q) = %v, want failure %v", tc.driver, tc.runDir, err, tc.fails)
			continue
		}
		if err != nil {
			want := "cgroupDriver is systemd, but systemd is not the init system of this machine (no " + tc.runDir + "): use cgroupDriver: cgroupfs"
			if err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		}
	}
}
