package metrics

import (
	"math"
	"sync/atomic"
	"time"
)

// The kubelet_* families about the node and the kubelet as a whole: its
// start-up, its cgroups, its stats provider, and a few the pod-manager,
// the pod-workers and the lifecycle hooks count, under upstream's names.

// Values of kubelet_metrics_provider's provider label, as upstream's.
const (
	// ProviderCadvisor: /metrics/cadvisor serves cAdvisor's series, as
	// upstream's kubelet with the PodAndContainerStatsFromCRI gate off.
	ProviderCadvisor = "cadvisor"
	// ProviderCRI: /metrics/cadvisor serves the runtime's own metrics.
	ProviderCRI = "cri"
)

var (
	// NodeStartupPreKubelet is the time from the machine's boot to the
	// kubelet's start, NodeStartupPreRegistration from the kubelet's start
	// to its first attempt to register the Node, NodeStartupRegistration
	// from that attempt to the Node's creation, NodeStartupPostRegistration
	// from the creation to the first status that reports it Ready, and
	// NodeStartup from the boot to that status. Set once, and only by a
	// kubelet that created its Node (upstream's node startup latency
	// tracker).
	NodeStartupPreKubelet       = kubeletFamily.gauge("node_startup_pre_kubelet_duration_seconds", "Duration in seconds of node startup before kubelet starts.")
	NodeStartupPreRegistration  = kubeletFamily.gauge("node_startup_pre_registration_duration_seconds", "Duration in seconds of node startup before registration.")
	NodeStartupRegistration     = kubeletFamily.gauge("node_startup_registration_duration_seconds", "Duration in seconds of node startup during registration.")
	NodeStartupPostRegistration = kubeletFamily.gauge("node_startup_post_registration_duration_seconds", "Duration in seconds of node startup after registration.")
	NodeStartup                 = kubeletFamily.gauge("node_startup_duration_seconds", "Duration in seconds of node startup in total.")

	// CgroupVersion is the node's cgroup version: 1 or 2.
	CgroupVersion = kubeletFamily.gauge("cgroup_version", "cgroup version on the hosts.")

	// MetricsProvider is 1 with the provider of /metrics/cadvisor's series
	// as its label.
	MetricsProvider = kubeletFamily.gaugeVec("metrics_provider", "Metrics provider used by kubelet to collect container stats. Values can be 'cadvisor' and 'cri'", "provider")

	// FirstNetworkPodStartSLIDuration is kubelet_pod_start_sli_duration_seconds'
	// figure for the first pod off the host's network that started: how
	// long the node took to give pods a working network.
	FirstNetworkPodStartSLIDuration = kubeletFamily.gauge("first_network_pod_start_sli_duration_seconds", "[INTERNAL] Duration in seconds to start the first network pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch")

	// ManagedEphemeralContainers counts the ephemeral containers of the
	// pods the sources want on this node.
	ManagedEphemeralContainers = kubeletFamily.gauge("managed_ephemeral_containers", "Current number of ephemeral containers in pods managed by this kubelet.")

	// LifecycleHandlerHTTPFallbacks counts the HTTPS lifecycle hooks that
	// got an HTTP answer and then succeeded over HTTP.
	LifecycleHandlerHTTPFallbacks = kubeletFamily.counter("lifecycle_handler_http_fallbacks_total", "The number of times lifecycle handlers successfully fell back to http from https.")
)

func init() {
	Registry.MustRegister(NodeStartupPreKubelet, NodeStartupPreRegistration, NodeStartupRegistration,
		NodeStartupPostRegistration, NodeStartup, CgroupVersion, MetricsProvider,
		FirstNetworkPodStartSLIDuration, ManagedEphemeralContainers, LifecycleHandlerHTTPFallbacks)
}

// SetMetricsProvider makes kubelet_metrics_provider report provider alone.
func SetMetricsProvider(provider string) {
	MetricsProvider.Reset()
	MetricsProvider.WithLabelValues(provider).Set(1)
}

// firstNetworkPod is whether a pod off the host's network was measured.
var firstNetworkPod atomic.Bool

// ObserveFirstNetworkPodStart sets kubelet_first_network_pod_start_sli_duration_seconds
// to sli the first time a pod off the host's network starts.
func ObserveFirstNetworkPodStart(hostNetwork bool, sli time.Duration) {
	if !hostNetwork && firstNetworkPod.CompareAndSwap(false, true) {
		FirstNetworkPodStartSLIDuration.Set(sli.Seconds())
	}
}

// NodeStartupTracker follows the node's start-up to set the
// kubelet_node_startup_* gauges, as upstream's node startup latency
// tracker: the status-reporter owns it and tells it when it first tries
// to register the Node, when it created it, and when a status it wrote
// reports it Ready. It is not safe for concurrent use.
type NodeStartupTracker struct {
	// Boot is when the machine booted (zero: unknown, and then the
	// gauges from the boot stay unset); Start when the kubelet started.
	Boot, Start                  time.Time
	attempt, registered, readyAt time.Time
}

// NewNodeStartupTracker tracks the start-up of a kubelet that started at
// the process' start (this package's set-up, before any actor starts, as
// upstream's tracker is made at the kubelet's start), on a machine booted
// at boot.
func NewNodeStartupTracker(boot time.Time) *NodeStartupTracker {
	sec, frac := math.Modf(processStart)
	return &NodeStartupTracker{Boot: boot, Start: time.Unix(int64(sec), int64(frac*1e9))}
}

// NodeStartupDurations are the gauges' figures; a zero one is not set.
type NodeStartupDurations struct {
	PreKubelet, PreRegistration, Registration, PostRegistration, Total time.Duration
}

// Attempt records the first registration attempt, at now.
func (t *NodeStartupTracker) Attempt(now time.Time) {
	if t.attempt.IsZero() {
		t.attempt = now
	}
}

// Registered records that the kubelet created its Node at now, and
// returns the durations up to it (ok false: not the first creation, or no
// attempt recorded).
func (t *NodeStartupTracker) Registered(now time.Time) (d NodeStartupDurations, ok bool) {
	if t.attempt.IsZero() || !t.registered.IsZero() {
		return d, false
	}
	t.registered = now
	if !t.Boot.IsZero() {
		d.PreKubelet = t.Start.Sub(t.Boot)
	}
	d.PreRegistration = t.attempt.Sub(t.Start)
	d.Registration = t.registered.Sub(t.attempt)
	return d, true
}

// Ready records a status reporting the Node Ready written at now, and
// returns the durations up to it (ok false: not the first, or the kubelet
// did not create its Node).
func (t *NodeStartupTracker) Ready(now time.Time) (d NodeStartupDurations, ok bool) {
	if t.registered.IsZero() || !t.readyAt.IsZero() {
		return d, false
	}
	t.readyAt = now
	d.PostRegistration = t.readyAt.Sub(t.registered)
	if !t.Boot.IsZero() {
		d.Total = t.readyAt.Sub(t.Boot)
	}
	return d, true
}

// SetNodeRegistration sets the gauges up to the Node's creation (the
// pre-kubelet one only with a boot time).
func (t *NodeStartupTracker) SetNodeRegistration(d NodeStartupDurations) {
	if !t.Boot.IsZero() {
		NodeStartupPreKubelet.Set(d.PreKubelet.Seconds())
	}
	NodeStartupPreRegistration.Set(d.PreRegistration.Seconds())
	NodeStartupRegistration.Set(d.Registration.Seconds())
}

// SetNodeReady sets the gauges up to the first Ready (the total one only
// with a boot time).
func (t *NodeStartupTracker) SetNodeReady(d NodeStartupDurations) {
	NodeStartupPostRegistration.Set(d.PostRegistration.Seconds())
	if !t.Boot.IsZero() {
		NodeStartup.Set(d.Total.Seconds())
	}
}
