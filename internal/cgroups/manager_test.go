package cgroups

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return strings.TrimSpace(string(b))
}

func pod(uid string, cs ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID("uid-" + uid), Name: uid}, Spec: v1.PodSpec{Containers: cs}}
}

// TestManagerV1 creates the tree in a fake cgroup v1 root (plain
// directories: files are created where a real cgroupfs has them) and
// reads the limits back.
func TestManagerV1(t *testing.T) {
	root := t.TempDir()
	for _, h := range []string{"cpu,cpuacct", "memory", "pids", "cpuset", "hugetlb"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"cpu", "cpuacct"} {
		if err := os.Symlink("cpu,cpuacct", filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(root, "cpuset", "cpuset.cpus"), []byte("0-1\n"), 0o644)
	os.WriteFile(filepath.Join(root, "cpuset", "cpuset.mems"), []byte("0\n"), 0o644)
	huge := t.TempDir()
	os.Mkdir(filepath.Join(huge, "hugepages-2048kB"), 0o755)
	m, err := New(Config{Root: root, Layout: Layout{CgroupRoot: "/n1", Driver: "cgroupfs", PerQOS: true},
		PodPidsLimit: 64, EnforceCPULimits: true, NodeAllocatable: rl("1500m", "3Gi"), HugePagesDir: huge})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cpu/n1/kubepods/cpu.shares":               "1536",
		"memory/n1/kubepods/memory.limit_in_bytes": "3221225472",
		"cpu/n1/kubepods/besteffort/cpu.shares":    "2",
		"cpu/n1/kubepods/burstable/cpu.shares":     "2",
		"cpuset/n1/kubepods/burstable/cpuset.cpus": "0-1",
		"cpuset/n1/kubepods/cpuset.mems":           "0",
	}
	check := func() {
		t.Helper()
		for p, v := range want {
			if got := read(t, filepath.Join(root, p)); got != v {
				t.Errorf("%s = %q, want %q", p, got, v)
			}
		}
	}
	check()

	g := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	b := pod("b", ctr("a", rl("250m", "10Mi"), nil))
	be := pod("be", ctr("a", nil, nil))
	for _, p := range []*v1.Pod{g, b, be} {
		if err := m.EnsureExists(p); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := m.CgroupParent(b), "/n1/kubepods/burstable/pod"+string(b.UID); got != want {
		t.Errorf("CgroupParent = %q, want %q", got, want)
	}
	gdir, bdir, bedir := "n1/kubepods/pod"+string(g.UID), "n1/kubepods/burstable/pod"+string(b.UID), "n1/kubepods/besteffort/pod"+string(be.UID)
	want = map[string]string{
		"cpu/" + gdir + "/cpu.shares":                              "1024",
		"cpu/" + gdir + "/cpu.cfs_quota_us":                        "100000",
		"memory/" + gdir + "/memory.limit_in_bytes":                "1073741824",
		"pids/" + gdir + "/pids.max":                               "64",
		"cpu/" + bdir + "/cpu.shares":                              "256",
		"pids/" + bdir + "/pids.max":                               "64",
		"cpu/" + bedir + "/cpu.shares":                             "2",
		"cpu/n1/kubepods/burstable/cpu.shares":                     "256",
		"cpuset/" + bedir + "/cpuset.cpus":                         "0-1",
		"hugetlb/" + gdir + "/hugetlb.2MB.limit_in_bytes":          "0",
		"hugetlb/n1/kubepods/burstable/hugetlb.2MB.limit_in_bytes": "4611686018427387904",
	}
	check()
	if _, err := os.Stat(filepath.Join(root, "memory", bdir, "memory.limit_in_bytes")); err == nil {
		t.Error("a Burstable pod without memory limits got one")
	}

	// A resize: Update re-applies the pod's limits from the pod given.
	b2 := b.DeepCopy()
	b2.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: rl("500m", "10Mi"), Limits: rl("1", "20Mi")}
	if err := m.Update(b2); err != nil {
		t.Fatal(err)
	}
	want = map[string]string{
		"cpu/" + bdir + "/cpu.shares":               "512",
		"cpu/" + bdir + "/cpu.cfs_quota_us":         "100000",
		"memory/" + bdir + "/memory.limit_in_bytes": "20971520",
		"cpu/n1/kubepods/burstable/cpu.shares":      "512",
	}
	check()
	m.Forget(b.UID)
	want = map[string]string{"cpu/n1/kubepods/burstable/cpu.shares": "2"}
	check()
}

// TestManagerV2 checks the unified hierarchy's files and the delegation
// of controllers down the tree.
func TestManagerV2(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644)
	// Each new level of a plain directory lacks cgroup.controllers; a real
	// cgroupfs fills it from the parent's subtree_control. Emulate that.
	m, err := New(Config{Root: root, Layout: Layout{Driver: "cgroupfs", PerQOS: true}, PodPidsLimit: -1,
		EnforceCPULimits: true, NodeAllocatable: rl("1", "2Gi")})
	if err != nil {
		t.Fatal(err)
	}
	if !m.v2 {
		t.Fatal("v2 root not recognised")
	}
	if err := os.MkdirAll(filepath.Join(root, "kubepods"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "kubepods", "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	for _, q := range []string{"burstable", "besteffort"} {
		os.MkdirAll(filepath.Join(root, "kubepods", q), 0o755)
		os.WriteFile(filepath.Join(root, "kubepods", q, "cgroup.controllers"), []byte("cpu memory pids\n"), 0o644)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	g := pod("g", ctr("a", rl("500m", "1Gi"), rl("500m", "1Gi")))
	if err := m.EnsureExists(g); err != nil {
		t.Fatal(err)
	}
	gdir := "kubepods/pod" + string(g.UID)
	for p, v := range map[string]string{
		"cgroup.subtree_control":          "+cpuset +cpu +io +memory +pids",
		"kubepods/cgroup.subtree_control": "+cpu +memory +pids",
		"kubepods/cpu.weight":             "39",
		"kubepods/memory.max":             "2147483648",
		"kubepods/besteffort/cpu.weight":  "1",
		gdir + "/cpu.weight":              "20",
		gdir + "/cpu.max":                 "50000 100000",
		gdir + "/memory.max":              "1073741824",
	} {
		if got := read(t, filepath.Join(root, p)); got != v {
			t.Errorf("%s = %q, want %q", p, got, v)
		}
	}
	if _, err := os.Stat(filepath.Join(root, gdir, "pids.max")); err == nil {
		t.Error("pids.max set without podPidsLimit")
	}
}

// TestManagerWithoutQoS: cgroupsPerQOS false puts sandboxes in cgroupRoot
// and makes nothing.
func TestManagerWithoutQoS(t *testing.T) {
	root := t.TempDir()
	m, err := New(Config{Root: root, Layout: Layout{CgroupRoot: "/pods", Driver: "cgroupfs"}})
	if err != nil {
		t.Fatal(err)
	}
	p := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	if err := m.EnsureExists(p); err != nil {
		t.Fatal(err)
	}
	if got := m.CgroupParent(p); got != "/pods" {
		t.Errorf("CgroupParent = %q, want /pods", got)
	}
	if entries, _ := os.ReadDir(root); len(entries) != 0 {
		t.Errorf("cgroups made without cgroupsPerQOS: %v", entries)
	}
	if m.PodParents() != nil {
		t.Errorf("PodParents = %v, want none", m.PodParents())
	}
}

// TestManagerQOSReserved checks qosReserved's QoS cgroup memory limits as
// pods come and go.
func TestManagerQOSReserved(t *testing.T) {
	root := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	half := int64(50)
	m, err := New(Config{Root: root, Layout: Layout{CgroupRoot: "/", Driver: "cgroupfs", PerQOS: true},
		EnforceCPULimits: true, NodeAllocatable: rl("2", "4Gi"), QOSReservedMemory: &half, AllocatableMemory: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	limits := func(wantB, wantBE string) {
		t.Helper()
		for p, v := range map[string]string{"memory/kubepods/burstable/memory.limit_in_bytes": wantB, "memory/kubepods/besteffort/memory.limit_in_bytes": wantBE} {
			if got := read(t, filepath.Join(root, p)); got != v {
				t.Errorf("%s = %q, want %q", p, got, v)
			}
		}
	}
	limits("4294967296", "4294967296")
	g := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	if err := m.EnsureExists(g); err != nil {
		t.Fatal(err)
	}
	limits("3758096384", "3758096384") // 4Gi - 512Mi
	m.Forget(g.UID)
	limits("4294967296", "4294967296")
}

// TestManagerQOSReservedAtUsage checks upstream's retrySetMemoryReserve:
// a QoS memory limit the kernel refuses, below what the cgroup holds, is
// set at the usage instead; one above it is kept.
func TestManagerQOSReservedAtUsage(t *testing.T) {
	root := t.TempDir()
	for _, h := range []string{"cpu", "memory"} {
		if err := os.MkdirAll(filepath.Join(root, h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	half := int64(50)
	m, err := New(Config{Root: root, Layout: Layout{CgroupRoot: "/", Driver: "cgroupfs", PerQOS: true},
		EnforceCPULimits: true, NodeAllocatable: rl("2", "4Gi"), QOSReservedMemory: &half, AllocatableMemory: 4 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Start(); err != nil {
		t.Fatal(err)
	}
	// The besteffort cgroup holds 4000000000 bytes; the kernel refuses a
	// lower limit, as it does when it cannot reclaim down to it.
	const held = 4000000000
	be := filepath.Join(root, "memory/kubepods/besteffort")
	if err := os.WriteFile(filepath.Join(be, "memory.usage_in_bytes"), []byte(fmt.Sprint(held)), 0o644); err != nil {
		t.Fatal(err)
	}
	m.write = func(dir, file, value string) error {
		if v, err := strconv.ParseInt(value, 10, 64); err == nil && dir == be && file == "memory.limit_in_bytes" && v < held {
			return syscall.EBUSY
		}
		return writeFile(dir, file, value)
	}
	g := pod("g", ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
	b := pod("b", ctr("a", rl("1", "1Gi"), nil))
	for _, p := range []*v1.Pod{g, b} {
		if err := m.EnsureExists(p); err != nil {
			t.Fatal(err)
		}
	}
	// Burstable: 4Gi - 512Mi; besteffort: that - 512Mi = 3221225472,
	// under what it holds.
	for p, want := range map[string]string{"memory/kubepods/burstable/memory.limit_in_bytes": "3758096384",
		"memory/kubepods/besteffort/memory.limit_in_bytes": fmt.Sprint(held)} {
		if got := read(t, filepath.Join(root, p)); got != want {
			t.Errorf("%s = %q, want %q", p, got, want)
		}
	}
	for _, tc := range []struct{ limit, usage, want int64 }{{10, 20, 20}, {20, 10, 20}, {10, 10, 10}} {
		if got := RaisedToUsage(tc.limit, tc.usage); got != tc.want {
			t.Errorf("RaisedToUsage(%d, %d) = %d, want %d", tc.limit, tc.usage, got, tc.want)
		}
	}
}

// TestPodConfigExclusiveCPUs checks upstream's
// DisableCPUQuotaWithExclusiveCPUs for the pod cgroup: a pod holding
// exclusive CPUs gets an unlimited CFS quota, another pod its limit.
func TestPodConfigExclusiveCPUs(t *testing.T) {
	m := &Manager{cfg: Config{EnforceCPULimits: true, PodExclusiveCPUs: func(uid string) bool { return uid == "uid-pinned" }}}
	for uid, want := range map[string]int64{"pinned": -1, "shared": 100000} {
		p := pod(uid, ctr("a", rl("1", "1Gi"), rl("1", "1Gi")))
		rc := m.podConfig(p)
		if rc.CPUQuota == nil || *rc.CPUQuota != want {
			t.Errorf("pod %s (uid %s): quota %v, want %d", uid, p.UID, rc.CPUQuota, want)
		}
	}
}
