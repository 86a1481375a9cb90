package stats

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// testNode is a Provider on the cgroup v1 fixture host with a fake
// runtime holding:
//
//	default/web (uid-a, sandbox sb-a, cgroup kubepods/poduid-a, pid 4242):
//	    app (running, plus a dead earlier instance) and sidecar
//	default/web's earlier sandbox sb-a-old, not ready, with a container
//	batch/job (uid-b, sb-b, no cgroup, no pid): run and helper
//	default/idle (uid-c, sb-c): only an exited container
type testNode struct {
	p       *Provider
	cri     *fakeCRI
	layerFs string // the writable layers' and images' filesystem
	clock   *testClock
}

type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func newTestNode(t *testing.T) *testNode {
	t.Helper()
	rootDir, logsDir, layerFs := t.TempDir(), t.TempDir(), t.TempDir()
	writeFile(t, filepath.Join(rootDir, "pods", "uid-a", "etc-hosts"), "127.0.0.1 localhost\n")
	writeFile(t, filepath.Join(logsDir, "default_web_uid-a", "app", "0.log"), strings.Repeat("log line\n", 1000))
	writeFile(t, filepath.Join(logsDir, "default_web_uid-a", "sidecar", "0.log"), "one line\n")

	sandbox := func(id, ns, name, uid string, created float64, state runtimeapi.PodSandboxState) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: id, Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: ns, Uid: uid},
			State: state, CreatedAt: timeAt(created).UnixNano()}
	}
	container := func(id, sb, name string, created float64, state runtimeapi.ContainerState) *runtimeapi.Container {
		return &runtimeapi.Container{Id: id, PodSandboxId: sb, Metadata: &runtimeapi.ContainerMetadata{Name: name},
			State: state, CreatedAt: timeAt(created).UnixNano()}
	}
	ready, notReady := runtimeapi.PodSandboxState_SANDBOX_READY, runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	running, exited := runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED
	cri := &fakeCRI{
		sandboxes: []*runtimeapi.PodSandbox{
			sandbox("sb-a-old", "default", "web", "uid-a-old", 50, notReady),
			sandbox("sb-a", "default", "web", "uid-a", 100, ready),
			sandbox("sb-b", "batch", "job", "uid-b", 110, ready),
			sandbox("sb-c", "default", "idle", "uid-c", 120, ready),
		},
		containers: []*runtimeapi.Container{
			container("c-app-0", "sb-a", "app", 100.5, exited),
			container("c-app", "sb-a", "app", 101, running),
			container("c-side", "sb-a", "sidecar", 102, running),
			container("c-old", "sb-a-old", "app", 51, running),
			container("c-run", "sb-b", "run", 111, running),
			container("c-help", "sb-b", "helper", 112, running),
			container("c-idle", "sb-c", "x", 121, exited),
		},
		imageFs: []*runtimeapi.FilesystemUsage{{
			Timestamp: timeAt(199).UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: layerFs},
			UsedBytes: &runtimeapi.UInt64Value{Value: 12345}, InodesUsed: &runtimeapi.UInt64Value{Value: 67},
		}},
		pids: map[string]int{"sb-a": 4242},
	}
	n := &testNode{cri: cri, layerFs: layerFs, clock: &testClock{now: timeAt(200)}}
	n.setStats(200, 1_000_000_000)
	n.p = &Provider{
		Runtime: cri, Images: cri, NodeName: "node-1", RootDir: rootDir, PodLogsDir: logsDir,
		PodCgroupRoot: "/kubepods", HostRoot: "testdata/v1", now: n.clock.Now,
	}
	return n
}

// setStats sets the runtime's container statistics as sampled at the
// given second, with app's cumulative CPU time appCPU.
func (n *testNode) setStats(at float64, appCPU uint64) {
	ts := timeAt(at).UnixNano()
	v := func(x uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: x} }
	cpu := func(usage, nanoCores uint64) *runtimeapi.CpuUsage {
		return &runtimeapi.CpuUsage{Timestamp: ts, UsageCoreNanoSeconds: v(usage), UsageNanoCores: v(nanoCores)}
	}
	stat := func(id, name string, c *runtimeapi.CpuUsage, m *runtimeapi.MemoryUsage, layer bool) *runtimeapi.ContainerStats {
		s := &runtimeapi.ContainerStats{Attributes: &runtimeapi.ContainerAttributes{Id: id, Metadata: &runtimeapi.ContainerMetadata{Name: name}}, Cpu: c, Memory: m}
		if layer {
			s.WritableLayer = &runtimeapi.FilesystemUsage{Timestamp: ts, FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: n.layerFs},
				UsedBytes: v(4096), InodesUsed: v(3)}
		}
		return s
	}
	n.cri.setStats([]*runtimeapi.ContainerStats{
		// containerd's first rate of a container is 0.
		stat("c-app", "app", cpu(appCPU, 0), &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: v(1000), UsageBytes: v(2000), RssBytes: v(500)}, true),
		stat("c-app-0", "app", cpu(5, 0), &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: v(1)}, true),
		// containerd's available memory without a limit is 0.
		stat("c-side", "sidecar", cpu(500_000_000, 300_000_000), &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: v(300), UsageBytes: v(400), AvailableBytes: v(0)}, true),
		stat("c-old", "app", cpu(7, 0), nil, false),
		stat("c-run", "run", cpu(100_000_000, 0), &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: v(100), UsageBytes: v(150),
			RssBytes: v(50), PageFaults: v(1), MajorPageFaults: v(0), AvailableBytes: v(900)}, false),
		stat("c-help", "helper", cpu(200_000_000, 0), &runtimeapi.MemoryUsage{Timestamp: ts, WorkingSetBytes: v(200), UsageBytes: v(250),
			RssBytes: v(60), PageFaults: v(2), MajorPageFaults: v(1), AvailableBytes: v(800)}, false),
		stat("c-unknown", "ghost", cpu(9, 0), nil, false),
	})
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestSummaryNode(t *testing.T) {
	n := newTestNode(t)
	s, err := n.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	node := s.Node
	checks := []struct {
		what      string
		got, want any
	}{
		{"nodeName", node.NodeName, "node-1"},
		{"startTime (btime)", node.StartTime.Unix(), int64(1700000000)},
		{"cpu usage (root cpuacct)", val(node.CPU.UsageCoreNanoSeconds), uint64(5000000000000)},
		{"cpu rate on the first sample", node.CPU.UsageNanoCores, (*uint64)(nil)},
		{"cpu psi", node.CPU.PSI.Some.Total, uint64(123456)},
		{"memory working set", val(node.Memory.WorkingSetBytes), uint64(2000000000)},
		{"memory usage", val(node.Memory.UsageBytes), uint64(3000000000)},
		{"memory available = MemTotal - working set", val(node.Memory.AvailableBytes), uint64(8000000*1024 - 2000000000)},
		{"memory rss", val(node.Memory.RSSBytes), uint64(500000000)},
		{"memory psi", node.Memory.PSI.Full.Total, uint64(300)},
		{"swap usage (SwapTotal - SwapFree)", val(node.Swap.SwapUsageBytes), uint64(4096)},
		{"swap available (SwapFree)", val(node.Swap.SwapAvailableBytes), uint64(1048572 * 1024)},
		{"io psi", node.IO.PSI.Some.Total, uint64(777)},
		{"network interfaces", ifaceNames(node.Network.Interfaces), "eth0,cni0"},
		{"network default interface", node.Network.Name, "eth0"},
		{"network eth0 rx", val(node.Network.RxBytes), uint64(479273110)},
		{"image fs used", val(node.Runtime.ImageFs.UsedBytes), uint64(12345)},
		{"image fs inodes used", val(node.Runtime.ImageFs.InodesUsed), uint64(67)},
		{"image fs has capacity", val(node.Runtime.ImageFs.CapacityBytes) > 0, true},
		{"container fs is the image fs", node.Runtime.ContainerFs, node.Runtime.ImageFs},
		{"rlimit maxpid (min of pid_max, threads-max)", *node.Rlimit.MaxPID, int64(191304)},
		{"rlimit curproc", *node.Rlimit.NumOfRunningProcesses, int64(345)},
		{"system containers", len(node.SystemContainers), 1},
	}
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}
	if fs := node.Fs; fs == nil || val(fs.CapacityBytes) == 0 || fs.UsedBytes == nil || fs.AvailableBytes == nil {
		t.Errorf("node fs %+v: want capacity, usage and free space of the root directory's filesystem", fs)
	}
	pods := node.SystemContainers[0]
	if pods.Name != "pods" || val(pods.CPU.UsageCoreNanoSeconds) != 40000000000 ||
		val(pods.Memory.WorkingSetBytes) != 500000000 || val(pods.Memory.AvailableBytes) != 6500000000 {
		t.Errorf("pods system container %s: cpu %v, memory %+v", pods.Name, pods.CPU, pods.Memory)
	}
}

func TestSummaryPods(t *testing.T) {
	n := newTestNode(t)
	s, err := n.p.Summary(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, p := range s.Pods {
		refs = append(refs, p.PodRef.Namespace+"/"+p.PodRef.Name+"@"+p.PodRef.UID)
	}
	// The ready sandbox of default/web only; default/idle has nothing running.
	if got := strings.Join(refs, " "); got != "batch/job@uid-b default/web@uid-a" {
		t.Fatalf("pods %s, want batch/job@uid-b default/web@uid-a", got)
	}
	job, web := s.Pods[0], s.Pods[1]

	// web: CPU and memory from its cgroup; network from its sandbox's
	// process; app's dead instance left out.
	checks := []struct {
		what      string
		got, want any
	}{
		{"web start time (sandbox created)", web.StartTime.Time, timeAt(100)},
		{"web containers", containerNames(web.Containers), "app,sidecar"},
		{"web cpu (pod cgroup)", val(web.CPU.UsageCoreNanoSeconds), uint64(2500000000)},
		{"web memory working set (pod cgroup)", val(web.Memory.WorkingSetBytes), uint64(40000000)},
		{"web memory available without a limit", web.Memory.AvailableBytes, (*uint64)(nil)},
		{"web swap", val(web.Swap.SwapUsageBytes), uint64(0)},
		{"web network interfaces", ifaceNames(web.Network.Interfaces), "eth0"},
		{"web network rx", val(web.Network.RxBytes), uint64(7000)},
		{"web network tx errors", val(web.Network.TxErrors), uint64(2)},
		{"job network (no pid known)", job.Network, (*statsapi.NetworkStats)(nil)},
	}
	app, side := web.Containers[0], web.Containers[1]
	checks = append(checks, []struct {
		what      string
		got, want any
	}{
		{"app start time (created)", app.StartTime.Time, timeAt(101)},
		{"app cpu", val(app.CPU.UsageCoreNanoSeconds), uint64(1_000_000_000)},
		{"app cpu time", app.CPU.Time.Time, timeAt(200)},
		{"app rate: containerd's first 0 is no rate", app.CPU.UsageNanoCores, (*uint64)(nil)},
		{"sidecar rate from the runtime", val(side.CPU.UsageNanoCores), uint64(300_000_000)},
		{"app working set", val(app.Memory.WorkingSetBytes), uint64(1000)},
		{"app available not reported", app.Memory.AvailableBytes, (*uint64)(nil)},
		{"sidecar available: containerd's 0 for no limit", side.Memory.AvailableBytes, (*uint64)(nil)},
		{"app swap not reported", app.Swap, (*statsapi.SwapStats)(nil)},
		{"app rootfs used", val(app.Rootfs.UsedBytes), uint64(4096)},
		{"app rootfs inodes used", val(app.Rootfs.InodesUsed), uint64(3)},
		{"app rootfs capacity", val(app.Rootfs.CapacityBytes) > 0, true},
		{"app logs: one file", val(app.Logs.InodesUsed), uint64(1)},
		{"app logs: its blocks", val(app.Logs.UsedBytes) >= 9000, true},
	}...)

	// job: no cgroup, so the sums of its containers.
	checks = append(checks, []struct {
		what      string
		got, want any
	}{
		{"job containers", containerNames(job.Containers), "helper,run"},
		{"job cpu (sum)", val(job.CPU.UsageCoreNanoSeconds), uint64(300_000_000)},
		{"job cpu rate (no container has one)", job.CPU.UsageNanoCores, (*uint64)(nil)},
		{"job working set (sum)", val(job.Memory.WorkingSetBytes), uint64(300)},
		{"job usage (sum)", val(job.Memory.UsageBytes), uint64(400)},
		{"job rss (sum)", val(job.Memory.RSSBytes), uint64(110)},
		{"job major faults (sum)", val(job.Memory.MajorPageFaults), uint64(1)},
		{"job available (sum)", val(job.Memory.AvailableBytes), uint64(1700)},
		{"job container without a writable layer", job.Containers[0].Rootfs, (*statsapi.FsStats)(nil)},
		{"job container without logs", job.Containers[0].Logs, (*statsapi.FsStats)(nil)},
	}...)
	for _, c := range checks {
		if !equal(c.got, c.want) {
			t.Errorf("%s: %v, want %v", c.what, c.got, c.want)
		}
	}

	// Ephemeral storage: writable layers and logs of the containers,
	// the etc-hosts file.
	eph := web.EphemeralStorage
	wantUsed := val(app.Rootfs.UsedBytes) + val(app.Logs.UsedBytes) + val(side.Rootfs.UsedBytes) + val(side.Logs.UsedBytes)
	if eph == nil || val(eph.UsedBytes) <= wantUsed || val(eph.InodesUsed) != 3+1+3+1+1 || val(eph.CapacityBytes) == 0 {
		t.Errorf("web ephemeral storage %+v: want more than %d bytes (etc-hosts too), 9 inodes, a capacity", eph, wantUsed)
	}
	// web's pid is kept for the next request; job, without one, is asked
	// again.
	if _, err := n.p.Summary(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	if c := n.cri.callCount("PodSandboxStatus"); c != 3 {
		t.Errorf("PodSandboxStatus called %d times over two requests, want 3", c)
	}
}

func TestSummaryRatesBetweenRequests(t *testing.T) {
	n := newTestNode(t)
	ctx := context.Background()
	if _, err := n.p.Summary(ctx, true); err != nil {
		t.Fatal(err)
	}
	// Two seconds later app has used one more second: half a core.
	n.setStats(202, 2_000_000_000)
	n.clock.Advance(2 * time.Second)
	s, err := n.p.Summary(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if got := val(web.Containers[0].CPU.UsageNanoCores); got != 500_000_000 {
		t.Errorf("app rate %d nanocores, want 500000000", got)
	}
	// The fixture's counters stand still: the node and pod rates are 0,
	// but known.
	if s.Node.CPU.UsageNanoCores == nil || *s.Node.CPU.UsageNanoCores != 0 {
		t.Errorf("node rate %v, want 0", fmtPtr(s.Node.CPU.UsageNanoCores))
	}
	if web.CPU.UsageNanoCores == nil || *web.CPU.UsageNanoCores != 0 {
		t.Errorf("web rate %v, want 0", fmtPtr(web.CPU.UsageNanoCores))
	}
	// job's sum has a rate now that both containers have one.
	if got := s.Pods[0].CPU.UsageNanoCores; got == nil || *got != 0 {
		t.Errorf("job rate %v, want 0", fmtPtr(got))
	}
}

func TestSummaryOnlyCPUAndMemory(t *testing.T) {
	n := newTestNode(t)
	n.cri.fail = map[string]error{"ImageFsInfo": errors.New("image service down")}
	s, err := n.p.Summary(context.Background(), true)
	if err != nil {
		t.Fatalf("the image service is not needed for CPU and memory: %v", err)
	}
	node := s.Node
	if node.CPU == nil || node.Memory == nil || node.Swap == nil || len(node.SystemContainers) != 1 || node.StartTime.IsZero() {
		t.Errorf("node %+v: want cpu, memory, swap, the pods system container and a start time", node)
	}
	if node.Network != nil || node.Fs != nil || node.Runtime != nil || node.Rlimit != nil || node.IO != nil {
		t.Errorf("node %+v: want no network, fs, runtime, rlimit nor io", node)
	}
	for _, p := range s.Pods {
		if p.Network != nil || p.EphemeralStorage != nil || p.CPU == nil || p.Memory == nil {
			t.Errorf("pod %s: network %v, ephemeral storage %v, cpu %v, memory %v", p.PodRef.Name, p.Network, p.EphemeralStorage, p.CPU, p.Memory)
		}
		for _, c := range p.Containers {
			if c.Rootfs != nil || c.Logs != nil {
				t.Errorf("container %s/%s: rootfs or logs given", p.PodRef.Name, c.Name)
			}
		}
	}
	if c := n.cri.callCount("PodSandboxStatus"); c != 0 {
		t.Errorf("PodSandboxStatus called %d times, want none", c)
	}
}

func TestSummaryCRIFailures(t *testing.T) {
	for _, method := range []string{"ListPodSandbox", "ListContainers", "ListContainerStats", "ImageFsInfo"} {
		t.Run(method, func(t *testing.T) {
			n := newTestNode(t)
			n.cri.fail = map[string]error{method: errors.New("rpc error: code = Unavailable")}
			_, err := n.p.Summary(context.Background(), false)
			if err == nil || !strings.Contains(err.Error(), "CRI "+method) || !strings.Contains(err.Error(), "Unavailable") {
				t.Errorf("error %v, want one naming CRI %s and its cause", err, method)
			}
		})
	}
	t.Run("PodSandboxStatus only loses the network", func(t *testing.T) {
		n := newTestNode(t)
		n.cri.fail = map[string]error{"PodSandboxStatus": errors.New("rpc error: code = Unavailable")}
		s, err := n.p.Summary(context.Background(), false)
		if err != nil {
			t.Fatal(err)
		}
		if web := s.Pods[1]; web.Network != nil || web.CPU == nil {
			t.Errorf("web: network %v, cpu %v; want no network, the rest", web.Network, web.CPU)
		}
	})
	t.Run("a sandbox process gone only loses the network, and is asked again", func(t *testing.T) {
		n := newTestNode(t)
		n.cri.pids = map[string]int{"sb-a": 999999} // no such process in the fixture
		for i := 1; i <= 2; i++ {
			s, err := n.p.Summary(context.Background(), false)
			if err != nil {
				t.Fatal(err)
			}
			if web := s.Pods[1]; web.Network != nil || web.CPU == nil {
				t.Errorf("web: network %v, cpu %v; want no network, the rest", web.Network, web.CPU)
			}
		}
		// Once per request for web, once per request for job (no pid).
		if c := n.cri.callCount("PodSandboxStatus"); c != 4 {
			t.Errorf("PodSandboxStatus called %d times, want 4: a pid whose process is gone is not kept", c)
		}
	})
	t.Run("no image filesystem", func(t *testing.T) {
		n := newTestNode(t)
		n.cri.imageFs = nil
		if _, err := n.p.Summary(context.Background(), false); err == nil || !strings.Contains(err.Error(), "no image filesystem") {
			t.Errorf("error %v, want no image filesystem", err)
		}
	})
	t.Run("root directory missing", func(t *testing.T) {
		n := newTestNode(t)
		n.p.RootDir = filepath.Join(t.TempDir(), "absent")
		if _, err := n.p.Summary(context.Background(), false); err == nil || !strings.Contains(err.Error(), "absent") {
			t.Errorf("error %v, want one naming the root directory", err)
		}
	})
}

func TestSummaryNodeWithoutCgroups(t *testing.T) {
	tests := []struct {
		host                 string
		cpu, working, avail  uint64
		swapUsed, swapAvail  uint64
		pageFaults           uint64
		systemContainerCount int
	}{
		// /proc/stat busy ticks; MemTotal - MemFree - Inactive(file).
		{"testdata/nocgroup", 170 * 10_000_000, 3000000*1024 - 500000*1024, 4000000*1024 - 2500000*1024, 0, 0, 10, 0},
		// cgroup v2 root: cpu.stat, memory.stat; swap from meminfo.
		{"testdata/v2", 7_000_000_000, 750000000, 2000000*1024 - 750000000, 0, 0, 99, 1},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			n := newTestNode(t)
			n.p.HostRoot = tt.host
			s, err := n.p.Summary(context.Background(), true)
			if err != nil {
				t.Fatal(err)
			}
			node := s.Node
			if val(node.CPU.UsageCoreNanoSeconds) != tt.cpu || val(node.Memory.WorkingSetBytes) != tt.working ||
				val(node.Memory.AvailableBytes) != tt.avail || val(node.Memory.PageFaults) != tt.pageFaults {
				t.Errorf("cpu %d working set %d available %d faults %d; want %d %d %d %d",
					val(node.CPU.UsageCoreNanoSeconds), val(node.Memory.WorkingSetBytes), val(node.Memory.AvailableBytes), val(node.Memory.PageFaults),
					tt.cpu, tt.working, tt.avail, tt.pageFaults)
			}
			if node.Swap == nil || val(node.Swap.SwapUsageBytes) != tt.swapUsed || val(node.Swap.SwapAvailableBytes) != tt.swapAvail {
				t.Errorf("swap %+v, want used %d available %d", node.Swap, tt.swapUsed, tt.swapAvail)
			}
			if node.CPU.PSI != nil {
				t.Errorf("cpu psi %+v on a host without /proc/pressure", node.CPU.PSI)
			}
			if len(node.SystemContainers) != tt.systemContainerCount {
				t.Errorf("%d system containers, want %d", len(node.SystemContainers), tt.systemContainerCount)
			}
		})
	}
}

func TestSummaryV2PodCgroup(t *testing.T) {
	n := newTestNode(t)
	n.p.HostRoot = "testdata/v2"
	s, err := n.p.Summary(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	web := s.Pods[1]
	if val(web.CPU.UsageCoreNanoSeconds) != 1_500_000_000 || val(web.Memory.WorkingSetBytes) != 75000000 ||
		web.CPU.PSI == nil || web.CPU.PSI.Full.Total != 1000 || val(web.Swap.SwapUsageBytes) != 1048576 || val(web.Swap.SwapAvailableBytes) != 1048576 {
		t.Errorf("web from its burstable v2 cgroup: cpu %+v memory %+v swap %+v", web.CPU, web.Memory, web.Swap)
	}
}

func TestSumContainers(t *testing.T) {
	u := func(v uint64) *uint64 { return &v }
	cpu, mem, swap := sumContainers([]statsapi.ContainerStats{
		{Name: "a", CPU: &statsapi.CPUStats{Time: metaTime(timeAt(1)), UsageCoreNanoSeconds: u(10), UsageNanoCores: u(1)},
			Memory: &statsapi.MemoryStats{Time: metaTime(timeAt(3)), WorkingSetBytes: u(100), RSSBytes: u(7)}},
		{Name: "b", CPU: &statsapi.CPUStats{Time: metaTime(timeAt(2)), UsageCoreNanoSeconds: u(20)},
			Memory: &statsapi.MemoryStats{Time: metaTime(timeAt(2)), WorkingSetBytes: u(50)}},
		{Name: "c"},
	})
	if val(cpu.UsageCoreNanoSeconds) != 30 || cpu.UsageNanoCores != nil || !cpu.Time.Time.Equal(timeAt(2)) {
		t.Errorf("cpu %+v: want 30 ns, no rate (b has none), the latest time", cpu)
	}
	if val(mem.WorkingSetBytes) != 150 || mem.RSSBytes != nil || !mem.Time.Time.Equal(timeAt(3)) {
		t.Errorf("memory %+v: want 150 working set, no rss (b has none), the latest time", mem)
	}
	if swap != nil {
		t.Errorf("swap %+v from containers without swap", swap)
	}
}

func val[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func equal(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return a == b
}

func ifaceNames(ifaces []statsapi.InterfaceStats) string {
	var names []string
	for _, i := range ifaces {
		names = append(names, i.Name)
	}
	return strings.Join(names, ",")
}

func containerNames(cs []statsapi.ContainerStats) string {
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
	}
	return strings.Join(names, ",")
}
