package stats

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// podStats assembles the summary's pods as upstream's CRI stats provider
// without pod sandbox stats: one entry per sandbox with at least one
// running container that the runtime has statistics for.
func (p *Provider) podStats(ctx context.Context, now time.Time, onlyCPUAndMemory bool, nodeFs fsInfo, specs PodSpecs) ([]statsapi.PodStats, error) {
	inv, err := p.inventory(ctx)
	if err != nil {
		return nil, err
	}
	sandboxByID, containerByID := inv.sandboxes, inv.containers

	bySandbox := map[string]*statsapi.PodStats{}
	fsByMountpoint := map[string]*fsInfo{}
	for _, st := range inv.stats {
		c, ok := containerByID[st.GetAttributes().GetId()]
		if !ok {
			continue
		}
		sb, ok := sandboxByID[c.GetPodSandboxId()]
		if !ok {
			continue
		}
		ps, ok := bySandbox[sb.GetId()]
		if !ok {
			ps = newPodStats(sb)
			bySandbox[sb.GetId()] = ps
		}
		cs := p.containerStats(st, c, now)
		if !onlyCPUAndMemory {
			cs.Rootfs = p.containerRootfs(st, fsByMountpoint, now)
			cs.Logs = p.containerLogs(ps.PodRef, cs.Name, nodeFs, now)
		}
		ps.Containers = append(ps.Containers, cs)
	}

	// The pods' volumes are measured concurrently: a hung CSI driver
	// costs the request its timeout once, not once per pod.
	volsBySandbox := map[string][]podVolume{}
	if !onlyCPUAndMemory {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for id, ps := range bySandbox {
			wg.Go(func() {
				var pod *v1.Pod
				if specs != nil {
					pod = specs(ps.PodRef.UID)
				}
				vols := p.podVolumes(ps.PodRef.UID, pod, now)
				mu.Lock()
				volsBySandbox[id] = vols
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	pods := make([]statsapi.PodStats, 0, len(bySandbox))
	for id, ps := range bySandbox {
		p.addPodCPUAndMemory(ps, now)
		if !onlyCPUAndMemory {
			ps.Network = p.podNetwork(ctx, sandboxByID[id], now)
			vols := volsBySandbox[id]
			ps.VolumeStats = volumeStats(vols)
			ps.EphemeralStorage = p.podEphemeralStorage(ps, vols, nodeFs, now)
		}
		slices.SortFunc(ps.Containers, func(a, b statsapi.ContainerStats) int { return cmp.Compare(a.Name, b.Name) })
		pods = append(pods, *ps)
	}
	slices.SortFunc(pods, func(a, b statsapi.PodStats) int {
		return cmp.Or(cmp.Compare(a.PodRef.Namespace, b.PodRef.Namespace),
			cmp.Compare(a.PodRef.Name, b.PodRef.Name), cmp.Compare(a.PodRef.UID, b.PodRef.UID))
	})
	p.forgetSandboxPIDs(sandboxByID)
	return pods, nil
}

// criInventory is what the runtime lists of the pods: the current
// sandboxes and the running containers by ID, and the containers' figures.
type criInventory struct {
	sandboxes  map[string]*runtimeapi.PodSandbox
	containers map[string]*runtimeapi.Container
	stats      []*runtimeapi.ContainerStats
}

// inventory lists the pods' sandboxes, containers and their figures, as
// the summary and /metrics/cadvisor see them: the current sandboxes of
// each pod and only running containers (dead instances would count twice
// next to their successor).
func (p *Provider) inventory(ctx context.Context) (criInventory, error) {
	containers, err := p.Runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
	if err != nil {
		return criInventory{}, fmt.Errorf("CRI ListContainers: %w", err)
	}
	sandboxes, err := p.Runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return criInventory{}, fmt.Errorf("CRI ListPodSandbox: %w", err)
	}
	resp, err := p.Runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{})
	if err != nil {
		return criInventory{}, fmt.Errorf("CRI ListContainerStats: %w", err)
	}
	inv := criInventory{
		sandboxes:  map[string]*runtimeapi.PodSandbox{},
		containers: map[string]*runtimeapi.Container{},
		stats:      resp.GetStats(),
	}
	for _, sb := range currentSandboxes(sandboxes.GetItems()) {
		inv.sandboxes[sb.GetId()] = sb
	}
	for _, c := range containers.GetContainers() {
		if c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			inv.containers[c.GetId()] = c
		}
	}
	return inv, nil
}

// currentSandboxes drops the dead sandboxes of a pod that has another one,
// as upstream's removeTerminatedPods: the ready ones of a (namespace, name)
// stay, or the newest when none is ready.
func currentSandboxes(items []*runtimeapi.PodSandbox) []*runtimeapi.PodSandbox {
	type ref struct{ namespace, name string }
	groups := map[ref][]*runtimeapi.PodSandbox{}
	var order []ref
	for _, sb := range items {
		r := ref{sb.GetMetadata().GetNamespace(), sb.GetMetadata().GetName()}
		if _, ok := groups[r]; !ok {
			order = append(order, r)
		}
		groups[r] = append(groups[r], sb)
	}
	var out []*runtimeapi.PodSandbox
	for _, r := range order {
		group := groups[r]
		var ready []*runtimeapi.PodSandbox
		newest := group[0]
		for _, sb := range group {
			if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
				ready = append(ready, sb)
			}
			if sb.GetCreatedAt() > newest.GetCreatedAt() {
				newest = sb
			}
		}
		if len(ready) == 0 {
			ready = []*runtimeapi.PodSandbox{newest}
		}
		out = append(out, ready...)
	}
	return out
}

func newPodStats(sb *runtimeapi.PodSandbox) *statsapi.PodStats {
	md := sb.GetMetadata()
	return &statsapi.PodStats{
		PodRef: statsapi.PodReference{Name: md.GetName(), Namespace: md.GetNamespace(), UID: md.GetUid()},
		// The summary's pod start time is the sandbox's creation.
		StartTime: metaTime(time.Unix(0, sb.GetCreatedAt())),
	}
}

// containerStats converts CRI's figures of one container. Figures the
// runtime left out stay out.
func (p *Provider) containerStats(st *runtimeapi.ContainerStats, c *runtimeapi.Container, now time.Time) statsapi.ContainerStats {
	name := st.GetAttributes().GetMetadata().GetName()
	if name == "" {
		name = c.GetMetadata().GetName()
	}
	cs := statsapi.ContainerStats{
		Name: name,
		// The summary's container start time is its creation.
		StartTime: metaTime(time.Unix(0, c.GetCreatedAt())),
	}
	if cpu := st.GetCpu(); cpu != nil {
		at := criTime(cpu.GetTimestamp(), now)
		s := &statsapi.CPUStats{Time: metaTime(at), PSI: criPSI(cpu.GetPsi())}
		if u := cpu.GetUsageCoreNanoSeconds(); u != nil {
			s.UsageCoreNanoSeconds = ptrTo(u.GetValue())
			s.UsageNanoCores = p.rates.observe(st.GetAttributes().GetId(), at, u.GetValue())
		}
		// The runtime's rate wins, as upstream, unless it is the 0 that
		// containerd answers on its first sample of a container.
		if n := cpu.GetUsageNanoCores(); n != nil && n.GetValue() > 0 {
			s.UsageNanoCores = ptrTo(n.GetValue())
		}
		cs.CPU = s
	}
	if m := st.GetMemory(); m != nil {
		cs.Memory = &statsapi.MemoryStats{
			Time:            metaTime(criTime(m.GetTimestamp(), now)),
			AvailableBytes:  criAvailable(m.GetAvailableBytes()),
			UsageBytes:      criValue(m.GetUsageBytes()),
			WorkingSetBytes: criValue(m.GetWorkingSetBytes()),
			RSSBytes:        criValue(m.GetRssBytes()),
			PageFaults:      criValue(m.GetPageFaults()),
			MajorPageFaults: criValue(m.GetMajorPageFaults()),
			PSI:             criPSI(m.GetPsi()),
		}
	}
	if s := st.GetSwap(); s != nil {
		cs.Swap = &statsapi.SwapStats{
			Time:               metaTime(criTime(s.GetTimestamp(), now)),
			SwapUsageBytes:     criValue(s.GetSwapUsageBytes()),
			SwapAvailableBytes: criValue(s.GetSwapAvailableBytes()),
		}
	}
	return cs
}

// addPodCPUAndMemory fills a pod's CPU, memory and swap from its cgroup,
// as upstream does through cAdvisor, else from its containers' sums.
func (p *Provider) addPodCPUAndMemory(ps *statsapi.PodStats, now time.Time) {
	if name, ok := p.podCgroup(ps.PodRef.UID); ok {
		cpu, mem, swap, err := p.cgroupStats(name, "pod:"+ps.PodRef.UID, now)
		if err == nil {
			ps.CPU, ps.Memory, ps.Swap = cpu, mem, swap
			return
		}
		p.Log.Debug().Err(err).Str("pod", ps.PodRef.Namespace+"/"+ps.PodRef.Name).Msg("pod cgroup unreadable; summing containers")
	}
	ps.CPU, ps.Memory, ps.Swap = sumContainers(ps.Containers)
}

// sumContainers adds up the containers' figures. A pod figure is given
// only when every container that reports that kind of figure has it: a
// sum missing one container's share would pass for the pod's.
func sumContainers(cs []statsapi.ContainerStats) (*statsapi.CPUStats, *statsapi.MemoryStats, *statsapi.SwapStats) {
	var cpu *statsapi.CPUStats
	var mem *statsapi.MemoryStats
	var swap *statsapi.SwapStats
	var cpuRows, memRows, swapRows [][]*uint64
	for _, c := range cs {
		if c.CPU != nil {
			if cpu == nil || c.CPU.Time.After(cpu.Time.Time) {
				cpu = &statsapi.CPUStats{Time: c.CPU.Time}
			}
			cpuRows = append(cpuRows, []*uint64{c.CPU.UsageNanoCores, c.CPU.UsageCoreNanoSeconds})
		}
		if m := c.Memory; m != nil {
			if mem == nil || m.Time.After(mem.Time.Time) {
				mem = &statsapi.MemoryStats{Time: m.Time}
			}
			memRows = append(memRows, []*uint64{m.AvailableBytes, m.UsageBytes, m.WorkingSetBytes, m.RSSBytes, m.PageFaults, m.MajorPageFaults})
		}
		if c.Swap != nil {
			if swap == nil || c.Swap.Time.After(swap.Time.Time) {
				swap = &statsapi.SwapStats{Time: c.Swap.Time}
			}
			swapRows = append(swapRows, []*uint64{c.Swap.SwapAvailableBytes, c.Swap.SwapUsageBytes})
		}
	}
	if cpu != nil {
		s := sumColumns(cpuRows)
		cpu.UsageNanoCores, cpu.UsageCoreNanoSeconds = s[0], s[1]
	}
	if mem != nil {
		s := sumColumns(memRows)
		mem.AvailableBytes, mem.UsageBytes, mem.WorkingSetBytes, mem.RSSBytes, mem.PageFaults, mem.MajorPageFaults = s[0], s[1], s[2], s[3], s[4], s[5]
	}
	if swap != nil {
		s := sumColumns(swapRows)
		swap.SwapAvailableBytes, swap.SwapUsageBytes = s[0], s[1]
	}
	return cpu, mem, swap
}

// sumColumns sums each column of rows of equal width; a column with a
// value missing in any row is nil.
func sumColumns(rows [][]*uint64) []*uint64 {
	out := make([]*uint64, len(rows[0]))
	for i := range out {
		var total uint64
		complete := true
		for _, r := range rows {
			if r[i] == nil {
				complete = false
				break
			}
			total += *r[i]
		}
		if complete {
			out[i] = ptrTo(total)
		}
	}
	return out
}

func criValue(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	return ptrTo(v.GetValue())
}

// criAvailable is a container's available memory. containerd answers 0
// for a container without a memory limit, which consumers would read as
// memory exhausted: left out, as the cgroups' figures without a limit.
func criAvailable(v *runtimeapi.UInt64Value) *uint64 {
	if v.GetValue() == 0 {
		return nil
	}
	return ptrTo(v.GetValue())
}

func criPSI(s *runtimeapi.PsiStats) *statsapi.PSIStats {
	if s == nil {
		return nil
	}
	data := func(d *runtimeapi.PsiData) statsapi.PSIData {
		return statsapi.PSIData{Total: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
	}
	return &statsapi.PSIStats{Full: data(s.GetFull()), Some: data(s.GetSome())}
}
