package config

import (
	"slices"
	"strings"
)

// Implemented holds the KubeletConfiguration fields (JSON names, dotted) that
// actorlet acts on. A key ending in ".*" covers the whole object below it.
// Any other known field that a user sets — in a file or with a flag — is
// accepted but reported once at start-up, so nobody believes a setting is in
// force when it is not.
var Implemented = map[string]bool{
	"apiVersion":                  true,
	"kind":                        true,
	"staticPodPath":               true,
	"staticPodURL":                true,
	"staticPodURLHeader":          true,
	"nodeStatusMaxImages":         true,
	"providerID":                  true,
	"oomScoreAdj":                 true,
	"fileCheckFrequency":          true,
	"httpCheckFrequency":          true,
	"address":                     true,
	"port":                        true,
	"readOnlyPort":                true,
	"enableServer":                true,
	"tlsCertFile":                 true,
	"tlsPrivateKeyFile":           true,
	"serverTLSBootstrap":          true,
	"tlsMinVersion":               true,
	"tlsCipherSuites":             true,
	"tlsCurvePreferences":         true,
	"seccompDefault":              true,
	"authentication.*":            true,
	"authorization.*":             true,
	"healthzBindAddress":          true,
	"healthzPort":                 true,
	"containerRuntimeEndpoint":    true,
	"imageServiceEndpoint":        true,
	"maxPods":                     true,
	"allowedUnsafeSysctls":        true,
	"registerNode":                true,
	"registerWithTaints":          true,
	"featureGates":                true,
	"rotateCertificates":          true,
	"logging.format":              true,
	"logging.verbosity":           true,
	"nodeStatusUpdateFrequency":   true,
	"nodeStatusReportFrequency":   true,
	"nodeLeaseDurationSeconds":    true,
	"runtimeRequestTimeout":       true,
	"cgroupRoot":                  true,
	"cgroupDriver":                true,
	"clusterDNS":                  true,
	"clusterDomain":               true,
	"resolvConf":                  true,
	"imageGCHighThresholdPercent": true,
	"imageGCLowThresholdPercent":  true,
	"imageMinimumGCAge":           true,
	"imageMaximumGCAge":           true,
	"containerLogMaxSize":         true,
	"containerLogMaxFiles":        true,
	"containerLogMaxWorkers":      true,
	"containerLogMonitorInterval": true,
	"podLogsDir":                  true,
	// The volume-manager's period: content volumes refreshed, orphaned
	// pod directories looked for (pods themselves sync on runtime events).
	"syncFrequency": true,
	// How long /stats/summary reuses a volume's measured usage.
	"volumeStatsAggPeriod": true,
	"kubeReserved":         true,
	"systemReserved":       true,
	// The CPU, memory and topology managers (internal/cpumanager,
	// internal/memorymanager, internal/topologymanager).
	"cpuManagerPolicy":             true,
	"cpuManagerPolicyOptions":      true,
	"cpuManagerReconcilePeriod":    true,
	"reservedSystemCPUs":           true,
	"memoryManagerPolicy":          true,
	"reservedMemory":               true,
	"topologyManagerPolicy":        true,
	"topologyManagerScope":         true,
	"topologyManagerPolicyOptions": true,
	"evictionHard":                 true,
	// Fills evictionHard's unset signals with the defaults as a --config
	// file is loaded (applyEvictionHardDefault).
	"mergeDefaultEvictionSettings": true,
	// The node's pods: maxPods lowered to podsPerCore × CPUs.
	"podsPerCore": true,
	// Containers' and pod cgroups' CFS quota and period.
	"cpuCFSQuota":       true,
	"cpuCFSQuotaPeriod": true,
	// The QoS cgroups' memory limits, under the QOSReserved gate.
	"qosReserved": true,
	// The host at start-up (internal/hostsetup): swap refused, kernel
	// tunables checked or set, the open files limit, the agent's and the
	// system's processes' cgroups.
	"failSwapOn":            true,
	"protectKernelDefaults": true,
	"maxOpenFiles":          true,
	"kubeletCgroups":        true,
	"systemCgroups":         true,
	// Containers' swap (none on v1: memory+swap at the memory limit) and
	// OOM group kill on cgroup v2.
	"memorySwap.swapBehavior": true,
	"singleProcessOOMKill":    true,
	// Refusing to start on cgroup v1 (ValidateOnHost).
	"failCgroupV1": true,
	// The node's cgroup tree (podcgroups): QoS and pod cgroups, kubepods
	// bounded by allocatable, pids.max of pod cgroups, the reserved
	// cgroups' limits when enforced.
	"cgroupsPerQOS":                              true,
	"enforceNodeAllocatable":                     true,
	"podPidsLimit":                               true,
	"systemReservedCgroup":                       true,
	"kubeReservedCgroup":                         true,
	"crashLoopBackOff.maxContainerRestartPeriod": true,
	"eventRecordQPS":                             true,
	"eventBurst":                                 true,
	"kubeAPIQPS":                                 true,
	"kubeAPIBurst":                               true,
	// The debugging handlers of the kubelet API (actors/kubeletapi).
	"enableDebuggingHandlers":   true,
	"enableSystemLogHandler":    true,
	"enableProfilingHandler":    true,
	"enableContentionProfiling": true,

	// The eviction manager (actors/eviction).
	"evictionSoft":                     true,
	"evictionSoftGracePeriod":          true,
	"evictionMinimumReclaim":           true,
	"evictionPressureTransitionPeriod": true,
	"evictionMaxPodGracePeriod":        true,
	"localStorageCapacityIsolation":    true,

	// The records of pulled images' credentials (imagepull), with
	// KubeletEnsureSecretPulledImages.
	"imagePullCredentialsVerificationPolicy": true,
	"preloadedImagesVerificationAllowlist":   true,

	// The node's pull limiter (imagepull.Limiter).
	"serializeImagePulls":   true,
	"maxParallelImagePulls": true,
	"registryPullQPS":       true,
	"registryBurst":         true,

	// The length of each pod's user namespace range (internal/userns).
	"userNamespaces.idsPerPod": true,

	// The API client's content type (internal/dependencies).
	"contentType": true,
	// PUT /debug/flags/v on the kubelet API: the log verbosity at run time.
	"enableDebugFlagsHandler": true,
	// The Node's controller-managed-attach-detach annotation, and CSI
	// volumes that need an attach refused when false.
	"enableControllerAttachDetach": true,
	// Validated as upstream v1.37.2, which acts on none of them either: no
	// kubelet-owned hairpin, iptables bits or streaming server (the
	// runtime's streams are proxied), and runOnce is refused.
	"hairpinMode":                    true,
	"iptablesMasqueradeBit":          true,
	"iptablesDropBit":                true,
	"streamingConnectionIdleTimeout": true,
	"runOnce":                        true,
	// Validated; the log is written unbuffered, so nothing waits for a
	// flush.
	"logging.flushFrequency": true,
	// How configMap and secret volumes read their objects
	// (internal/volume/apisource): Watch, Cache or Get.
	"configMapAndSecretChangeDetectionStrategy": true,
	// Set in each sandbox that has the sysctl's namespace, under the pod's
	// own (with the DefaultPodSysctls gate).
	"defaultPodSysctls": true,
	// Validated (the previous minor only); actorlet registers no hidden
	// metrics, so there are none to show.
	"showHiddenMetricsForVersion": true,

	// The node shutdown manager (actors/nodeshutdown).
	"shutdownGracePeriod":              true,
	"shutdownGracePeriodCriticalPods":  true,
	"shutdownGracePeriodByPodPriority": true,
}

// IsImplemented reports whether actorlet acts on the field at path.
func IsImplemented(path string) bool {
	if Implemented[path] {
		return true
	}
	for p := path; ; {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return false
		}
		p = p[:i]
		if Implemented[p+".*"] {
			return true
		}
	}
}

// notImplemented returns the sorted, de-duplicated paths that are not implemented.
func notImplemented(paths []string) []string {
	var out []string
	for _, p := range paths {
		if !IsImplemented(p) {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
