package stats

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	cgroupnames "github.com/actorlet/actorlet/internal/cgroups"
)

// rateKeyNode keys the node's CPU samples among the containers' IDs.
const rateKeyNode = "node"

// nodeStats assembles the summary's node: CPU, memory and swap always;
// network, filesystems, process limit and I/O pressure in the full summary.
func (p *Provider) nodeStats(ctx context.Context, now time.Time, onlyCPUAndMemory bool, nodeFs fsInfo) (statsapi.NodeStats, error) {
	n := statsapi.NodeStats{NodeName: p.NodeName, StartTime: metaTime(p.bootTime)}
	var err error
	if n.CPU, err = p.nodeCPU(now); err != nil {
		return n, err
	}
	if n.Memory, n.Swap, err = p.nodeMemory(now); err != nil {
		return n, err
	}
	if sc, ok := p.podsSystemContainer(now); ok {
		n.SystemContainers = []statsapi.ContainerStats{sc}
	}
	if onlyCPUAndMemory {
		return n, nil
	}
	n.Network = p.nodeNetwork(now)
	n.Fs = nodeFs.fullStats()
	imageFs, err := p.imageFs(ctx)
	if err != nil {
		return n, err
	}
	// As upstream's CRI provider: one filesystem for images and
	// writable layers.
	n.Runtime = &statsapi.RuntimeStats{ImageFs: imageFs, ContainerFs: imageFs}
	n.Rlimit = p.rlimit(now)
	if psi := p.hostPressure("io"); psi != nil {
		n.IO = &statsapi.IOStats{Time: metaTime(now), PSI: psi}
	}
	return n, nil
}

// nodeCPU is the root cgroup's CPU time, else /proc/stat's busy time.
func (p *Provider) nodeCPU(now time.Time) (*statsapi.CPUStats, error) {
	usage, err := p.cgroups.cpuNanos("/")
	if err != nil {
		p.Log.Debug().Err(err).Msg("root cgroup CPU unreadable; node CPU from /proc/stat")
		path := p.hostPath("proc", "stat")
		data, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, fmt.Errorf("node CPU: root cgroup: %v; %w", err, rerr)
		}
		if usage, err = procStatBusyNanos(data); err != nil {
			return nil, fmt.Errorf("node CPU: %s: %w", path, err)
		}
	}
	return &statsapi.CPUStats{
		Time:                 metaTime(now),
		UsageCoreNanoSeconds: ptrTo(usage),
		UsageNanoCores:       p.rates.observe(rateKeyNode, now, usage),
		PSI:                  p.hostPressure("cpu"),
	}, nil
}

// nodeMemory is the root memory cgroup's figures with the machine's
// memory as limit (as cAdvisor's root container), else /proc/meminfo's.
func (p *Provider) nodeMemory(now time.Time) (*statsapi.MemoryStats, *statsapi.SwapStats, error) {
	path := p.hostPath("proc", "meminfo")
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("node memory: %w", err)
	}
	mi, err := parseMeminfo(data)
	if err != nil {
		return nil, nil, fmt.Errorf("node memory: %s: %w", path, err)
	}
	total, ok := mi["MemTotal"]
	if !ok {
		return nil, nil, fmt.Errorf("node memory: %s has no MemTotal", path)
	}
	m, err := p.cgroups.memory("/")
	if err != nil {
		p.Log.Debug().Err(err).Msg("root memory cgroup unreadable; node memory from /proc/meminfo")
		m = p.meminfoFigures(mi)
	}
	m.limit = total
	mem := m.stats(now)
	mem.PSI = p.hostPressure("memory")

	// The machine's swap, from meminfo: on cgroup v1 the root's memsw
	// less its usage are two separately batched sums, pages apart even
	// on a machine without swap.
	var swap *statsapi.SwapStats
	swapTotal, hasTotal := mi["SwapTotal"]
	if swapFree, hasFree := mi["SwapFree"]; hasTotal && hasFree {
		swap = &statsapi.SwapStats{
			Time:               metaTime(now),
			SwapUsageBytes:     ptrTo(saturatingSub(swapTotal, swapFree)),
			SwapAvailableBytes: ptrTo(swapFree),
		}
	}
	return mem, swap, nil
}

// meminfoFigures derives the root cgroup's figures from /proc/meminfo:
// everything not free is in use, and inactive file pages are reclaimable.
func (p *Provider) meminfoFigures(mi map[string]uint64) memoryFigures {
	m := memoryFigures{
		usage: saturatingSub(mi["MemTotal"], mi["MemFree"]),
		rss:   mi["AnonPages"],
	}
	m.workingSet = saturatingSub(m.usage, mi["Inactive(file)"])
	if data, err := os.ReadFile(p.hostPath("proc", "vmstat")); err == nil {
		vm := parseKeyedValues(data)
		m.pageFaults, m.majorPageFaults = vm["pgfault"], vm["pgmajfault"]
	}
	return m
}

// hostPressure is the machine's PSI for resource, which is the root
// cgroup's; nil on kernels without PSI.
func (p *Provider) hostPressure(resource string) *statsapi.PSIStats {
	data, err := os.ReadFile(p.hostPath("proc", "pressure", resource))
	if err != nil {
		return nil
	}
	psi, err := parsePressure(data)
	if err != nil {
		p.Log.Debug().Err(err).Str("resource", resource).Msg("pressure unreadable")
		return nil
	}
	return psi
}

// nodeNetwork is the host network namespace's interfaces; nil, logged,
// when unreadable: the rest of the summary is still worth answering.
func (p *Provider) nodeNetwork(now time.Time) *statsapi.NetworkStats {
	path := p.hostPath("proc", "net", "dev")
	data, err := os.ReadFile(path)
	if err == nil {
		var ifaces []statsapi.InterfaceStats
		if ifaces, err = parseNetDev(data); err == nil {
			return networkStats(now, ifaces)
		}
	}
	p.Log.Warn().Err(err).Str("file", path).Msg("node network statistics left out")
	return nil
}

// podsSystemContainer is the "pods" system container: the cgroup all pods
// are under. Left out, as upstream, when it cannot be read.
func (p *Provider) podsSystemContainer(now time.Time) (statsapi.ContainerStats, bool) {
	if p.PodCgroupRoot == "" || !p.cgroups.exists(p.PodCgroupRoot) {
		return statsapi.ContainerStats{}, false
	}
	cpu, mem, swap, err := p.cgroupStats(p.PodCgroupRoot, "cgroup:"+p.PodCgroupRoot, now)
	if err != nil {
		p.Log.Warn().Err(err).Str("cgroup", p.PodCgroupRoot).Msg("pods system container left out")
		return statsapi.ContainerStats{}, false
	}
	start, err := p.cgroups.startTime(p.PodCgroupRoot, p.bootTime)
	if err != nil {
		start = p.bootTime
	}
	return statsapi.ContainerStats{
		Name: statsapi.SystemContainerPods, StartTime: metaTime(start), CPU: cpu, Memory: mem, Swap: swap,
	}, true
}

// cgroupStats reads a cgroup's CPU, memory and swap; rateKey keys its
// CPU samples.
func (p *Provider) cgroupStats(name, rateKey string, now time.Time) (*statsapi.CPUStats, *statsapi.MemoryStats, *statsapi.SwapStats, error) {
	usage, err := p.cgroups.cpuNanos(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cgroup %s CPU: %w", name, err)
	}
	m, err := p.cgroups.memory(name)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("cgroup %s memory: %w", name, err)
	}
	cpu := &statsapi.CPUStats{
		Time:                 metaTime(now),
		UsageCoreNanoSeconds: ptrTo(usage),
		UsageNanoCores:       p.rates.observe(rateKey, now, usage),
		PSI:                  p.cgroups.pressure(name, "cpu"),
	}
	mem := m.stats(now)
	mem.PSI = p.cgroups.pressure(name, "memory")
	var swap *statsapi.SwapStats
	if used, limit, ok := p.cgroups.swapUsage(name, m); ok {
		swap = &statsapi.SwapStats{Time: metaTime(now), SwapUsageBytes: ptrTo(used)}
		if limit <= maxMemory {
			swap.SwapAvailableBytes = ptrTo(saturatingSub(limit, used))
		}
	}
	return cpu, mem, swap, nil
}

// imageFs is the runtime's image filesystem: usage from CRI, size and
// free space from statfs of its mountpoint when this host has it (partial
// otherwise, as upstream).
func (p *Provider) imageFs(ctx context.Context) (*statsapi.FsStats, error) {
	resp, err := p.Images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		return nil, fmt.Errorf("CRI ImageFsInfo: %w", err)
	}
	if len(resp.GetImageFilesystems()) == 0 {
		return nil, fmt.Errorf("CRI ImageFsInfo: no image filesystem in the answer")
	}
	// Upstream reports the first one only.
	fs := resp.GetImageFilesystems()[0]
	s := &statsapi.FsStats{}
	mountpoint := fs.GetFsId().GetMountpoint()
	if info, err := statFS(mountpoint); err == nil {
		s = info.capacityStats()
	} else {
		p.Log.Debug().Err(err).Msg("image filesystem size left out")
	}
	s.Time = metaTime(criTime(fs.GetTimestamp(), p.now()))
	if fs.GetUsedBytes() != nil {
		s.UsedBytes = ptrTo(fs.GetUsedBytes().GetValue())
	}
	if fs.GetInodesUsed() != nil {
		s.InodesUsed = ptrTo(fs.GetInodesUsed().GetValue())
	}
	return s, nil
}

// rlimit is the process limit and count, as upstream's pidlimit.Stats:
// the lower of kernel.pid_max and kernel.threads-max, and the task count
// of /proc/loadavg.
func (p *Provider) rlimit(now time.Time) *statsapi.RlimitStats {
	r := &statsapi.RlimitStats{Time: metaTime(now)}
	for _, name := range []string{"pid_max", "threads-max"} {
		v, err := readUint(p.hostPath("proc", "sys", "kernel", name))
		if err != nil {
			continue
		}
		if max := int64(v); r.MaxPID == nil || max < *r.MaxPID {
			r.MaxPID = &max
		}
	}
	if data, err := os.ReadFile(p.hostPath("proc", "loadavg")); err == nil {
		if n, err := loadavgTasks(data); err == nil {
			r.NumOfRunningProcesses = &n
		}
	}
	return r
}

// criTime is a CRI timestamp (ns since the epoch), or now when the runtime
// left it unset.
func criTime(ns int64, now time.Time) time.Time {
	if ns <= 0 {
		return now
	}
	return time.Unix(0, ns)
}

// podCgroup finds a pod's cgroup under PodCgroupRoot: pod<UID> directly
// (actorlet's layout) or under a QoS class (upstream's), named for
// CgroupDriver as podruntime names them.
func (p *Provider) podCgroup(uid string) (string, bool) {
	if p.PodCgroupRoot == "" || uid == "" || strings.Contains(uid, "/") {
		return "", false
	}
	for _, qos := range []string{"", "burstable", "besteffort"} {
		parent := p.PodCgroupRoot
		if qos != "" {
			parent = cgroupnames.ChildCgroup(parent, p.CgroupDriver, qos)
		}
		name := cgroupnames.PodCgroupName(parent, p.CgroupDriver, types.UID(uid))
		if p.cgroups.exists(name) {
			return name, true
		}
	}
	return "", false
}
