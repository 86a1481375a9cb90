package config

import (
	"fmt"
	"maps"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	logsapi "k8s.io/component-base/logs/api/v1"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/config/features"
)

// Values copied from upstream v1.37.2 (pkg/kubelet/apis/config/v1beta1/defaults.go,
// pkg/cluster/ports, pkg/kubelet/qos, pkg/kubelet/eviction).
const (
	kubeletPort         = 10250
	kubeletReadOnlyPort = 10255
	kubeletOOMScoreAdj  = -999
	maxContainerBackOff = 300 * time.Second
)

// defaultEvictionHard is applied by upstream when a --config file leaves
// evictionHard unset (it is OS specific, so not a v1beta1 default).
var defaultEvictionHard = map[string]string{
	"memory.available":   "100Mi",
	"nodefs.available":   "10%",
	"nodefs.inodesFree":  "5%",
	"imagefs.available":  "15%",
	"imagefs.inodesFree": "5%",
}

// setDefaults is upstream's SetDefaults_KubeletConfiguration: every unset field
// gets its v1beta1 default. gates are the process gates; the configuration's own
// featureGates are layered over a copy, as upstream does, because two defaults
// depend on gates.
func setDefaults(obj *kubeletconfigv1beta1.KubeletConfiguration, gates *features.Gates) error {
	local := gates.DeepCopy()
	if _, err := local.SetFromMap(obj.FeatureGates); err != nil {
		return fmt.Errorf("featureGates: %w", err)
	}
	zero := metav1.Duration{}
	if obj.EnableServer == nil {
		obj.EnableServer = new(true)
	}
	if obj.SyncFrequency == zero {
		obj.SyncFrequency = metav1.Duration{Duration: time.Minute}
	}
	if obj.FileCheckFrequency == zero {
		obj.FileCheckFrequency = metav1.Duration{Duration: 20 * time.Second}
	}
	if obj.HTTPCheckFrequency == zero {
		obj.HTTPCheckFrequency = metav1.Duration{Duration: 20 * time.Second}
	}
	if obj.Address == "" {
		obj.Address = "0.0.0.0"
	}
	if obj.Port == 0 {
		obj.Port = kubeletPort
	}
	if obj.Authentication.Anonymous.Enabled == nil {
		obj.Authentication.Anonymous.Enabled = new(false)
	}
	if obj.Authentication.Webhook.Enabled == nil {
		obj.Authentication.Webhook.Enabled = new(true)
	}
	if obj.Authentication.Webhook.CacheTTL == zero {
		obj.Authentication.Webhook.CacheTTL = metav1.Duration{Duration: 2 * time.Minute}
	}
	if obj.Authorization.Mode == "" {
		obj.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeWebhook
	}
	if obj.Authorization.Webhook.CacheAuthorizedTTL == zero {
		obj.Authorization.Webhook.CacheAuthorizedTTL = metav1.Duration{Duration: 5 * time.Minute}
	}
	if obj.Authorization.Webhook.CacheUnauthorizedTTL == zero {
		obj.Authorization.Webhook.CacheUnauthorizedTTL = metav1.Duration{Duration: 30 * time.Second}
	}
	if obj.RegistryPullQPS == nil {
		obj.RegistryPullQPS = new(int32(5))
	}
	if obj.RegistryBurst == 0 {
		obj.RegistryBurst = 10
	}
	if obj.EventRecordQPS == nil {
		obj.EventRecordQPS = new(int32(50))
	}
	if obj.EventBurst == 0 {
		obj.EventBurst = 100
	}
	if obj.EnableDebuggingHandlers == nil {
		obj.EnableDebuggingHandlers = new(true)
	}
	if obj.HealthzPort == nil {
		obj.HealthzPort = new(int32(10248))
	}
	if obj.HealthzBindAddress == "" {
		obj.HealthzBindAddress = "127.0.0.1"
	}
	if obj.OOMScoreAdj == nil {
		obj.OOMScoreAdj = new(int32(kubeletOOMScoreAdj))
	}
	if obj.StreamingConnectionIdleTimeout == zero {
		obj.StreamingConnectionIdleTimeout = metav1.Duration{Duration: 4 * time.Hour}
	}
	if obj.NodeStatusReportFrequency == zero {
		// Backward compatibility: an explicit update frequency also sets the report frequency.
		if obj.NodeStatusUpdateFrequency == zero {
			obj.NodeStatusReportFrequency = metav1.Duration{Duration: 5 * time.Minute}
		} else {
			obj.NodeStatusReportFrequency = obj.NodeStatusUpdateFrequency
		}
	}
	if obj.NodeStatusUpdateFrequency == zero {
		obj.NodeStatusUpdateFrequency = metav1.Duration{Duration: 10 * time.Second}
	}
	if obj.NodeLeaseDurationSeconds == 0 {
		obj.NodeLeaseDurationSeconds = 40
	}
	if obj.ImageMinimumGCAge == zero {
		obj.ImageMinimumGCAge = metav1.Duration{Duration: 2 * time.Minute}
	}
	if obj.ImageGCHighThresholdPercent == nil {
		obj.ImageGCHighThresholdPercent = new(int32(85))
	}
	if obj.ImageGCLowThresholdPercent == nil {
		obj.ImageGCLowThresholdPercent = new(int32(80))
	}
	if obj.VolumeStatsAggPeriod == zero {
		obj.VolumeStatsAggPeriod = metav1.Duration{Duration: time.Minute}
	}
	if obj.CgroupsPerQOS == nil {
		obj.CgroupsPerQOS = new(true)
	}
	if obj.CgroupDriver == "" {
		obj.CgroupDriver = "cgroupfs"
	}
	if obj.CPUManagerPolicy == "" {
		obj.CPUManagerPolicy = "none"
	}
	if obj.CPUManagerReconcilePeriod == zero {
		obj.CPUManagerReconcilePeriod = metav1.Duration{Duration: 10 * time.Second}
	}
	if obj.MemoryManagerPolicy == "" {
		obj.MemoryManagerPolicy = kubeletconfigv1beta1.NoneMemoryManagerPolicy
	}
	if obj.TopologyManagerPolicy == "" {
		obj.TopologyManagerPolicy = kubeletconfigv1beta1.NoneTopologyManagerPolicy
	}
	if obj.TopologyManagerScope == "" {
		obj.TopologyManagerScope = kubeletconfigv1beta1.ContainerTopologyManagerScope
	}
	if obj.RuntimeRequestTimeout == zero {
		obj.RuntimeRequestTimeout = metav1.Duration{Duration: 2 * time.Minute}
	}
	if obj.HairpinMode == "" {
		obj.HairpinMode = kubeletconfigv1beta1.PromiscuousBridge
	}
	if obj.MaxPods == 0 {
		obj.MaxPods = 110
	}
	// nil or negative means "the node's allocatable pid capacity".
	if obj.PodPidsLimit == nil || *obj.PodPidsLimit < 0 {
		obj.PodPidsLimit = new(int64(-1))
	}
	if obj.ResolverConfig == nil {
		obj.ResolverConfig = new("/etc/resolv.conf")
	}
	if obj.CPUCFSQuota == nil {
		obj.CPUCFSQuota = new(true)
	}
	if obj.CPUCFSQuotaPeriod == nil {
		obj.CPUCFSQuotaPeriod = &metav1.Duration{Duration: 100 * time.Millisecond}
	}
	if obj.NodeStatusMaxImages == nil {
		obj.NodeStatusMaxImages = new(int32(50))
	}
	if obj.MaxOpenFiles == 0 {
		obj.MaxOpenFiles = 1000000
	}
	if obj.ContentType == "" {
		obj.ContentType = "application/vnd.kubernetes.protobuf"
	}
	if obj.KubeAPIQPS == nil {
		obj.KubeAPIQPS = new(int32(50))
	}
	if obj.KubeAPIBurst == 0 {
		obj.KubeAPIBurst = 100
	}
	if obj.SerializeImagePulls == nil {
		// Setting maxParallelImagePulls implies parallel pulls, so nobody has to set both.
		obj.SerializeImagePulls = new(obj.MaxParallelImagePulls == nil || *obj.MaxParallelImagePulls < 2)
	}
	if obj.EvictionPressureTransitionPeriod == zero {
		obj.EvictionPressureTransitionPeriod = metav1.Duration{Duration: 5 * time.Minute}
	}
	if obj.MergeDefaultEvictionSettings == nil {
		obj.MergeDefaultEvictionSettings = new(false)
	}
	if obj.EnableControllerAttachDetach == nil {
		obj.EnableControllerAttachDetach = new(true)
	}
	if obj.MakeIPTablesUtilChains == nil {
		obj.MakeIPTablesUtilChains = new(true)
	}
	if obj.IPTablesMasqueradeBit == nil {
		obj.IPTablesMasqueradeBit = new(int32(14))
	}
	if obj.IPTablesDropBit == nil {
		obj.IPTablesDropBit = new(int32(15))
	}
	if obj.FailSwapOn == nil {
		obj.FailSwapOn = new(true)
	}
	if obj.ContainerLogMaxSize == "" {
		obj.ContainerLogMaxSize = "10Mi"
	}
	if obj.ContainerLogMaxFiles == nil {
		obj.ContainerLogMaxFiles = new(int32(5))
	}
	if obj.ContainerLogMaxWorkers == nil {
		obj.ContainerLogMaxWorkers = new(int32(1))
	}
	if obj.ContainerLogMonitorInterval == nil {
		obj.ContainerLogMonitorInterval = &metav1.Duration{Duration: 10 * time.Second}
	}
	if obj.ConfigMapAndSecretChangeDetectionStrategy == "" {
		obj.ConfigMapAndSecretChangeDetectionStrategy = kubeletconfigv1beta1.WatchChangeDetectionStrategy
	}
	if obj.EnforceNodeAllocatable == nil {
		obj.EnforceNodeAllocatable = []string{"pods"}
	}
	if obj.VolumePluginDir == "" {
		obj.VolumePluginDir = "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/"
	}
	logsapi.SetRecommendedLoggingConfiguration(&obj.Logging)
	if obj.EnableSystemLogHandler == nil {
		obj.EnableSystemLogHandler = new(true)
	}
	if obj.EnableProfilingHandler == nil {
		obj.EnableProfilingHandler = new(true)
	}
	if obj.EnableDebugFlagsHandler == nil {
		obj.EnableDebugFlagsHandler = new(true)
	}
	if obj.SeccompDefault == nil {
		obj.SeccompDefault = new(false)
	}
	if obj.FailCgroupV1 == nil {
		obj.FailCgroupV1 = new(true)
	}
	if obj.MemoryReservationPolicy == "" {
		obj.MemoryReservationPolicy = kubeletconfigv1beta1.NoneMemoryReservationPolicy
	}
	if obj.RegisterNode == nil {
		obj.RegisterNode = new(true)
	}
	if obj.LocalStorageCapacityIsolation == nil {
		obj.LocalStorageCapacityIsolation = new(true)
	}
	if obj.ContainerRuntimeEndpoint == "" {
		obj.ContainerRuntimeEndpoint = "unix:///run/containerd/containerd.sock"
	}
	if obj.PodLogsDir == "" {
		obj.PodLogsDir = "/var/log/pods"
	}
	if local.Enabled("KubeletCrashLoopBackOffMax") && obj.CrashLoopBackOff.MaxContainerRestartPeriod == nil {
		obj.CrashLoopBackOff.MaxContainerRestartPeriod = &metav1.Duration{Duration: maxContainerBackOff}
	}
	if local.Enabled("KubeletEnsureSecretPulledImages") && obj.ImagePullCredentialsVerificationPolicy == "" {
		obj.ImagePullCredentialsVerificationPolicy = kubeletconfigv1beta1.NeverVerifyPreloadedImages
	}
	return nil
}

// legacyDefaults is the configuration upstream starts from when no --config is
// given: the v1beta1 defaults (under the default gates, as flags are not parsed
// yet) with the old command-line defaults restored, so that command lines
// written before the config file existed keep their meaning.
func legacyDefaults() *kubeletconfigv1beta1.KubeletConfiguration {
	c := &kubeletconfigv1beta1.KubeletConfiguration{}
	if err := setDefaults(c, features.New()); err != nil {
		panic(fmt.Sprintf("defaulting an empty configuration failed: %v", err))
	}
	c.Authentication.Anonymous.Enabled = new(true)
	c.Authentication.Webhook.Enabled = new(false)
	c.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	c.ReadOnlyPort = kubeletReadOnlyPort
	return c
}

// applyEvictionHardDefault is what upstream's loadConfigFile does after decoding
// a --config file.
func applyEvictionHardDefault(c *kubeletconfigv1beta1.KubeletConfiguration) {
	if c.EvictionHard == nil {
		c.EvictionHard = maps.Clone(defaultEvictionHard)
		return
	}
	if c.MergeDefaultEvictionSettings != nil && *c.MergeDefaultEvictionSettings {
		for k, v := range defaultEvictionHard {
			if _, set := c.EvictionHard[k]; !set {
				c.EvictionHard[k] = v
			}
		}
	}
}
