package cgroups

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func rl(cpu, mem string) v1.ResourceList {
	out := v1.ResourceList{}
	if cpu != "" {
		out[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		out[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return out
}

func ctr(name string, req, lim v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: req, Limits: lim}}
}

func u64(n uint64) *uint64 { return &n }
func i64(n int64) *int64   { return &n }

// TestForPod checks pod cgroup limits against upstream's
// ResourceConfigForPod (pkg/kubelet/cm/helpers_linux_test.go's cases).
func TestForPod(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	tests := []struct {
		name    string
		spec    v1.PodSpec
		enforce bool
		want    ResourceConfig
	}{
		{"best effort", v1.PodSpec{Containers: []v1.Container{ctr("a", nil, nil)}}, true,
			ResourceConfig{CPUShares: u64(2)}},
		{"burstable without limits", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("100m", "100Mi"), nil)}}, true,
			ResourceConfig{CPUShares: u64(102)}},
		{"burstable with limits", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("100m", "100Mi"), rl("200m", "200Mi"))}}, true,
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(20000), CPUPeriod: u64(100000), Memory: i64(200 << 20)}},
		{"burstable, one container without limits", v1.PodSpec{Containers: []v1.Container{
			ctr("a", rl("100m", "100Mi"), rl("200m", "200Mi")), ctr("b", rl("100m", "100Mi"), nil)}}, true,
			ResourceConfig{CPUShares: u64(204)}},
		{"burstable, CPU limits not enforced", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("100m", "100Mi"), rl("200m", "200Mi"))}}, false,
			ResourceConfig{CPUShares: u64(102), CPUQuota: i64(-1), CPUPeriod: u64(100000), Memory: i64(200 << 20)}},
		{"guaranteed", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("1", "1Gi"), rl("1", "1Gi"))}}, true,
			ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(100000), CPUPeriod: u64(100000), Memory: i64(1 << 30)}},
		{"guaranteed with overhead", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("1", "1Gi"), rl("1", "1Gi"))},
			Overhead: rl("250m", "100Mi")}, true,
			ResourceConfig{CPUShares: u64(1280), CPUQuota: i64(125000), CPUPeriod: u64(100000), Memory: i64(1<<30 + 100<<20)}},
		{"init container larger than the containers", v1.PodSpec{
			InitContainers: []v1.Container{ctr("init", rl("2", "2Gi"), rl("2", "2Gi"))},
			Containers:     []v1.Container{ctr("a", rl("1", "1Gi"), rl("1", "1Gi"))}}, true,
			ResourceConfig{CPUShares: u64(2048), CPUQuota: i64(200000), CPUPeriod: u64(100000), Memory: i64(2 << 30)}},
		{"sidecar adds to the containers", v1.PodSpec{
			InitContainers: []v1.Container{func() v1.Container {
				c := ctr("side", rl("500m", "512Mi"), rl("500m", "512Mi"))
				c.RestartPolicy = &always
				return c
			}()},
			Containers: []v1.Container{ctr("a", rl("1", "1Gi"), rl("1", "1Gi"))}}, true,
			ResourceConfig{CPUShares: u64(1536), CPUQuota: i64(150000), CPUPeriod: u64(100000), Memory: i64(1<<30 + 512<<20)}},
		{"tiny CPU limit", v1.PodSpec{Containers: []v1.Container{ctr("a", rl("1m", "1Mi"), rl("1m", "1Mi"))}}, true,
			ResourceConfig{CPUShares: u64(2), CPUQuota: i64(1000), CPUPeriod: u64(100000), Memory: i64(1 << 20)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ForPod(&v1.Pod{Spec: tt.spec}, tt.enforce, 0)
			if got.HugePageLimit == nil || len(got.HugePageLimit) != 0 {
				t.Errorf("huge page limits %v, want none (every size at 0)", got.HugePageLimit)
			}
			got.HugePageLimit = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ForPod = %s, want %s", show(got), show(tt.want))
			}
		})
	}
}

func show(rc ResourceConfig) string {
	s := ""
	for _, st := range settings(rc, false) {
		s += st.File + "=" + st.Value + " "
	}
	return "[" + s + "]"
}

func TestQoSConfigs(t *testing.T) {
	pods := []*v1.Pod{
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("g", rl("1", "1Gi"), rl("1", "1Gi"))}}},
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("b", rl("500m", ""), nil)}}},
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("b", rl("250m", "1Mi"), rl("1", "1Mi"))}, Overhead: rl("250m", "")}},
		{Spec: v1.PodSpec{Containers: []v1.Container{ctr("be", nil, nil)}}},
	}
	b, be := QoSConfigs(pods)
	if *b.CPUShares != 1024 || *be.CPUShares != 2 {
		t.Errorf("burstable shares %d, besteffort %d; want 1024 (1 CPU requested), 2", *b.CPUShares, *be.CPUShares)
	}
	if b, _ := QoSConfigs(nil); *b.CPUShares != 2 {
		t.Errorf("burstable shares without pods %d, want 2", *b.CPUShares)
	}
}

func TestNodeAllocatable(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi"),
		ResourcePIDs: resource.MustParse("4096")}
	abs := AllocatableAbsolute(capacity, rl("", "1Gi"), v1.ResourceList{v1.ResourceCPU: resource.MustParse("3"), ResourcePIDs: resource.MustParse("96")})
	rc := NodeAllocatableConfig(abs, false)
	if *rc.CPUShares != 2 || *rc.Memory != 3<<30 || *rc.PidsLimit != 4000 {
		t.Errorf("kubepods %s pids %d, want shares 2 (cpu reserved beyond capacity), memory 3Gi, pids 4000", show(rc), *rc.PidsLimit)
	}
	if rc := NodeAllocatableConfig(rl("500m", "1Gi"), true); rc.Memory != nil || *rc.CPUShares != 512 {
		t.Errorf("compressible only: %s", show(rc))
	}
}

func TestSettings(t *testing.T) {
	rc := ResourceConfig{CPUShares: u64(1024), CPUQuota: i64(50000), CPUPeriod: u64(100000), Memory: i64(1 << 20), PidsLimit: i64(100)}
	v1s := []setting{{"cpu", "cpu.shares", "1024"}, {"cpu", "cpu.cfs_period_us", "100000"}, {"cpu", "cpu.cfs_quota_us", "50000"},
		{"memory", "memory.limit_in_bytes", "1048576"}, {"pids", "pids.max", "100"}}
	if got := settings(rc, false); !reflect.DeepEqual(got, v1s) {
		t.Errorf("v1 %v, want %v", got, v1s)
	}
	v2s := []setting{{"cpu", "cpu.weight", "39"}, {"cpu", "cpu.max", "50000 100000"},
		{"memory", "memory.max", "1048576"}, {"pids", "pids.max", "100"}}
	if got := settings(rc, true); !reflect.DeepEqual(got, v2s) {
		t.Errorf("v2 %v, want %v", got, v2s)
	}
	unlimited := ResourceConfig{CPUQuota: i64(-1), CPUPeriod: u64(100000), PidsLimit: i64(-1)}
	if got, want := settings(unlimited, true), []setting{{"cpu", "cpu.max", "max 100000"}, {"pids", "pids.max", "max"}}; !reflect.DeepEqual(got, want) {
		t.Errorf("v2 unlimited %v, want %v", got, want)
	}
	for shares, weight := range map[uint64]uint64{2: 1, 1024: 39, 262144: 10000, 1: 1} {
		if got := CPUSharesToWeight(shares); got != weight {
			t.Errorf("CPUSharesToWeight(%d) = %d, want %d", shares, got, weight)
		}
	}
}

func TestHugePages(t *testing.T) {
	req := rl("1", "1Gi")
	req["hugepages-2Mi"] = resource.MustParse("4Mi")
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", req, req)}}}
	rc := ForPod(p, true, 0)
	if !reflect.DeepEqual(rc.HugePageLimit, map[int64]int64{2 << 20: 4 << 20}) {
		t.Fatalf("huge page limits %v", rc.HugePageLimit)
	}
	sizes := []int64{2 << 20, 1 << 30}
	var got []setting
	for _, s := range settings(rc, false, sizes...) {
		if s.Controller == "hugetlb" {
			got = append(got, s)
		}
	}
	want := []setting{{"hugetlb", "hugetlb.2MB.limit_in_bytes", "4194304"}, {"hugetlb", "hugetlb.1GB.limit_in_bytes", "0"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("v1 hugetlb %v, want %v", got, want)
	}
	if s := settings(ResourceConfig{HugePageLimit: map[int64]int64{}}, true, 64<<10); !reflect.DeepEqual(s, []setting{{"hugetlb", "hugetlb.64KB.max", "0"}}) {
		t.Errorf("v2 hugetlb %v", s)
	}
	if s := settings(ResourceConfig{}, false, sizes...); len(s) != 0 {
		t.Errorf("nil huge page limits wrote %v", s)
	}
	dir := t.TempDir()
	for _, d := range []string{"hugepages-2048kB", "hugepages-1048576kB", "other"} {
		os.Mkdir(filepath.Join(dir, d), 0o755)
	}
	if got := HugePageSizes(dir); !reflect.DeepEqual(got, sizes) {
		t.Errorf("HugePageSizes = %v, want %v", got, sizes)
	}
}

// TestForPodPeriod checks cpuCFSQuotaPeriod in the pod cgroup: the quota
// is the limit over that period.
func TestForPodPeriod(t *testing.T) {
	for _, tc := range []struct {
		name       string
		period     uint64
		wantQuota  int64
		wantPeriod uint64
	}{
		{"default", 0, 50000, 100000},
		{"10ms", 10000, 5000, 10000},
		{"1ms: at least 1 ms", 1000, 1000, 1000},
	} {
		got := ForPod(&v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("a", rl("500m", "1Gi"), rl("500m", "1Gi"))}}}, true, tc.period)
		if *got.CPUQuota != tc.wantQuota || *got.CPUPeriod != tc.wantPeriod {
			t.Errorf("%s: quota %d period %d, want %d %d", tc.name, *got.CPUQuota, *got.CPUPeriod, tc.wantQuota, tc.wantPeriod)
		}
	}
}
