package stats

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/csi/registry"
)

// RuntimeService is the part of the CRI runtime service the statistics
// read; runtimeapi.RuntimeServiceClient has it.
type RuntimeService interface {
	ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, opts ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error)
	PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, opts ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error)
	ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error)
	ListContainerStats(ctx context.Context, in *runtimeapi.ListContainerStatsRequest, opts ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error)
}

// ImageService is the part of the CRI image service the statistics read;
// runtimeapi.ImageServiceClient has it.
type ImageService interface {
	ImageFsInfo(ctx context.Context, in *runtimeapi.ImageFsInfoRequest, opts ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error)
	ListImages(ctx context.Context, in *runtimeapi.ListImagesRequest, opts ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error)
}

// criTimeout bounds the CRI calls of one request, so that a hung runtime
// fails the request instead of holding it open.
const criTimeout = 30 * time.Second

// Provider gathers the node's, pods' and containers' statistics. Set the
// fields before the first call; it is then safe for concurrent requests.
// It keeps the previous CPU sample of every container and cgroup, to
// compute CPU rates between requests.
type Provider struct {
	Runtime RuntimeService
	Images  ImageService
	// NodeName is the summary's node.nodeName.
	NodeName string
	// RootDir is the kubelet's root directory (/var/lib/kubelet): its
	// filesystem is the node's fs (nodefs), pods/<UID>/etc-hosts counts
	// in a pod's ephemeral storage, and pods/<UID>/volumes holds the
	// pod's volumes.
	RootDir string
	// PodLogsDir is the root of the pods' log directories; empty is
	// /var/log/pods.
	PodLogsDir string
	// PodCgroupRoot is the cgroupfs path under which pods have their
	// cgroups ("/kubepods": pods in /kubepods/pod<UID> and
	// /kubepods/{burstable,besteffort}/pod<UID>, podcgroups'
	// NodeAllocatable). It is also the "pods" system container. Empty:
	// pod CPU and memory are the sums of their containers'.
	PodCgroupRoot string
	// CgroupDriver names the pod cgroups below PodCgroupRoot, as
	// podruntime's CgroupDriver (systemd: kubepods-pod<UID>.slice).
	CgroupDriver string
	// HostRoot is where the host's /proc, /sys and /etc are read; empty
	// is /. Tests point it at fixtures.
	HostRoot string
	// VolumeStatsPeriod is how long a volume's measured usage is reused
	// (volumeStatsAggPeriod); zero is upstream's default, a minute, and a
	// negative one turns volume stats off.
	VolumeStatsPeriod time.Duration
	// CSIDrivers are the CSI drivers registered on the node, which
	// measure their volumes; nil: none, and CSI volumes are left out.
	CSIDrivers registry.Reader
	// Claims reads the claims of the pods' volumes, to tell which volume
	// directory (named by its PersistentVolume) is which claim's; nil:
	// such directories keep their name and have no PVC reference.
	Claims ClaimReader
	// Log receives what is left out of a partial answer and why.
	Log zerolog.Logger

	csiStatsTimeout time.Duration // tests shorten csiStatsTimeout

	once     sync.Once
	host     string
	cgroups  cgroups
	rates    *cpuRates
	bootTime time.Time
	now      func() time.Time

	pidsMu        sync.Mutex
	sandboxPIDs   map[string]int    // sandbox ID → pid of its process
	sandboxImages map[string]string // sandbox ID → its image

	volumes volumeCache
	claims  claimCache
}

func (p *Provider) init() {
	p.once.Do(func() {
		p.host = p.HostRoot
		if p.host == "" {
			p.host = "/"
		}
		p.cgroups = newCgroups(p.host)
		p.rates = newCPURates()
		p.sandboxPIDs = map[string]int{}
		p.sandboxImages = map[string]string{}
		if p.now == nil {
			p.now = time.Now
		}
		data, err := os.ReadFile(p.hostPath("proc", "stat"))
		if err == nil {
			p.bootTime, err = procStatBootTime(data)
		}
		if err != nil {
			p.Log.Warn().Err(err).Msg("boot time unknown: the node's startTime will be wrong")
		}
	})
}

func (p *Provider) hostPath(elem ...string) string {
	return filepath.Join(append([]string{p.host}, elem...)...)
}

// Summary is /stats/summary: the node and every pod with a running
// container. With onlyCPUAndMemory it is what /metrics/resource and
// metrics-server need, without network, filesystems and the process
// limit, as upstream's GetCPUAndMemoryStats. Without the pods' specs
// (SummaryFor), their volumes are named by their directories.
func (p *Provider) Summary(ctx context.Context, onlyCPUAndMemory bool) (*statsapi.Summary, error) {
	return p.SummaryFor(ctx, onlyCPUAndMemory, nil)
}

// SummaryFor is Summary with the pods' volumes named from their specs, as
// upstream's: by the pod's volume name, with the claim of a PVC-backed one.
func (p *Provider) SummaryFor(ctx context.Context, onlyCPUAndMemory bool, specs PodSpecs) (*statsapi.Summary, error) {
	p.init()
	ctx, cancel := context.WithTimeout(ctx, criTimeout)
	defer cancel()
	now := p.now()
	var nodeFs fsInfo
	if !onlyCPUAndMemory {
		var err error
		if nodeFs, err = statFS(p.RootDir); err != nil {
			return nil, err
		}
	}
	node, err := p.nodeStats(ctx, now, onlyCPUAndMemory, nodeFs)
	if err != nil {
		return nil, err
	}
	pods, err := p.podStats(ctx, now, onlyCPUAndMemory, nodeFs, specs)
	if err != nil {
		return nil, err
	}
	p.rates.forget(now.Add(-rateRetention))
	p.forgetVolumes(now)
	return &statsapi.Summary{Node: node, Pods: pods}, nil
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }

func ptrTo[T any](v T) *T { return &v }
