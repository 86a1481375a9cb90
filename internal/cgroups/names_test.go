package cgroups

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
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
			pod := PodCgroupName(parent, tc.driver, uid)
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
		fromRuntime    bool
		want           string // "" : no error
	}{
		{driver: "systemd", runDir: running},
		{driver: "systemd", runDir: missing,
			want: "cgroupDriver is systemd, but systemd is not the init system of this machine (no " + missing + "): use cgroupDriver: cgroupfs"},
		{driver: "systemd", runDir: file,
			want: "cgroupDriver is systemd, but systemd is not the init system of this machine (no " + file + "): use cgroupDriver: cgroupfs"},
		{driver: "systemd", runDir: missing, fromRuntime: true,
			want: "the container runtime's cgroup driver is systemd, but systemd is not the init system of this machine (no " + missing + "): configure the runtime for cgroupfs (containerd: SystemdCgroup = false)"},
		{driver: "cgroupfs", runDir: missing},
		{driver: "", runDir: missing},
	} {
		err := CheckCgroupDriver(tc.driver, tc.runDir, tc.fromRuntime)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("CheckCgroupDriver(%q, %q, %v) = %q, want %q", tc.driver, tc.runDir, tc.fromRuntime, got, tc.want)
		}
	}
}

// configRuntime answers RuntimeConfig; the other calls are not made.
type configRuntime struct {
	runtimeapi.RuntimeServiceClient
	resp  *runtimeapi.RuntimeConfigResponse
	err   error
	calls int
}

func (r *configRuntime) RuntimeConfig(context.Context, *runtimeapi.RuntimeConfigRequest, ...grpc.CallOption) (*runtimeapi.RuntimeConfigResponse, error) {
	r.calls++
	return r.resp, r.err
}

func TestRuntimeCgroupDriver(t *testing.T) {
	linux := func(d runtimeapi.CgroupDriver) *runtimeapi.RuntimeConfigResponse {
		return &runtimeapi.RuntimeConfigResponse{Linux: &runtimeapi.LinuxRuntimeConfiguration{CgroupDriver: d}}
	}
	for _, tc := range []struct {
		name   string
		rt     *configRuntime
		driver string
		ok     bool
		err    string
		calls  int
	}{
		{name: "systemd", rt: &configRuntime{resp: linux(runtimeapi.CgroupDriver_SYSTEMD)}, driver: "systemd", ok: true, calls: 1},
		{name: "cgroupfs", rt: &configRuntime{resp: linux(runtimeapi.CgroupDriver_CGROUPFS)}, driver: "cgroupfs", ok: true, calls: 1},
		{name: "unimplemented: the configuration decides", rt: &configRuntime{err: status.Error(codes.Unimplemented, "no")}, calls: 1},
		{name: "no linux configuration", rt: &configRuntime{resp: &runtimeapi.RuntimeConfigResponse{}}, calls: 1},
		{name: "unknown driver", rt: &configRuntime{resp: linux(7)}, err: "unknown cgroup driver 7", calls: 1},
		{name: "other errors retried, then returned", rt: &configRuntime{err: status.Error(codes.Unavailable, "starting")}, err: "starting", calls: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			driver, ok, err := RuntimeCgroupDriver(context.Background(), tc.rt)
			if driver != tc.driver || ok != tc.ok || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
				t.Errorf("got %q, %v, %v; want %q, %v, error %q", driver, ok, err, tc.driver, tc.ok, tc.err)
			}
			if tc.rt.calls != tc.calls {
				t.Errorf("%d calls, want %d", tc.rt.calls, tc.calls)
			}
		})
	}
}
