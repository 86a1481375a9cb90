package stats

import (
	"cmp"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	cgroupnames "github.com/actorlet/actorlet/internal/cgroups"
)

// cadvisorLabels are the labels of every container series, as upstream's
// containerPrometheusLabelsFunc: id is the cgroup, name the runtime's
// container ID (cAdvisor's first alias), image, and the pod, namespace and
// container of the kubelet's labels, "" where a series has none.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

// machineLabels are cAdvisor's labels of the machine series.
var machineLabels = []string{"boot_id", "machine_id", "system_uuid"}

// cadvisorSeries is one cgroup as cAdvisor reports it: the root, the pods'
// and QoS classes' cgroups, a pod's cgroup, its sandbox or one of its
// containers.
type cadvisorSeries struct {
	container, id, image, name, namespace, pod string
	// cgroup is the cgroup read for the figures; "" when it was not
	// found, and the runtime's figures are all there is.
	cgroup string
	// created is the runtime's creation time of a container; zero for a
	// bare cgroup, whose creation is its directory's.
	created time.Time
	// stats are the runtime's figures of a container; nil for a bare
	// cgroup.
	stats *runtimeapi.ContainerStats
	// net are the interfaces of the series' network namespace: the
	// host's for the root, the pod's for its sandbox; nil for the rest,
	// as cAdvisor reports a pod's network once, on its sandbox.
	net []netDevice
	// fs are the filesystems the series uses: the node's and the
	// images' for the root, the writable layer's for a container.
	fs []cadvisorFs
}

func (s cadvisorSeries) labels() []string {
	return []string{s.container, s.id, s.image, s.name, s.namespace, s.pod}
}

// cadvisorFs is a series' use of one filesystem.
type cadvisorFs struct {
	device            string
	usage, limit      uint64
	inodes, inodeFree uint64
	hasInodes         bool
}

// CadvisorMetricsHandler serves /metrics/cadvisor: the containers' and the
// machine's figures under cAdvisor's metric names, help texts and labels,
// as upstream's kubelet serves its cAdvisor collector. A failed CRI listing
// sets container_scrape_error and leaves the pods out; the status is 200
// as upstream's (ContinueOnError).
func (p *Provider) CadvisorMetricsHandler() http.Handler {
	return perRequest(func(ctx context.Context) prometheus.Collector { return cadvisorCollector{ctx: ctx, p: p} })
}

type cadvisorCollector struct {
	ctx context.Context
	p   *Provider
}

// Describe sends nothing: the collector is unchecked, as cAdvisor's
// families are declared per scrape.
func (c cadvisorCollector) Describe(chan<- *prometheus.Desc) {}

func (c cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	p := c.p
	p.init()
	now := p.now()
	c.collectMachine(ch, now)
	var scrapeError float64
	series, err := p.cadvisorSeries(c.ctx, now)
	if err != nil {
		scrapeError = 1
		p.Log.Warn().Err(err).Msg("couldn't get containers for /metrics/cadvisor")
	}
	for _, s := range series {
		collectCadvisorSeries(ch, s, p.cgroupDetail(s.cgroup), now)
	}
	ch <- prometheus.MustNewConstMetric(containerScrapeErrorDesc, prometheus.GaugeValue, scrapeError)
}

func (p *Provider) cgroupDetail(name string) cgroupDetail {
	if name == "" {
		return cgroupDetail{}
	}
	return p.cgroups.detail(name, p.bootTime)
}

// collectMachine sends cAdvisor's machine metrics that actorlet knows.
func (c cadvisorCollector) collectMachine(ch chan<- prometheus.Metric, now time.Time) {
	m, err := c.p.Spec()
	if err != nil {
		c.p.Log.Warn().Err(err).Msg("couldn't get machine info for /metrics/cadvisor")
		ch <- prometheus.MustNewConstMetric(machineScrapeErrorDesc, prometheus.GaugeValue, 1)
		return
	}
	labels := []string{m.BootID, m.MachineID, m.SystemUUID}
	gauge := func(d *prometheus.Desc, v uint64) {
		ch <- prometheus.NewMetricWithTimestamp(m.Timestamp, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...))
	}
	gauge(machineCPUCoresDesc, uint64(m.NumCores))
	gauge(machineCPUPhysicalCoresDesc, uint64(m.NumPhysicalCores))
	gauge(machineCPUSocketsDesc, uint64(m.NumSockets))
	gauge(machineMemoryDesc, m.MemoryCapacity)
	gauge(machineSwapDesc, m.SwapCapacity)
	ch <- prometheus.MustNewConstMetric(machineScrapeErrorDesc, prometheus.GaugeValue, 0)
}

// cadvisorSeries lists what cAdvisor would watch on upstream's node: the
// root cgroup, the pods' cgroup and its QoS classes, and per pod with a
// ready sandbox its cgroup, its sandbox and its running containers. The
// root and the pods' cgroups are listed even when the runtime fails.
func (p *Provider) cadvisorSeries(ctx context.Context, now time.Time) ([]cadvisorSeries, error) {
	ctx, cancel := context.WithTimeout(ctx, criTimeout)
	defer cancel()
	mountinfo, _ := os.ReadFile(p.hostPath("proc", "self", "mountinfo"))
	out := []cadvisorSeries{p.rootSeries(ctx, mountinfo)}
	if p.PodCgroupRoot != "" {
		for _, name := range []string{p.PodCgroupRoot,
			cgroupnames.ChildCgroup(p.PodCgroupRoot, p.CgroupDriver, "burstable"),
			cgroupnames.ChildCgroup(p.PodCgroupRoot, p.CgroupDriver, "besteffort")} {
			if p.cgroups.exists(name) {
				out = append(out, cadvisorSeries{id: name, cgroup: name})
			}
		}
	}
	inv, err := p.inventory(ctx)
	if err != nil {
		return out, err
	}
	images := p.imageNames(ctx)
	statsByID := map[string]*runtimeapi.ContainerStats{}
	for _, st := range inv.stats {
		statsByID[st.GetAttributes().GetId()] = st
	}
	podCgroups := map[string]string{} // sandbox ID → pod cgroup
	listedPods := map[string]bool{}   // pod cgroups with their series
	for id, sb := range inv.sandboxes {
		if sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		md := sb.GetMetadata()
		pod := cadvisorSeries{pod: md.GetName(), namespace: md.GetNamespace()}
		if name, ok := p.podCgroup(md.GetUid()); ok {
			podCgroups[id] = name
			pod.id, pod.cgroup = name, name
			// A pod with two ready sandboxes (one being replaced)
			// has one cgroup: one series.
			if !listedPods[name] {
				listedPods[name] = true
				out = append(out, pod)
			}
		}
		sandbox := pod
		sandbox.name, sandbox.created = id, time.Unix(0, sb.GetCreatedAt())
		sandbox.image = p.sandboxImage(ctx, id)
		sandbox.id, sandbox.cgroup = p.containerCgroup(podCgroups[id], id)
		devs, err := p.sandboxNetDevices(ctx, sb)
		if err != nil {
			p.Log.Debug().Err(err).Str("sandbox", id).Msg("sandbox network left out of /metrics/cadvisor")
		}
		sandbox.net = devs
		out = append(out, sandbox)
	}
	fsByMountpoint := map[string]*fsInfo{}
	for id, c := range inv.containers {
		sb, ok := inv.sandboxes[c.GetPodSandboxId()]
		if !ok || sb.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		s := cadvisorSeries{
			container: c.GetMetadata().GetName(), name: id,
			pod: sb.GetMetadata().GetName(), namespace: sb.GetMetadata().GetNamespace(),
			image:   cmp.Or(images[c.GetImageRef()], images[c.GetImage().GetImage()], c.GetImage().GetImage()),
			created: time.Unix(0, c.GetCreatedAt()),
			stats:   statsByID[id],
		}
		s.id, s.cgroup = p.containerCgroup(podCgroups[c.GetPodSandboxId()], id)
		if fs, ok := p.writableLayerFs(s.stats, mountinfo, fsByMountpoint, now); ok {
			s.fs = []cadvisorFs{fs}
		}
		out = append(out, s)
	}
	p.forgetSandboxPIDs(inv.sandboxes)
	slices.SortFunc(out[1:], func(a, b cadvisorSeries) int {
		return cmp.Or(cmp.Compare(a.namespace, b.namespace), cmp.Compare(a.pod, b.pod),
			cmp.Compare(a.container, b.container), cmp.Compare(a.id, b.id), cmp.Compare(a.name, b.name))
	})
	return out, nil
}

// rootSeries is the root cgroup: the whole machine, with the host's
// network and the node's and images' filesystems, as cAdvisor's raw
// handler reports "/".
func (p *Provider) rootSeries(ctx context.Context, mountinfo []byte) cadvisorSeries {
	s := cadvisorSeries{id: "/", cgroup: "/"}
	if data, err := os.ReadFile(p.hostPath("proc", "net", "dev")); err == nil {
		s.net, _ = parseNetDevices(data)
	}
	dirs := []string{p.RootDir}
	if resp, err := p.Images.ImageFsInfo(ctx, &runtimeapi.ImageFsInfoRequest{}); err == nil {
		for _, fs := range resp.GetImageFilesystems() {
			dirs = append(dirs, fs.GetFsId().GetMountpoint())
		}
	}
	seen := map[string]bool{}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		device := p.deviceOf(mountinfo, dir)
		if device == "" || seen[device] {
			continue
		}
		info, err := statFS(dir)
		if err != nil {
			continue
		}
		seen[device] = true
		s.fs = append(s.fs, cadvisorFs{device: device, usage: info.used, limit: info.capacity,
			inodes: info.inodes, inodeFree: info.inodesFree, hasInodes: info.hasInodes})
	}
	return s
}

// deviceOf is the device of the filesystem holding dir, as mountinfo
// names it; "" when unknown.
func (p *Provider) deviceOf(mountinfo []byte, dir string) string {
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	m, ok := mountOf(mountinfo, dir)
	if !ok {
		return ""
	}
	return m.source
}

// writableLayerFs is the container's writable layer as the runtime
// measures it, on the device of its filesystem.
func (p *Provider) writableLayerFs(st *runtimeapi.ContainerStats, mountinfo []byte, fsByMountpoint map[string]*fsInfo, now time.Time) (cadvisorFs, bool) {
	wl := st.GetWritableLayer()
	if wl == nil || wl.GetUsedBytes() == nil {
		return cadvisorFs{}, false
	}
	rootfs := p.containerRootfs(st, fsByMountpoint, now)
	fs := cadvisorFs{usage: wl.GetUsedBytes().GetValue(), limit: deref(rootfs.CapacityBytes)}
	if mp := wl.GetFsId().GetMountpoint(); mp != "" {
		fs.device = p.deviceOf(mountinfo, mp)
	}
	return fs, true
}

// containerCgroup finds a container's cgroup in its pod's: named by its
// ID (cgroupfs) or as containerd's systemd scope. It answers the id label
// and the cgroup to read, both "" when not found.
func (p *Provider) containerCgroup(podCgroup, id string) (string, string) {
	if podCgroup == "" || id == "" || strings.ContainsAny(id, "/.") {
		return "", ""
	}
	for _, name := range []string{podCgroup + "/" + id, podCgroup + "/cri-containerd-" + id + ".scope"} {
		if p.cgroups.exists(name) {
			return name, name
		}
	}
	return "", ""
}

// imageNames maps image IDs and references to the name cAdvisor labels a
// container with: the runtime's image record's name, which is the first of
// its tags, else of its digests. Empty when the runtime cannot list them.
func (p *Provider) imageNames(ctx context.Context) map[string]string {
	out := map[string]string{}
	resp, err := p.Images.ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		p.Log.Debug().Err(err).Msg("image names left out of /metrics/cadvisor")
		return out
	}
	for _, img := range resp.GetImages() {
		name := ""
		if len(img.GetRepoTags()) > 0 {
			name = img.GetRepoTags()[0]
		} else if len(img.GetRepoDigests()) > 0 {
			name = img.GetRepoDigests()[0]
		}
		if name == "" {
			continue
		}
		out[img.GetId()] = name
		for _, ref := range append(img.GetRepoTags(), img.GetRepoDigests()...) {
			out[ref] = name
		}
	}
	return out
}
