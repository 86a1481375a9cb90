package stats

import (
	"reflect"
	"testing"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestCgroupFigures(t *testing.T) {
	unlimited := ^uint64(0)
	tests := []struct {
		name       string
		host       string
		cgroup     string
		unified    bool
		wantCPU    uint64
		wantMemory memoryFigures
		wantSwap   uint64
		wantLimit  uint64
		swapOK     bool
		wantPSI    bool
	}{
		{"v1 root", "testdata/v1", "/", false, 5000000000000,
			memoryFigures{usage: 3000000000, workingSet: 2000000000, rss: 500000000, pageFaults: 1234, majorPageFaults: 12, limit: 9223372036854771712},
			0, 0, false, false},
		{"v1 pods", "testdata/v1", "/kubepods", false, 40000000000,
			memoryFigures{usage: 600000000, workingSet: 500000000, rss: 300000000, pageFaults: 50, majorPageFaults: 5, limit: 7000000000},
			0, unlimited, true, false},
		{"v2 root: usage is anon + file", "testdata/v2", "/", true, 7000000000,
			memoryFigures{usage: 1000000000, workingSet: 750000000, rss: 400000000, pageFaults: 99, majorPageFaults: 9, limit: unlimited},
			0, 0, false, false},
		{"v2 pod under a QoS class", "testdata/v2", "/kubepods/burstable/poduid-a", true, 1500000000,
			memoryFigures{usage: 80000000, workingSet: 75000000, rss: 60000000, pageFaults: 3, majorPageFaults: 0, limit: unlimited},
			1048576, 2097152, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newCgroups(tt.host)
			if c.unified != tt.unified {
				t.Fatalf("unified %v, want %v", c.unified, tt.unified)
			}
			if !c.exists(tt.cgroup) {
				t.Fatalf("cgroup %s not found", tt.cgroup)
			}
			cpu, err := c.cpuNanos(tt.cgroup)
			if err != nil || cpu != tt.wantCPU {
				t.Errorf("cpu %d, %v; want %d", cpu, err, tt.wantCPU)
			}
			m, err := c.memory(tt.cgroup)
			if err != nil || m != tt.wantMemory {
				t.Errorf("memory %+v, %v; want %+v", m, err, tt.wantMemory)
			}
			swap, limit, ok := c.swapUsage(tt.cgroup, m)
			if ok != tt.swapOK || swap != tt.wantSwap || limit != tt.wantLimit {
				t.Errorf("swap %d limit %d ok %v; want %d %d %v", swap, limit, ok, tt.wantSwap, tt.wantLimit, tt.swapOK)
			}
			if psi := c.pressure(tt.cgroup, "cpu"); (psi != nil) != tt.wantPSI {
				t.Errorf("cpu pressure %+v, want present %v", psi, tt.wantPSI)
			}
		})
	}
}

func TestCgroupMissing(t *testing.T) {
	c := newCgroups("testdata/nocgroup")
	if c.exists("/") {
		t.Error("root cgroup found in a host without cgroupfs")
	}
	if _, err := c.cpuNanos("/"); err == nil {
		t.Error("cpu of a missing cgroup: no error")
	}
	if _, err := c.memory("/kubepods/podx"); err == nil {
		t.Error("memory of a missing cgroup: no error")
	}
}

func TestMemoryFiguresStats(t *testing.T) {
	limited := memoryFigures{usage: 10, workingSet: 8, rss: 5, pageFaults: 2, majorPageFaults: 1, limit: 20}.stats(timeAt(1))
	want := &statsapi.MemoryStats{Time: metaTime(timeAt(1)), AvailableBytes: ptrTo[uint64](12), UsageBytes: ptrTo[uint64](10),
		WorkingSetBytes: ptrTo[uint64](8), RSSBytes: ptrTo[uint64](5), PageFaults: ptrTo[uint64](2), MajorPageFaults: ptrTo[uint64](1)}
	if !reflect.DeepEqual(limited, want) {
		t.Errorf("limited: %+v, want %+v", limited, want)
	}
	if s := (memoryFigures{workingSet: 8, limit: 9223372036854771712}).stats(timeAt(1)); s.AvailableBytes != nil {
		t.Errorf("no limit: available %d, want none", *s.AvailableBytes)
	}
}

func TestPodCgroup(t *testing.T) {
	tests := []struct {
		host, root, uid string
		want            string
		found           bool
	}{
		{"testdata/v1", "/kubepods", "uid-a", "/kubepods/poduid-a", true},
		{"testdata/v2", "/kubepods/", "uid-a", "/kubepods/burstable/poduid-a", true},
		{"testdata/v1", "/kubepods", "uid-b", "", false},
		{"testdata/v1", "", "uid-a", "", false},
		{"testdata/v1", "/kubepods", "../kubepods/poduid-a", "", false},
	}
	for _, tt := range tests {
		p := &Provider{HostRoot: tt.host, PodCgroupRoot: tt.root}
		p.init()
		got, ok := p.podCgroup(tt.uid)
		if got != tt.want || ok != tt.found {
			t.Errorf("%s root %q uid %q: %q %v, want %q %v", tt.host, tt.root, tt.uid, got, ok, tt.want, tt.found)
		}
	}
}
