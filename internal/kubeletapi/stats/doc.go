// Package stats serves the kubelet's resource statistics (issue #6):
// /stats/summary (k8s.io/kubelet/pkg/apis/stats/v1alpha1), /metrics/resource
// (upstream's resource metrics, scraped by metrics-server), /metrics/cadvisor
// (cAdvisor's container metrics, from the same cgroup readers and CRI
// listing, and cAdvisor's machine metrics; docs/api.md says what differs).
// There is no cAdvisor: the node's figures come from the host's /proc, /sys and root
// cgroup, the pods' and containers' from CRI.
//
// Where each figure comes from:
//
//   - node CPU: the root cgroup's cumulative usage (cpuacct.usage on cgroup
//     v1, cpu.stat usage_usec on v2), which is what cAdvisor reports to
//     upstream; /proc/stat's busy time when the cgroup is unreadable.
//   - node memory: the root memory cgroup as cAdvisor reads it (usage,
//     working set = usage - inactive file, available = MemTotal - working
//     set); /proc/meminfo when the cgroup is unreadable (usage = MemTotal -
//     MemFree). Swap: SwapTotal - SwapFree of /proc/meminfo.
//   - node network: /proc/net/dev of actorlet's own network namespace, the
//     host's (cAdvisor reads /proc/1/net/dev, which is the same on a node),
//     without lo, veth*, docker* and nerdctl* as cAdvisor.
//   - node fs: statfs of the root directory; imageFs (and containerFs, the
//     same as upstream's CRI provider) from CRI ImageFsInfo plus statfs of
//     its mountpoint; startTime from /proc/stat btime, as upstream.
//   - pods and containers: upstream's default CRI path
//     (PodAndContainerStatsFromCRI off): ListPodSandbox and ListContainers
//     for metadata, ListContainerStats for the containers' figures. Pod CPU
//     and memory come from the pod cgroup (PodCgroupRoot/pod<UID>, or below
//     its burstable or besteffort QoS cgroup) when it
//     exists, as upstream reads it through cAdvisor, else from the sum of
//     its containers. Pod network comes from /proc/<pid>/net/dev of the
//     sandbox's process (its pid is in the verbose PodSandboxStatus).
//   - pod volumes: the directories under ROOT/pods/UID/volumes, measured as
//     upstream's plugins measure them (package volume): a walk of the
//     volume's files on its own filesystem (upstream's MetricsDu) plus
//     statfs for its filesystem's size, or statfs alone for a local
//     PersistentVolume (MetricsStatFS). Each volume's figures are reused
//     for a minute, upstream's default volume stats period. EmptyDirs on
//     disk and configMap volumes count in the pod's ephemeral storage, as
//     upstream's.
//   - pressure (PSI): /proc/pressure for the node (cAdvisor has none on
//     cgroup v1 and upstream then writes zeros), the pod cgroup's
//     *.pressure on v2, CRI's for containers.
//
// ListPodSandboxStats is not used. containerd 1.6.20 implements it, but
// answers Unknown ("cgroupPath is empty") for the whole list as soon as
// one sandbox has no cgroup parent, and upstream too uses it only behind
// the alpha PodAndContainerStatsFromCRI gate.
//
// usageNanoCores: containerd computes it between two consecutive
// ListContainerStats calls, whoever made them, and answers 0 on the first.
// A non-zero value from the runtime is taken as upstream does; otherwise
// the rate is computed from the previous sample this package keeps per
// container ID (and per cgroup for the node and pods), as upstream's CRI
// stats provider does, over at least one second so that two requests in a
// row do not give a spiky rate. The first sample has no rate.
//
// Unlike upstream, a value that nothing reported is left out instead of
// written as 0 (upstream zero-fills missing CRI fields, swap included): a
// consumer cannot tell a fabricated 0 from a measured one. For the same
// reason containerd's availableBytes of 0, its answer for a container
// without a memory limit, is left out, and a pod's sum of its containers
// has a figure only when every container has it. The summary reports no
// process counts and no accelerators; /metrics/cadvisor has the former.
package stats
