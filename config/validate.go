package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	cliflag "k8s.io/component-base/cli/flag"
	logsapi "k8s.io/component-base/logs/api/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/cpuset"

	"github.com/actorlet/actorlet/config/features"
	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/imagepull"
	"github.com/actorlet/actorlet/internal/version"
)

// Problem is one invalid field of the configuration.
type Problem struct {
	Field  string // dotted JSON path, map keys in brackets
	Value  any
	Reason string
}

func (p Problem) String() string {
	v := fmt.Sprintf("%v", p.Value)
	if s, ok := p.Value.(string); ok {
		v = fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%s: Invalid value: %s: %s", p.Field, v, p.Reason)
}

// ValidationError reports every problem of a configuration at once, so that
// one run shows everything that needs fixing.
type ValidationError struct {
	Problems []Problem
}

func (e *ValidationError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Validate checks the final configuration: upstream's
// ValidateKubeletConfiguration, plus the checks upstream only makes later while
// starting (IP addresses, quantities, eviction signals, enumerations), so that
// nothing starts on a configuration that would fail half-way. gates are the
// process gates; the configuration's featureGates are layered over a copy.
func Validate(cfg *kubeletconfigv1beta1.KubeletConfiguration, gates *features.Gates) error {
	if gates == nil {
		gates = features.New()
	}
	v := &validator{}
	local := gates.DeepCopy()
	if _, err := local.SetFromMap(cfg.FeatureGates); err != nil {
		v.add("featureGates", cfg.FeatureGates, err.Error())
		local = gates
	}
	c := cfg

	v.check(c.NodeLeaseDurationSeconds <= 0, "nodeLeaseDurationSeconds", c.NodeLeaseDurationSeconds, "must be greater than 0")
	v.check(c.SystemCgroups != "" && c.CgroupRoot == "", "systemCgroups", c.SystemCgroups, "requires cgroupRoot to be set")
	v.check(c.EventBurst < 0, "eventBurst", c.EventBurst, "must not be negative")
	v.checkPtr(c.EventRecordQPS, func(n int32) bool { return n < 0 }, "eventRecordQPS", "must not be negative")
	v.checkPtr(c.HealthzPort, func(n int32) bool { return n != 0 && !validPort(n) }, "healthzPort", "must be between 1 and 65535, inclusive (0 disables)")
	v.check(!validPort(c.Port), "port", c.Port, "must be between 1 and 65535, inclusive")
	v.check(c.ReadOnlyPort != 0 && !validPort(c.ReadOnlyPort), "readOnlyPort", c.ReadOnlyPort, "must be between 0 and 65535, inclusive")
	v.checkIP("address", c.Address)
	v.checkIP("healthzBindAddress", c.HealthzBindAddress)

	outOfPercent := func(n int32) bool { return n < 0 || n > 100 }
	v.checkPtr(c.ImageGCHighThresholdPercent, outOfPercent, "imageGCHighThresholdPercent", "must be between 0 and 100, inclusive")
	v.checkPtr(c.ImageGCLowThresholdPercent, outOfPercent, "imageGCLowThresholdPercent", "must be between 0 and 100, inclusive")
	if c.ImageGCHighThresholdPercent != nil && c.ImageGCLowThresholdPercent != nil && *c.ImageGCLowThresholdPercent >= *c.ImageGCHighThresholdPercent {
		v.add("imageGCLowThresholdPercent", *c.ImageGCLowThresholdPercent, fmt.Sprintf("must be less than imageGCHighThresholdPercent (%d)", *c.ImageGCHighThresholdPercent))
	}
	v.check(c.ImageMinimumGCAge.Duration < 0, "imageMinimumGCAge", c.ImageMinimumGCAge.Duration, "must not be negative")
	v.check(c.ImageMaximumGCAge.Duration < 0, "imageMaximumGCAge", c.ImageMaximumGCAge.Duration, "must not be negative")
	v.check(c.ImageMaximumGCAge.Duration > 0 && c.ImageMaximumGCAge.Duration <= c.ImageMinimumGCAge.Duration, "imageMaximumGCAge", c.ImageMaximumGCAge.Duration,
		fmt.Sprintf("must be greater than imageMinimumGCAge (%v)", c.ImageMinimumGCAge.Duration))

	outOfBits := func(n int32) bool { return n < 0 || n > 31 }
	v.checkPtr(c.IPTablesDropBit, outOfBits, "iptablesDropBit", "must be between 0 and 31, inclusive")
	v.checkPtr(c.IPTablesMasqueradeBit, outOfBits, "iptablesMasqueradeBit", "must be between 0 and 31, inclusive")
	v.check(c.KubeAPIBurst < 0, "kubeAPIBurst", c.KubeAPIBurst, "must not be negative")
	v.checkPtr(c.KubeAPIQPS, func(n int32) bool { return n < 0 }, "kubeAPIQPS", "must not be negative")
	v.checkPtr(c.NodeStatusMaxImages, func(n int32) bool { return n < -1 }, "nodeStatusMaxImages", "must be -1 or greater")
	v.check(c.MaxOpenFiles < 0, "maxOpenFiles", c.MaxOpenFiles, "must not be negative")
	v.check(c.MaxPods < 0, "maxPods", c.MaxPods, "must not be negative")
	v.checkPtr(c.OOMScoreAdj, func(n int32) bool { return n < -1000 || n > 1000 }, "oomScoreAdj", "must be between -1000 and 1000, inclusive")
	v.check(c.PodsPerCore < 0, "podsPerCore", c.PodsPerCore, "must not be negative")
	v.check(c.RegistryBurst < 0, "registryBurst", c.RegistryBurst, "must not be negative")
	v.checkPtr(c.RegistryPullQPS, func(n int32) bool { return n < 0 }, "registryPullQPS", "must not be negative")
	v.checkPtr(c.MaxParallelImagePulls, func(n int32) bool { return n < 1 }, "maxParallelImagePulls", "must be a positive number")
	if c.SerializeImagePulls != nil && *c.SerializeImagePulls && c.MaxParallelImagePulls != nil && *c.MaxParallelImagePulls > 1 {
		v.add("maxParallelImagePulls", *c.MaxParallelImagePulls, "cannot be larger than 1 unless serializeImagePulls is false")
	}
	v.check(c.RunOnce, "runOnce", c.RunOnce, "runonce mode has been removed and must not be set")

	for i, t := range c.RegisterWithTaints {
		field := fmt.Sprintf("registerWithTaints[%d]", i)
		if err := checkTaint(t); err != nil {
			v.add(field, t.ToString(), err.Error())
		}
		v.check(t.TimeAdded != nil, field+".timeAdded", t.TimeAdded, "must not be set")
	}

	v.checkOneOf("topologyManagerPolicy", c.TopologyManagerPolicy, kubeletconfigv1beta1.NoneTopologyManagerPolicy, kubeletconfigv1beta1.BestEffortTopologyManagerPolicy,
		kubeletconfigv1beta1.RestrictedTopologyManagerPolicy, kubeletconfigv1beta1.SingleNumaNodeTopologyManagerPolicy)
	v.checkOneOf("topologyManagerScope", c.TopologyManagerScope, kubeletconfigv1beta1.ContainerTopologyManagerScope, kubeletconfigv1beta1.PodTopologyManagerScope)
	v.checkOneOf("hairpinMode", c.HairpinMode, kubeletconfigv1beta1.HairpinNone, kubeletconfigv1beta1.HairpinVeth, kubeletconfigv1beta1.PromiscuousBridge)
	v.checkOneOf("authorization.mode", string(c.Authorization.Mode), string(kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow), string(kubeletconfigv1beta1.KubeletAuthorizationModeWebhook))
	v.checkOneOf("cgroupDriver", c.CgroupDriver, "cgroupfs", "systemd")
	v.checkOneOf("logging.format", c.Logging.Format, logsapi.DefaultLogFormat, logsapi.JSONLogFormat)
	// Upstream refuses it later, creating the kubelet: "unknown configmap
	// and secret manager mode".
	v.checkOneOf("configMapAndSecretChangeDetectionStrategy", string(c.ConfigMapAndSecretChangeDetectionStrategy), string(kubeletconfigv1beta1.WatchChangeDetectionStrategy),
		string(kubeletconfigv1beta1.TTLCacheChangeDetectionStrategy), string(kubeletconfigv1beta1.GetChangeDetectionStrategy))
	v.checkReservedMemory(c.ReservedMemory)
	v.checkOneOf("memoryReservationPolicy", string(c.MemoryReservationPolicy), string(kubeletconfigv1beta1.NoneMemoryReservationPolicy), string(kubeletconfigv1beta1.TieredReservationMemoryReservationPolicy))
	for i, ip := range c.ClusterDNS {
		v.checkIP(fmt.Sprintf("clusterDNS[%d]", i), ip)
	}

	if local.Enabled("GracefulNodeShutdown") {
		grace, critical := c.ShutdownGracePeriod.Duration, c.ShutdownGracePeriodCriticalPods.Duration
		v.check(critical > grace, "shutdownGracePeriodCriticalPods", critical, fmt.Sprintf("must be <= shutdownGracePeriod (%v)", grace))
		v.check(grace < 0 || (grace > 0 && grace < time.Second), "shutdownGracePeriod", grace, "must be either zero or otherwise >= 1 sec")
		v.check(critical < 0 || (critical > 0 && critical < time.Second), "shutdownGracePeriodCriticalPods", critical, "must be either zero or otherwise >= 1 sec")
	} else {
		v.check(c.ShutdownGracePeriod.Duration > 0 || c.ShutdownGracePeriodCriticalPods.Duration > 0, "shutdownGracePeriod", c.ShutdownGracePeriod.Duration, "requires feature gate GracefulNodeShutdown")
	}
	// The two forms of the shutdown's grace periods exclude each other.
	byPriority := len(c.ShutdownGracePeriodByPodPriority) != 0
	if local.Enabled("GracefulNodeShutdownBasedOnPodPriority") {
		v.check(byPriority && (c.ShutdownGracePeriod.Duration > 0 || c.ShutdownGracePeriodCriticalPods.Duration > 0),
			"shutdownGracePeriodByPodPriority", len(c.ShutdownGracePeriodByPodPriority), "Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time")
	} else {
		v.check(byPriority, "shutdownGracePeriodByPodPriority", len(c.ShutdownGracePeriodByPodPriority), "requires feature gate GracefulNodeShutdownBasedOnPodPriority")
	}
	// The kubelet API's TLS settings, read with component-base's parsers as
	// upstream's InitializeTLS does (upstream fails at start-up; here the
	// field is named with the others).
	if _, err := cliflag.TLSCipherSuites(c.TLSCipherSuites); err != nil {
		v.add("tlsCipherSuites", c.TLSCipherSuites, err.Error())
	}
	if _, err := cliflag.TLSVersion(c.TLSMinVersion); err != nil {
		v.add("tlsMinVersion", c.TLSMinVersion, fmt.Sprintf("%v; must be one of %s", err, strings.Join(cliflag.TLSPossibleVersions(), ", ")))
	}
	if _, err := cliflag.TLSCurvePreferences(c.TLSCurvePreferences); err != nil {
		v.add("tlsCurvePreferences", c.TLSCurvePreferences, err.Error())
	}
	v.check(c.ServerTLSBootstrap && !local.Enabled("RotateKubeletServerCertificate"), "serverTLSBootstrap", c.ServerTLSBootstrap, "requires feature gate RotateKubeletServerCertificate")
	if local.Enabled("NodeSwap") {
		v.checkOneOf("memorySwap.swapBehavior", c.MemorySwap.SwapBehavior, "", "NoSwap", "LimitedSwap")
	} else {
		v.check(c.MemorySwap.SwapBehavior != "", "memorySwap.swapBehavior", c.MemorySwap.SwapBehavior, "cannot be set when NodeSwap feature flag is disabled")
	}
	if mcr := c.CrashLoopBackOff.MaxContainerRestartPeriod; local.Enabled("KubeletCrashLoopBackOffMax") {
		if mcr == nil {
			v.add("crashLoopBackOff.maxContainerRestartPeriod", nil, "must be set while feature gate KubeletCrashLoopBackOffMax is enabled")
		} else {
			v.check(mcr.Duration < time.Second || mcr.Duration > 300*time.Second, "crashLoopBackOff.maxContainerRestartPeriod", mcr.Duration, "must be between 1s and 300s")
		}
	} else {
		v.check(mcr != nil, "crashLoopBackOff.maxContainerRestartPeriod", mcr, "must not be set unless feature gate KubeletCrashLoopBackOffMax is enabled")
	}
	if local.Enabled("KubeletEnsureSecretPulledImages") {
		v.checkOneOf("imagePullCredentialsVerificationPolicy", string(c.ImagePullCredentialsVerificationPolicy), string(kubeletconfigv1beta1.NeverVerify),
			string(kubeletconfigv1beta1.NeverVerifyPreloadedImages), string(kubeletconfigv1beta1.NeverVerifyAllowlistedImages), string(kubeletconfigv1beta1.AlwaysVerify))
		if allow := c.PreloadedImagesVerificationAllowlist; len(allow) > 0 && c.ImagePullCredentialsVerificationPolicy != kubeletconfigv1beta1.NeverVerifyAllowlistedImages {
			v.add("preloadedImagesVerificationAllowlist", allow, "must not be set unless imagePullCredentialsVerificationPolicy is NeverVerifyAllowlistedImages")
		} else if err := imagepull.ValidateAllowlist(allow); err != nil {
			v.add("preloadedImagesVerificationAllowlist", allow, "invalid image pattern: "+err.Error())
		}
	} else {
		v.check(c.ImagePullCredentialsVerificationPolicy != "", "imagePullCredentialsVerificationPolicy", string(c.ImagePullCredentialsVerificationPolicy), "must not be set unless feature gate KubeletEnsureSecretPulledImages is enabled")
		v.check(len(c.PreloadedImagesVerificationAllowlist) > 0, "preloadedImagesVerificationAllowlist", c.PreloadedImagesVerificationAllowlist, "must not be set unless feature gate KubeletEnsureSecretPulledImages is enabled")
	}
	if f := c.MemoryThrottlingFactor; f != nil {
		// 0.9, the former default, still passes without MemoryQoS, as
		// upstream's, so that older files load.
		v.check(!local.Enabled("MemoryQoS") && *f != 0.9, "memoryThrottlingFactor", *f, "must not be set when MemoryQoS feature gate is disabled")
		v.check(*f <= 0 || *f > 1, "memoryThrottlingFactor", *f, "must be greater than 0 and less than or equal to 1.0")
	}
	if p := c.CPUCFSQuotaPeriod; p != nil {
		if local.Enabled("CustomCPUCFSQuotaPeriod") {
			v.check(p.Duration < time.Millisecond || p.Duration > time.Second, "cpuCFSQuotaPeriod", p.Duration, "must be between 1ms and 1sec, inclusive")
		} else {
			v.check(p.Duration != 100*time.Millisecond, "cpuCFSQuotaPeriod", p.Duration, "requires feature gate CustomCPUCFSQuotaPeriod")
		}
	}
	if _, err := cgroups.ParseQOSReserved(c.QOSReserved); err != nil {
		v.add("qosReserved", c.QOSReserved, err.Error())
	}

	v.check(c.ContainerRuntimeEndpoint == "", "containerRuntimeEndpoint", c.ContainerRuntimeEndpoint, "must be set")
	v.checkPtr(c.ContainerLogMaxWorkers, func(n int32) bool { return n < 1 }, "containerLogMaxWorkers", "must be greater than or equal to 1")
	if i := c.ContainerLogMonitorInterval; i != nil {
		v.check(i.Duration < 3*time.Second, "containerLogMonitorInterval", i.Duration, "must be a duration of at least 3s")
	}
	v.checkPtr(c.ContainerLogMaxFiles, func(n int32) bool { return n <= 1 }, "containerLogMaxFiles", "must be greater than 1")
	if q, err := resource.ParseQuantity(c.ContainerLogMaxSize); err != nil {
		v.add("containerLogMaxSize", c.ContainerLogMaxSize, err.Error())
	} else {
		v.check(q.Sign() < 0, "containerLogMaxSize", c.ContainerLogMaxSize, "must not be negative")
	}
	v.check(!filepath.IsAbs(c.PodLogsDir), "podLogsDir", c.PodLogsDir, "must be an absolute path")
	v.check(filepath.IsAbs(c.PodLogsDir) && filepath.Clean(c.PodLogsDir) != c.PodLogsDir, "podLogsDir", c.PodLogsDir, "must be normalized")

	v.checkThresholds("evictionHard", c.EvictionHard)
	v.checkThresholds("evictionSoft", c.EvictionSoft)
	v.checkReserved("kubeReserved", c.KubeReserved)
	v.checkReserved("systemReserved", c.SystemReserved)
	if c.ReservedSystemCPUs != "" {
		// Upstream's: the reserved CPUs replace the reservations' cpu,
		// which the reserved cgroups would enforce otherwise.
		v.check(c.SystemReservedCgroup != "" || c.KubeReservedCgroup != "", "reservedSystemCPUs", c.ReservedSystemCPUs,
			"can't use reservedSystemCPUs (--reserved-cpus) with systemReservedCgroup (--system-reserved-cgroup) or kubeReservedCgroup (--kube-reserved-cgroup)")
		if _, err := cpuset.Parse(c.ReservedSystemCPUs); err != nil {
			v.add("reservedSystemCPUs", c.ReservedSystemCPUs, "unable to parse reservedSystemCPUs (--reserved-cpus): "+err.Error())
		}
	}
	v.checkEnforceNodeAllocatable(c)
	v.checkUserNamespaces(c)
	v.checkLogging(c, local)
	v.checkDefaultPodSysctls(c, local)
	v.check(c.EnableSystemLogQuery != nil && *c.EnableSystemLogQuery && c.EnableSystemLogHandler != nil && !*c.EnableSystemLogHandler, "enableSystemLogQuery", true,
		"enableSystemLogHandler is required for enableSystemLogQuery")
	if want := previousMinor(version.KubeletCompatible); c.ShowHiddenMetricsForVersion != "" && c.ShowHiddenMetricsForVersion != want {
		v.add("showHiddenMetricsForVersion", c.ShowHiddenMetricsForVersion,
			fmt.Sprintf("must be omitted or have the value '%v'; only the previous minor version is allowed", want))
	}

	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

// FailCgroupV1Message is upstream's refusal to start on cgroup v1 while
// failCgroupV1 is true, its default.
const FailCgroupV1Message = "kubelet is configured to not run on a host using cgroup v1. cgroup v1 support is unsupported and will be removed in a future release"

// ValidateOnHost is upstream's validateKubeletOSConfiguration on Linux:
// what the configuration may not say on this node's cgroup version.
func ValidateOnHost(cfg *kubeletconfigv1beta1.KubeletConfiguration, cgroupV1 bool) error {
	// Upstream's check is a bare error, not a field problem, and comes first.
	if cgroupV1 && (cfg.FailCgroupV1 == nil || *cfg.FailCgroupV1) {
		return errors.New(FailCgroupV1Message)
	}
	v := &validator{}
	if p := cfg.SingleProcessOOMKill; p != nil {
		v.check(cgroupV1 && !*p, "singleProcessOOMKill", *p, "must not be explicitly set to false when using cgroup v1")
	}
	if len(v.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems}
}

type validator struct{ problems []Problem }

func (v *validator) add(field string, value any, reason string) {
	v.problems = append(v.problems, Problem{Field: field, Value: value, Reason: reason})
}

func (v *validator) check(bad bool, field string, value any, reason string) {
	if bad {
		v.add(field, value, reason)
	}
}

func (v *validator) checkPtr(p *int32, bad func(int32) bool, field, reason string) {
	if p != nil && bad(*p) {
		v.add(field, *p, reason)
	}
}

func (v *validator) checkIP(field, value string) {
	if net.ParseIP(value) == nil {
		v.add(field, value, "must be a valid IP address")
	}
}

func (v *validator) checkOneOf(field, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		quoted := make([]string, len(allowed))
		for i, a := range allowed {
			quoted[i] = fmt.Sprintf("%q", a)
		}
		v.add(field, value, "must be one of "+strings.Join(quoted, ", "))
	}
}

// evictionSignals are the signals upstream's eviction manager understands on Linux.
var evictionSignals = []string{
	"memory.available", "allocatableMemory.available", "nodefs.available", "nodefs.inodesFree",
	"imagefs.available", "imagefs.inodesFree", "containerfs.available", "containerfs.inodesFree", "pid.available",
}

// checkThresholds applies upstream's eviction threshold parsing: a known signal
// and either a percentage in (0%, 100%] or a non-negative quantity.
func (v *validator) checkThresholds(field string, m map[string]string) {
	for _, signal := range slices.Sorted(maps.Keys(m)) {
		value, f := m[signal], fmt.Sprintf("%s[%s]", field, signal)
		if !slices.Contains(evictionSignals, signal) {
			v.add(f, value, "unsupported eviction signal "+signal)
			continue
		}
		if pct, ok := strings.CutSuffix(value, "%"); ok {
			var n float64
			if _, err := fmt.Sscanf(pct, "%g", &n); err != nil || n <= 0 || n > 100 {
				v.add(f, value, "percentage must be greater than 0% and at most 100%")
			}
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			v.add(f, value, err.Error())
			continue
		}
		v.check(q.Sign() < 0, f, value, "must not be negative")
	}
}

// checkReserved applies upstream's parsing of kubeReserved/systemReserved.
func (v *validator) checkReserved(field string, m map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(m)) {
		value, f := m[name], fmt.Sprintf("%s[%s]", field, name)
		switch {
		case name == "cpu", name == "memory", name == "ephemeral-storage", name == "pid":
		default:
			// Upstream's parseResourceList: huge pages cannot be reserved
			// either, their capacity is all allocatable.
			v.add(f, value, fmt.Sprintf(`cannot reserve %q resource; supported: "cpu", "memory", "ephemeral-storage", "pid"`, name))
			continue
		}
		q, err := resource.ParseQuantity(value)
		if err != nil {
			v.add(f, value, err.Error())
			continue
		}
		v.check(q.Sign() < 0, f, value, "must not be negative")
	}
}

// userNsUnitLength is the unit of user namespace ranges, upstream's: the
// 16-bit IDs of images' files must all map.
const userNsUnitLength = 65536

// checkUserNamespaces is upstream's (validation_linux.go): idsPerPod, when
// set, is at least one unit of 65536 IDs, a multiple of it, and fits in
// 32 bits.
func (v *validator) checkUserNamespaces(c *kubeletconfigv1beta1.KubeletConfiguration) {
	if c.UserNamespaces == nil || c.UserNamespaces.IDsPerPod == nil {
		return
	}
	const field = "userNamespaces.idsPerPod"
	n := *c.UserNamespaces.IDsPerPod
	switch {
	case n < userNsUnitLength:
		v.add(field, n, fmt.Sprintf("must not be less than %d", userNsUnitLength))
	case n%userNsUnitLength != 0:
		v.add(field, n, fmt.Sprintf("must be a multiple of %d", userNsUnitLength))
	case n > math.MaxUint32:
		v.add(field, n, fmt.Sprintf("must not be more than %d", int64(math.MaxUint32)))
	}
}

// checkLogging is upstream's logsapi.Validate for what the format does not
// decide: a positive flush period, and the split streams and their buffers
// only with LoggingAlphaOptions.
func (v *validator) checkLogging(c *kubeletconfigv1beta1.KubeletConfiguration, gates *features.Gates) {
	l := &c.Logging
	v.check(l.FlushFrequency.Duration.Duration <= 0, "logging.flushFrequency", l.FlushFrequency.Duration.Duration, "Must be greater than zero")
	if gates.Enabled("LoggingAlphaOptions") {
		return
	}
	const disabled = "Feature LoggingAlphaOptions is disabled"
	v.check(l.Options.Text.SplitStream, "logging.options.text.splitStream", true, disabled)
	v.check(l.Options.Text.InfoBufferSize.Value() != 0, "logging.options.text.infoBufferSize", l.Options.Text.InfoBufferSize.String(), disabled)
	v.check(l.Options.JSON.SplitStream, "logging.options.json.splitStream", true, disabled)
	v.check(l.Options.JSON.InfoBufferSize.Value() != 0, "logging.options.json.infoBufferSize", l.Options.JSON.InfoBufferSize.String(), disabled)
}

// sysctlName is upstream's sysctl name syntax (dots or slashes between
// segments), at most 253 characters.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// checkDefaultPodSysctls is upstream's: defaultPodSysctls need their gate,
// and each is a valid name of a namespaced sysctl, once (a slash and a dot
// spelling of one name are the same).
func (v *validator) checkDefaultPodSysctls(c *kubeletconfigv1beta1.KubeletConfiguration, gates *features.Gates) {
	if len(c.DefaultPodSysctls) == 0 {
		return
	}
	const field = "defaultPodSysctls"
	if !gates.Enabled("DefaultPodSysctls") {
		v.add(field, len(c.DefaultPodSysctls), "DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls")
		return
	}
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(c.DefaultPodSysctls)) {
		if len(k) > 253 || !sysctlName.MatchString(k) {
			v.add(field, k, fmt.Sprintf("%q is not a valid sysctl name for defaultPodSysctls", k))
			continue
		}
		if ns, _, _ := utilsysctl.GetNamespace(k); ns == utilsysctl.UnknownNamespace {
			v.add(field, k, fmt.Sprintf("%q is not known to be namespaced for defaultPodSysctls", k))
		}
		n := utilsysctl.NormalizeName(k)
		v.check(seen[n], field, k, fmt.Sprintf("duplicate sysctl %q found in defaultPodSysctls", n))
		seen[n] = true
	}
}

// previousMinor is "MAJOR.MINOR-1" of a "vMAJOR.MINOR.PATCH" version: the
// one showHiddenMetricsForVersion may name.
func previousMinor(v string) string {
	var major, minor int
	if _, err := fmt.Sscanf(v, "v%d.%d", &major, &minor); err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d", major, minor-1)
}

func validPort(p int32) bool { return p >= 1 && p <= 65535 }

// checkEnforceNodeAllocatable is upstream's validation of
// enforceNodeAllocatable: known keys, once each, "none" alone, a
// key and its -compressible form not both, the reserved cgroups named
// when enforced, and every enforcement requiring cgroupsPerQOS.
func (v *validator) checkEnforceNodeAllocatable(c *kubeletconfigv1beta1.KubeletConfiguration) {
	const field = "enforceNodeAllocatable"
	keys := map[string]bool{}
	for _, k := range c.EnforceNodeAllocatable {
		keys[k] = true
	}
	if keys["system-reserved"] && keys["system-reserved-compressible"] {
		v.add(field, c.EnforceNodeAllocatable, `"system-reserved" and "system-reserved-compressible" cannot be specified together`)
	}
	if keys["kube-reserved"] && keys["kube-reserved-compressible"] {
		v.add(field, c.EnforceNodeAllocatable, `"kube-reserved" and "kube-reserved-compressible" cannot be specified together`)
	}
	seen := map[string]bool{}
	for _, k := range c.EnforceNodeAllocatable {
		if seen[k] {
			v.add(field, k, "duplicated enforcement")
			continue
		}
		seen[k] = true
		switch k {
		case "pods":
		case "system-reserved", "system-reserved-compressible":
			v.check(c.SystemReservedCgroup == "", "systemReservedCgroup", c.SystemReservedCgroup,
				fmt.Sprintf("must be specified when %q or %q included in enforceNodeAllocatable", "system-reserved", "system-reserved-compressible"))
		case "kube-reserved", "kube-reserved-compressible":
			v.check(c.KubeReservedCgroup == "", "kubeReservedCgroup", c.KubeReservedCgroup,
				fmt.Sprintf("must be specified when %q or %q included in enforceNodeAllocatable", "kube-reserved", "kube-reserved-compressible"))
		case "none":
			v.check(len(c.EnforceNodeAllocatable) > 1, field, c.EnforceNodeAllocatable, `may not contain additional enforcements when "none" is specified`)
			continue
		default:
			v.add(field, k, `valid options are "pods", "system-reserved", "system-reserved-compressible", "kube-reserved", "kube-reserved-compressible" or "none"`)
			continue
		}
		v.check(c.CgroupsPerQOS != nil && !*c.CgroupsPerQOS, "cgroupsPerQOS", false,
			fmt.Sprintf("must be set to true when %q contained in enforceNodeAllocatable", k))
	}
}

// checkReservedMemory is upstream's validateReservedMemoryConfiguration:
// memory or huge pages only, none zero, one limit per NUMA node and type
// (the sums are checked against node allocatable at start, by the memory
// manager).
func (v *validator) checkReservedMemory(reserved []kubeletconfigv1beta1.MemoryReservation) {
	seen := map[int32]map[corev1.ResourceName]bool{}
	for i, r := range reserved {
		if seen[r.NumaNode] == nil {
			seen[r.NumaNode] = map[corev1.ResourceName]bool{}
		}
		for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
			q := r.Limits[name]
			field := fmt.Sprintf("reservedMemory[%d].limits[%s]", i, name)
			if name != corev1.ResourceMemory && !strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix) {
				v.add(field, q.String(), fmt.Sprintf("the limit type %q for NUMA node %d is not supported, only %v is accepted",
					name, r.NumaNode, []corev1.ResourceName{corev1.ResourceMemory, corev1.ResourceHugePagesPrefix + "<HugePageSize>"}))
			}
			if q.IsZero() {
				v.add(field, q.String(), fmt.Sprintf("reserved memory may not be zero for NUMA node %d and resource %q", r.NumaNode, name))
			}
			if seen[r.NumaNode][name] {
				v.add(field, q.String(), fmt.Sprintf("the reserved memory has a duplicate value for NUMA node %d and resource %q", r.NumaNode, name))
			}
			seen[r.NumaNode][name] = true
		}
	}
}
