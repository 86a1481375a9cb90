package podruntime

import (
	"context"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cpumanager"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/memorymanager"
)

// UpdateContainerCPUSet moves a running container to a cpuset, as
// upstream's CPU manager's reconcile does for the shared pool's
// containers when the pool changes: only the cpuset is sent, which the
// runtime applies leaving the other resources as they are.
func (r *Runtime) UpdateContainerCPUSet(ctx context.Context, id, cpus string) error {
	d := r.Opts.RuntimeRequestTimeout
	if d <= 0 {
		d = defaultRuntimeRequestTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	_, err := r.RT.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id,
		Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: cpus}})
	return err
}

// Runtime performs a pod's CRI calls.
type Runtime struct {
	RT   runtimeapi.RuntimeServiceClient
	Img  runtimeapi.ImageServiceClient
	Opts Options
}

// Options configure the sandboxes and containers Runtime creates.
type Options struct {
	// PodLogsDir is the root of the pods' log directories (/var/log/pods).
	PodLogsDir string
	// ContainerLogsDir is where each started container's log is linked
	// as POD_NAMESPACE_CONTAINER-ID.log for log shippers (upstream's
	// fixed /var/log/containers, DefaultContainerLogsDir); empty links
	// none (unit tests).
	ContainerLogsDir string
	// Log receives what upstream only logs (a log link that could not be
	// made or removed); the zero Logger discards it.
	Log zerolog.Logger
	// ClusterDNS, ClusterDomain and ResolvConf are the kubelet's DNS
	// settings: ClusterFirst pods use ClusterDNS, or the host's ResolvConf
	// when ClusterDNS is empty, as upstream.
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string
	// CgroupParentRoot is the cgroupfs path of the pods' parent cgroup
	// (PodsCgroupParent); a pod's sandbox gets its child for pod<UID>
	// (CgroupParent). Empty means /kubepods.
	CgroupParentRoot string
	// CgroupDriver is how pod cgroups are named below CgroupParentRoot:
	// CgroupDriverSystemd for slices (kubepods-pod<UID>.slice), anything
	// else for cgroupfs directories (pod<UID>).
	CgroupDriver string
	// Cgroups makes each pod's cgroup, with its limits, before its sandbox
	// and names it as the sandbox's CgroupParent (cgroups.Manager);
	// nil leaves the cgroup to the runtime, at CgroupParentRoot/pod<UID>.
	Cgroups  PodCgroups
	NodeName string
	NodeIP   string
	// NodeMemoryCapacity (bytes) scales the OOM score of Burstable
	// containers; 0 reads it from /proc/meminfo.
	NodeMemoryCapacity int64
	// CPUSets are the CPU manager's cpusets, given to each container at
	// its creation; nil gives none (the runtime's default: every CPU).
	CPUSets *cpumanager.View
	// MemoryNodes are the memory manager's NUMA nodes, given to each
	// container at its creation (cpuset.mems); nil gives none.
	MemoryNodes *memorymanager.View
	// NodeAllocatable is what resourceFieldRef limits that a container
	// does not set resolve to, as upstream.
	NodeAllocatable v1.ResourceList
	// RuntimeRequestTimeout bounds each CRI call except image pulls and
	// container stops, whose duration depends on their input (upstream: 2 min).
	RuntimeRequestTimeout time.Duration
	// PullBackoff delays pulls of images that failed to pull
	// (ImagePullBackOff). Nil: the backoff passed to SyncPod is used for
	// them too, under keys of their own.
	PullBackoff *Backoff
	// PullRecords, when set (KubeletEnsureSecretPulledImages), records
	// the credentials each image was pulled with, and makes a pod pull an
	// image on the node again, with its own credentials, when the
	// records do not show it may use it; nil lets any pod use any image
	// on the node, as upstream with the gate off.
	PullRecords PullRecords
	// CredentialPlugins gives the credentials of the image credential
	// provider plugins (credprovider.Plugins), tried after the pod's pull
	// secrets'; nil: none.
	CredentialPlugins CredentialPlugins
	// Pulls bounds the node's image pulls (serializeImagePulls,
	// maxParallelImagePulls, registryPullQPS); nil: no bound.
	Pulls *imagepull.Limiter
	// Subpaths prepares the bind mounts of subPath volume mounts; nil
	// refuses them.
	Subpaths Subpaths
	// Objects reads the ConfigMaps and Secrets of containers' env and of
	// image pull secrets; nil (no API server) fails any container that
	// refers to one, as upstream without a client.
	Objects Objects
	// Services gives the service environment variables; nil (no API
	// server): none, as upstream.
	Services Services
	// RootDir is the kubelet's root directory: a pod's own files (its
	// etc-hosts) are under RootDir/pods/UID.
	RootDir string
	// CgroupV2 tells the node's cgroup version; SingleProcessOOMKill is
	// singleProcessOOMKill (its default: true on v1, false on v2), false
	// making a container's OOM kill its whole cgroup on v2.
	CgroupV2             bool
	SingleProcessOOMKill bool
	// Swap is what containers get of the node's swap.
	Swap Swap
	// NoCPUCFSQuota is cpuCFSQuota false: containers get no CFS quota
	// nor period. CPUCFSQuotaPeriod is cpuCFSQuotaPeriod under the
	// CustomCPUCFSQuotaPeriod gate; 0 is upstream's 100 ms.
	NoCPUCFSQuota     bool
	CPUCFSQuotaPeriod time.Duration
	// DefaultPodSysctls are defaultPodSysctls (with the DefaultPodSysctls
	// gate; nil without): set in every sandbox whose namespaces they
	// belong to, under the pod's own sysctls.
	DefaultPodSysctls map[string]string
	// SeccompDefault is the kubelet's seccompDefault: a container whose pod
	// and own security context name no seccomp profile runs under the
	// runtime's default profile rather than unconfined.
	SeccompDefault bool
	// Recorder receives upstream's events about pods and their containers
	// (pulls, starts, kills, back-offs, failures); nil records none.
	Recorder record.EventRecorder
	// Hooks runs the containers' postStart and preStop hooks; nil fails
	// every hook (FailedPostStartHook, FailedPreStopHook), never skips one.
	Hooks Hooks
	// Actuated remembers the resources applied to each running container;
	// nil knows none, and no resize is then applied.
	Actuated *ActuatedResources
	// RuntimeClasses resolves pods' runtimeClassName to the runtime
	// handler of their sandboxes; nil (no API server) runs every pod with
	// the runtime's default handler, as upstream without a client.
	RuntimeClasses RuntimeClasses
	// UserNamespaces gives pods with hostUsers: false their ID ranges
	// (userns.Manager); nil refuses such pods.
	UserNamespaces UserNamespaces
	// DevicePlugins gives containers their device plugins' devices (the
	// device-manager); nil: no device plugin serves any resource.
	DevicePlugins DevicePlugins
}

// RuntimeClasses resolves a RuntimeClass name to its runtime handler, as
// upstream's runtimeclass.Manager (runtimeclass.Manager implements it).
type RuntimeClasses interface {
	// LookupRuntimeHandler returns the handler of the class named name,
	// "" for nil or "" (the default handler), or why there is none: the
	// API's NotFound error for a class that does not exist.
	LookupRuntimeHandler(ctx context.Context, name *string) (string, error)
}

const (
	defaultCgroupParentRoot      = "/kubepods"
	defaultRuntimeRequestTimeout = 2 * time.Minute
)

// PodCgroups is the node's cgroup tree as the pods' runtime uses it
// (cgroups.Manager): where a pod's sandbox goes, its cgroup made with
// its limits before the sandbox, and the pod dropped from the active pods
// (whose requests the QoS cgroups reflect) once stopped.
type PodCgroups interface {
	CgroupParent(pod *v1.Pod) string
	EnsureExists(pod *v1.Pod) error
	Forget(uid types.UID)
}

func (o Options) cgroupParentRoot() string {
	if o.CgroupParentRoot == "" {
		return defaultCgroupParentRoot
	}
	return o.CgroupParentRoot
}

// createCtx bounds a call that makes something in the runtime
// (RunPodSandbox, CreateContainer, StartContainer) by the request timeout
// alone: the pass's cancellation does not reach it. Cancelling such a call
// midway leaves the runtime with what it half made (containerd 1.6 keeps a
// task in runc init that no RemoveContainer deletes), so it runs to its end
// and the pass checks its context after it, as upstream's SyncPod, which
// never takes the pod worker's context.
func (r *Runtime) createCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return r.callCtx(context.WithoutCancel(ctx))
}

// callCtx bounds one CRI call by the request timeout and ctx.
func (r *Runtime) callCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	d := r.Opts.RuntimeRequestTimeout
	if d <= 0 {
		d = defaultRuntimeRequestTimeout
	}
	return context.WithTimeout(ctx, d)
}

func isNotFound(err error) bool {
	return err != nil && status.Code(err) == codes.NotFound
}
