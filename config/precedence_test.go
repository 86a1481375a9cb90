package config

import (
	"strings"
	"testing"
)

// precedenceCases covers every flag bound to a config field: the value with
// --config holding nothing (v1beta1 default), set in the file, overridden by a
// drop-in, and overridden by the flag.
var precedenceCases = []struct {
	flag, field                         string
	file, dropIn, flagVal               string
	def, fromFile, fromDropIn, fromFlag string
}{
	{"pod-manifest-path", "staticPodPath", "staticPodPath: /a", "staticPodPath: /b", "/c", "", "/a", "/b", "/c"},
	{"manifest-url", "staticPodURL", "staticPodURL: http://a", "staticPodURL: http://b", "http://c", "", "http://a", "http://b", "http://c"},
	{"file-check-frequency", "fileCheckFrequency", "fileCheckFrequency: 30s", "fileCheckFrequency: 40s", "50s", "20s", "30s", "40s", "50s"},
	{"http-check-frequency", "httpCheckFrequency", "httpCheckFrequency: 30s", "httpCheckFrequency: 40s", "50s", "20s", "30s", "40s", "50s"},
	{"sync-frequency", "syncFrequency", "syncFrequency: 2m", "syncFrequency: 3m", "4m", "1m0s", "2m0s", "3m0s", "4m0s"},
	{"address", "address", "address: 10.0.0.1", "address: 10.0.0.2", "10.0.0.3", "0.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3"},
	{"port", "port", "port: 1", "port: 2", "3", "10250", "1", "2", "3"},
	{"read-only-port", "readOnlyPort", "readOnlyPort: 1", "readOnlyPort: 2", "3", "", "1", "2", "3"},
	{"healthz-bind-address", "healthzBindAddress", "healthzBindAddress: 10.0.0.1", "healthzBindAddress: 10.0.0.2", "10.0.0.3", "127.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.3"},
	{"healthz-port", "healthzPort", "healthzPort: 1", "healthzPort: 2", "3", "10248", "1", "2", "3"},
	{"container-runtime-endpoint", "containerRuntimeEndpoint", "containerRuntimeEndpoint: unix:///a", "containerRuntimeEndpoint: unix:///b", "unix:///c", "unix:///run/containerd/containerd.sock", "unix:///a", "unix:///b", "unix:///c"},
	{"image-service-endpoint", "imageServiceEndpoint", "imageServiceEndpoint: unix:///a", "imageServiceEndpoint: unix:///b", "unix:///c", "", "unix:///a", "unix:///b", "unix:///c"},
	{"anonymous-auth", "authentication.anonymous.enabled", "authentication: {anonymous: {enabled: true}}", "authentication: {anonymous: {enabled: false}}", "true", "false", "true", "false", "true"},
	{"authentication-token-webhook", "authentication.webhook.enabled", "authentication: {webhook: {enabled: false}}", "authentication: {webhook: {enabled: true}}", "false", "true", "false", "true", "false"},
	{"client-ca-file", "authentication.x509.clientCAFile", "authentication: {x509: {clientCAFile: /a}}", "authentication: {x509: {clientCAFile: /b}}", "/c", "", "/a", "/b", "/c"},
	{"authorization-mode", "authorization.mode", "authorization: {mode: AlwaysAllow}", "authorization: {mode: Webhook}", "AlwaysAllow", "Webhook", "AlwaysAllow", "Webhook", "AlwaysAllow"},
	{"tls-cert-file", "tlsCertFile", "tlsCertFile: /a", "tlsCertFile: /b", "/c", "", "/a", "/b", "/c"},
	{"tls-private-key-file", "tlsPrivateKeyFile", "tlsPrivateKeyFile: /a", "tlsPrivateKeyFile: /b", "/c", "", "/a", "/b", "/c"},
	{"event-qps", "eventRecordQPS", "eventRecordQPS: 1", "eventRecordQPS: 2", "3", "50", "1", "2", "3"},
	{"event-burst", "eventBurst", "eventBurst: 1", "eventBurst: 2", "3", "100", "1", "2", "3"},
	{"oom-score-adj", "oomScoreAdj", "oomScoreAdj: 1", "oomScoreAdj: 2", "3", "-999", "1", "2", "3"},
	{"cluster-domain", "clusterDomain", "clusterDomain: a.local", "clusterDomain: b.local", "c.local", "", "a.local", "b.local", "c.local"},
	{"cluster-dns", "clusterDNS", "clusterDNS: [10.0.0.1, 10.0.0.2]", "clusterDNS: [10.0.0.3]", "10.0.0.4,10.0.0.5", "", "[10.0.0.1 10.0.0.2]", "[10.0.0.3]", "[10.0.0.4 10.0.0.5]"},
	{"streaming-connection-idle-timeout", "streamingConnectionIdleTimeout", "streamingConnectionIdleTimeout: 1h", "streamingConnectionIdleTimeout: 2h", "3h", "4h0m0s", "1h0m0s", "2h0m0s", "3h0m0s"},
	{"node-status-update-frequency", "nodeStatusUpdateFrequency", "nodeStatusUpdateFrequency: 11s", "nodeStatusUpdateFrequency: 12s", "13s", "10s", "11s", "12s", "13s"},
	{"minimum-image-ttl-duration", "imageMinimumGCAge", "imageMinimumGCAge: 3m", "imageMinimumGCAge: 4m", "5m", "2m0s", "3m0s", "4m0s", "5m0s"},
	{"image-gc-high-threshold", "imageGCHighThresholdPercent", "imageGCHighThresholdPercent: 90", "imageGCHighThresholdPercent: 91", "92", "85", "90", "91", "92"},
	{"image-gc-low-threshold", "imageGCLowThresholdPercent", "imageGCLowThresholdPercent: 10", "imageGCLowThresholdPercent: 11", "12", "80", "10", "11", "12"},
	{"volume-stats-agg-period", "volumeStatsAggPeriod", "volumeStatsAggPeriod: 2m", "volumeStatsAggPeriod: 3m", "4m", "1m0s", "2m0s", "3m0s", "4m0s"},
	{"feature-gates", "featureGates", "featureGates: {QOSReserved: true}", "featureGates: {EventedPLEG: true}", "CPUManagerPolicyAlphaOptions=true,QOSReserved=false", "",
		"map[QOSReserved:true]", "map[EventedPLEG:true QOSReserved:true]", "map[CPUManagerPolicyAlphaOptions:true EventedPLEG:true QOSReserved:false]"},
	{"provider-id", "providerID", "providerID: a", "providerID: b", "c", "", "a", "b", "c"},
	{"cgroup-driver", "cgroupDriver", "cgroupDriver: systemd", "cgroupDriver: cgroupfs", "systemd", "cgroupfs", "systemd", "cgroupfs", "systemd"},
	{"cgroup-root", "cgroupRoot", "cgroupRoot: /a", "cgroupRoot: /b", "/c", "", "/a", "/b", "/c"},
	{"runtime-request-timeout", "runtimeRequestTimeout", "runtimeRequestTimeout: 3m", "runtimeRequestTimeout: 4m", "5m", "2m0s", "3m0s", "4m0s", "5m0s"},
	{"hairpin-mode", "hairpinMode", "hairpinMode: hairpin-veth", "hairpinMode: none", "hairpin-veth", "promiscuous-bridge", "hairpin-veth", "none", "hairpin-veth"},
	{"max-pods", "maxPods", "maxPods: 30", "maxPods: 35", "50", "110", "30", "35", "50"},
	{"resolv-conf", "resolvConf", "resolvConf: /a", "resolvConf: /b", "/c", "/etc/resolv.conf", "/a", "/b", "/c"},
	{"container-log-max-size", "containerLogMaxSize", "containerLogMaxSize: 1Mi", "containerLogMaxSize: 2Mi", "3Mi", "10Mi", "1Mi", "2Mi", "3Mi"},
	{"container-log-max-files", "containerLogMaxFiles", "containerLogMaxFiles: 6", "containerLogMaxFiles: 7", "8", "5", "6", "7", "8"},
	{"node-status-max-images", "nodeStatusMaxImages", "nodeStatusMaxImages: 1", "nodeStatusMaxImages: 2", "3", "50", "1", "2", "3"},
	{"max-open-files", "maxOpenFiles", "maxOpenFiles: 1", "maxOpenFiles: 2", "3", "1000000", "1", "2", "3"},
	{"kube-api-qps", "kubeAPIQPS", "kubeAPIQPS: 1", "kubeAPIQPS: 2", "3", "50", "1", "2", "3"},
	{"kube-api-burst", "kubeAPIBurst", "kubeAPIBurst: 1", "kubeAPIBurst: 2", "3", "100", "1", "2", "3"},
	{"serialize-image-pulls", "serializeImagePulls", "serializeImagePulls: false", "serializeImagePulls: true", "false", "true", "false", "true", "false"},
	{"eviction-hard", "evictionHard", "evictionHard: {memory.available: 1Gi}", "evictionHard: {nodefs.available: 20%}", "memory.available<2Gi",
		"map[imagefs.available:15% imagefs.inodesFree:5% memory.available:100Mi nodefs.available:10% nodefs.inodesFree:5%]",
		"map[memory.available:1Gi]", "map[memory.available:1Gi nodefs.available:20%]", "map[memory.available:2Gi]"},
	{"pods-per-core", "podsPerCore", "podsPerCore: 1", "podsPerCore: 2", "3", "", "1", "2", "3"},
	{"system-reserved", "systemReserved", "systemReserved: {cpu: 100m}", "systemReserved: {memory: 1Gi}", "cpu=1", "", "map[cpu:100m]", "map[cpu:100m memory:1Gi]", "map[cpu:1]"},
	{"kube-reserved", "kubeReserved", "kubeReserved: {cpu: 100m}", "kubeReserved: {memory: 1Gi}", "cpu=1", "", "map[cpu:100m]", "map[cpu:100m memory:1Gi]", "map[cpu:1]"},
	{"fail-swap-on", "failSwapOn", "failSwapOn: false", "failSwapOn: true", "false", "true", "false", "true", "false"},
	{"register-node", "registerNode", "registerNode: false", "registerNode: true", "false", "true", "false", "true", "false"},
	{"rotate-certificates", "rotateCertificates", "rotateCertificates: true", "rotateCertificates: true", "false", "", "true", "true", ""},
	{"rotate-server-certificates", "serverTLSBootstrap", "serverTLSBootstrap: true", "serverTLSBootstrap: true", "false", "", "true", "true", ""},
	{"register-with-taints", "registerWithTaints", "registerWithTaints: [{key: a, effect: NoSchedule}]", "registerWithTaints: [{key: b, effect: NoExecute}]", "c=d:NoSchedule", "",
		"[map[effect:NoSchedule key:a]]", "[map[effect:NoExecute key:b]]", "[map[effect:NoSchedule key:c value:d]]"},
	{"logging-format", "logging.format", "logging: {format: json}", "logging: {format: text}", "json", "text", "json", "text", "json"},
	{"v", "logging.verbosity", "logging: {verbosity: 1}", "logging: {verbosity: 2}", "3", "0", "1", "2", "3"},
	// Added with upstream's full flag list (issue #20).
	{"allowed-unsafe-sysctls", "allowedUnsafeSysctls", "allowedUnsafeSysctls: [a.*]", "allowedUnsafeSysctls: [b.*]", "c.*,d.*", "", "[a.*]", "[b.*]", "[c.* d.*]"},
	{"authentication-token-webhook-cache-ttl", "authentication.webhook.cacheTTL", "authentication: {webhook: {cacheTTL: 1m}}", "authentication: {webhook: {cacheTTL: 3m}}", "4m", "2m0s", "1m0s", "3m0s", "4m0s"},
	{"authorization-webhook-cache-authorized-ttl", "authorization.webhook.cacheAuthorizedTTL", "authorization: {webhook: {cacheAuthorizedTTL: 1m}}", "authorization: {webhook: {cacheAuthorizedTTL: 2m}}", "3m", "5m0s", "1m0s", "2m0s", "3m0s"},
	{"authorization-webhook-cache-unauthorized-ttl", "authorization.webhook.cacheUnauthorizedTTL", "authorization: {webhook: {cacheUnauthorizedTTL: 1m}}", "authorization: {webhook: {cacheUnauthorizedTTL: 2m}}", "3m", "30s", "1m0s", "2m0s", "3m0s"},
	{"cgroups-per-qos", "cgroupsPerQOS", "cgroupsPerQOS: false", "cgroupsPerQOS: true", "false", "true", "false", "true", "false"},
	{"contention-profiling", "enableContentionProfiling", "enableContentionProfiling: true", "enableContentionProfiling: false", "true", "", "true", "", "true"},
	{"cpu-cfs-quota", "cpuCFSQuota", "cpuCFSQuota: false", "cpuCFSQuota: true", "false", "true", "false", "true", "false"},
	{"cpu-cfs-quota-period", "cpuCFSQuotaPeriod", "cpuCFSQuotaPeriod: 50ms", "cpuCFSQuotaPeriod: 60ms", "70ms", "100ms", "50ms", "60ms", "70ms"},
	{"cpu-manager-policy", "cpuManagerPolicy", "cpuManagerPolicy: static", "cpuManagerPolicy: none", "static", "none", "static", "none", "static"},
	{"cpu-manager-policy-options", "cpuManagerPolicyOptions", "cpuManagerPolicyOptions: {a: x}", "cpuManagerPolicyOptions: {b: q}", "c=z", "", "map[a:x]", "map[a:x b:q]", "map[c:z]"},
	{"cpu-manager-reconcile-period", "cpuManagerReconcilePeriod", "cpuManagerReconcilePeriod: 11s", "cpuManagerReconcilePeriod: 12s", "13s", "10s", "11s", "12s", "13s"},
	{"enable-controller-attach-detach", "enableControllerAttachDetach", "enableControllerAttachDetach: false", "enableControllerAttachDetach: true", "false", "true", "false", "true", "false"},
	{"enable-debugging-handlers", "enableDebuggingHandlers", "enableDebuggingHandlers: false", "enableDebuggingHandlers: true", "false", "true", "false", "true", "false"},
	{"enable-server", "enableServer", "enableServer: false", "enableServer: true", "false", "true", "false", "true", "false"},
	{"enforce-node-allocatable", "enforceNodeAllocatable", "enforceNodeAllocatable: [none]", "enforceNodeAllocatable: [pods, kube-reserved]", "pods,system-reserved", "[pods]", "[none]", "[pods kube-reserved]", "[pods system-reserved]"},
	{"eviction-max-pod-grace-period", "evictionMaxPodGracePeriod", "evictionMaxPodGracePeriod: 1", "evictionMaxPodGracePeriod: 2", "3", "", "1", "2", "3"},
	{"eviction-minimum-reclaim", "evictionMinimumReclaim", "evictionMinimumReclaim: {memory.available: 1Gi}", "evictionMinimumReclaim: {nodefs.available: 2Gi}", "imagefs.available=3Gi", "", "map[memory.available:1Gi]", "map[memory.available:1Gi nodefs.available:2Gi]", "map[imagefs.available:3Gi]"},
	{"eviction-pressure-transition-period", "evictionPressureTransitionPeriod", "evictionPressureTransitionPeriod: 1m", "evictionPressureTransitionPeriod: 2m", "3m", "5m0s", "1m0s", "2m0s", "3m0s"},
	{"eviction-soft", "evictionSoft", "evictionSoft: {memory.available: 1Gi}", "evictionSoft: {nodefs.available: 20%}", "memory.available<2Gi", "", "map[memory.available:1Gi]", "map[memory.available:1Gi nodefs.available:20%]", "map[memory.available:2Gi]"},
	{"eviction-soft-grace-period", "evictionSoftGracePeriod", "evictionSoftGracePeriod: {memory.available: 1m}", "evictionSoftGracePeriod: {nodefs.available: 2m}", "memory.available=3m", "", "map[memory.available:1m]", "map[memory.available:1m nodefs.available:2m]", "map[memory.available:3m]"},
	{"fail-cgroupv1", "failCgroupV1", "failCgroupV1: false", "failCgroupV1: true", "false", "true", "false", "true", "false"},
	{"kernel-memcg-notification", "kernelMemcgNotification", "kernelMemcgNotification: true", "kernelMemcgNotification: false", "true", "", "true", "", "true"},
	{"kube-api-content-type", "contentType", "contentType: application/json", "contentType: application/yaml", "application/cbor", "application/vnd.kubernetes.protobuf", "application/json", "application/yaml", "application/cbor"},
	{"kube-reserved-cgroup", "kubeReservedCgroup", "kubeReservedCgroup: /a", "kubeReservedCgroup: /b", "/c", "", "/a", "/b", "/c"},
	{"kubelet-cgroups", "kubeletCgroups", "kubeletCgroups: /a", "kubeletCgroups: /b", "/c", "", "/a", "/b", "/c"},
	{"local-storage-capacity-isolation", "localStorageCapacityIsolation", "localStorageCapacityIsolation: false", "localStorageCapacityIsolation: true", "false", "true", "false", "true", "false"},
	{"log-flush-frequency", "logging.flushFrequency", "logging: {flushFrequency: 1s}", "logging: {flushFrequency: 2s}", "3s", "5s", "1s", "2s", "3s"},
	{"log-json-info-buffer-size", "logging.options.json.infoBufferSize", "logging: {options: {json: {infoBufferSize: 1Ki}}}", "logging: {options: {json: {infoBufferSize: 2Ki}}}", "3Ki", "0", "1Ki", "2Ki", "3Ki"},
	{"log-json-split-stream", "logging.options.json.splitStream", "logging: {options: {json: {splitStream: true}}}", "logging: {options: {json: {splitStream: false}}}", "true", "", "true", "", "true"},
	{"log-text-info-buffer-size", "logging.options.text.infoBufferSize", "logging: {options: {text: {infoBufferSize: 1Ki}}}", "logging: {options: {text: {infoBufferSize: 2Ki}}}", "3Ki", "0", "1Ki", "2Ki", "3Ki"},
	{"log-text-split-stream", "logging.options.text.splitStream", "logging: {options: {text: {splitStream: true}}}", "logging: {options: {text: {splitStream: false}}}", "true", "", "true", "", "true"},
	{"make-iptables-util-chains", "makeIPTablesUtilChains", "makeIPTablesUtilChains: false", "makeIPTablesUtilChains: true", "false", "true", "false", "true", "false"},
	{"manifest-url-header", "staticPodURLHeader", "staticPodURLHeader: {a: [x]}", "staticPodURLHeader: {b: [q]}", "c:z,c:w", "", "map[a:[x]]", "map[a:[x] b:[q]]", "map[c:[z w]]"},
	{"memory-manager-policy", "memoryManagerPolicy", "memoryManagerPolicy: Static", "memoryManagerPolicy: None", "Static", "None", "Static", "None", "Static"},
	{"pod-cidr", "podCIDR", "podCIDR: 10.1.0.0/16", "podCIDR: 10.2.0.0/16", "10.3.0.0/16", "", "10.1.0.0/16", "10.2.0.0/16", "10.3.0.0/16"},
	{"pod-max-pids", "podPidsLimit", "podPidsLimit: 100", "podPidsLimit: 200", "300", "-1", "100", "200", "300"},
	{"protect-kernel-defaults", "protectKernelDefaults", "protectKernelDefaults: true", "protectKernelDefaults: false", "true", "", "true", "", "true"},
	{"qos-reserved", "qosReserved", "qosReserved: {memory: 10%}", "qosReserved: {cpu: 20%}", "memory=30%", "", "map[memory:10%]", "map[cpu:20% memory:10%]", "map[memory:30%]"},
	{"registry-burst", "registryBurst", "registryBurst: 1", "registryBurst: 2", "3", "10", "1", "2", "3"},
	{"registry-qps", "registryPullQPS", "registryPullQPS: 1", "registryPullQPS: 2", "3", "5", "1", "2", "3"},
	{"reserved-cpus", "reservedSystemCPUs", "reservedSystemCPUs: '0'", "reservedSystemCPUs: '1'", "0-1", "", "0", "1", "0-1"},
	{"reserved-memory", "reservedMemory", "reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]", "reservedMemory: [{numaNode: 1, limits: {memory: 2Gi}}]", "0:memory=3Gi", "", "[map[limits:map[memory:1Gi] numaNode:0]]", "[map[limits:map[memory:2Gi] numaNode:1]]", "[map[limits:map[memory:3Gi] numaNode:0]]"},
	{"runonce", "runOnce", "runOnce: true", "runOnce: false", "true", "", "true", "", "true"},
	{"system-cgroups", "systemCgroups", "systemCgroups: /a", "systemCgroups: /b", "/c", "", "/a", "/b", "/c"},
	{"system-reserved-cgroup", "systemReservedCgroup", "systemReservedCgroup: /a", "systemReservedCgroup: /b", "/c", "", "/a", "/b", "/c"},
	{"tls-cipher-suites", "tlsCipherSuites", "tlsCipherSuites: [A]", "tlsCipherSuites: [B]", "C,D", "", "[A]", "[B]", "[C D]"},
	{"tls-min-version", "tlsMinVersion", "tlsMinVersion: VersionTLS12", "tlsMinVersion: VersionTLS13", "VersionTLS12", "", "VersionTLS12", "VersionTLS13", "VersionTLS12"},
	{"topology-manager-policy", "topologyManagerPolicy", "topologyManagerPolicy: best-effort", "topologyManagerPolicy: restricted", "single-numa-node", "none", "best-effort", "restricted", "single-numa-node"},
	{"topology-manager-policy-options", "topologyManagerPolicyOptions", "topologyManagerPolicyOptions: {a: x}", "topologyManagerPolicyOptions: {b: q}", "c=z", "", "map[a:x]", "map[a:x b:q]", "map[c:z]"},
	{"topology-manager-scope", "topologyManagerScope", "topologyManagerScope: pod", "topologyManagerScope: container", "pod", "container", "pod", "container", "pod"},
	{"vmodule", "logging.vmodule", "logging: {vmodule: [{filePattern: a, verbosity: 1}]}", "logging: {vmodule: [{filePattern: b, verbosity: 2}]}", "c=3", "", "[map[filePattern:a verbosity:1]]", "[map[filePattern:b verbosity:2]]", "[map[filePattern:b verbosity:2] map[filePattern:c verbosity:3]]"},
	{"volume-plugin-dir", "volumePluginDir", "volumePluginDir: /a", "volumePluginDir: /b", "/c", "/usr/libexec/kubernetes/kubelet-plugins/volume/exec/", "/a", "/b", "/c"},
}

// flagAlone is the expected value with no files; it differs from the full stack
// only where files contributed map keys that the flag keeps.
func flagAlone(flag, withFiles string) string {
	if flag == "feature-gates" {
		return "map[CPUManagerPolicyAlphaOptions:true QOSReserved:false]"
	}
	if flag == "vmodule" {
		// Upstream's vmodule value appends to the list the files gave.
		return "[map[filePattern:c verbosity:3]]"
	}
	return withFiles
}

func TestPrecedenceCoversEveryConfigFlag(t *testing.T) {
	covered := map[string]string{}
	for _, tc := range precedenceCases {
		covered[tc.flag] = tc.field
	}
	for _, f := range configFlags {
		if field, ok := covered[f.name]; !ok || field != f.field {
			t.Errorf("flag --%s (field %s) has no precedence case", f.name, f.field)
		}
	}
}

func TestPrecedence(t *testing.T) {
	for _, tc := range precedenceCases {
		t.Run(tc.flag, func(t *testing.T) {
			dir := t.TempDir()
			empty := writeFile(t, dir, "empty.yaml", header)
			file := writeFile(t, dir, "kubelet.yaml", header+tc.file+"\n")
			dropIns := dir + "/conf.d"
			writeFile(t, dropIns, "10-override.conf", header+tc.dropIn+"\n")
			flag := "--" + tc.flag + "=" + tc.flagVal

			steps := []struct {
				name string
				args []string
				want string
			}{
				{"default", []string{"--config", empty}, tc.def},
				{"file", []string{"--config", file}, tc.fromFile},
				{"drop-in", []string{"--config", file, "--config-dir", dropIns}, tc.fromDropIn},
				{"flag", []string{flag, "--config", file, "--config-dir", dropIns}, tc.fromFlag},
				{"flag without files", []string{flag}, flagAlone(tc.flag, tc.fromFlag)},
			}
			for _, s := range steps {
				cfg, _ := load(t, s.args...)
				if got := lookup(t, cfg, tc.field); got != s.want {
					t.Errorf("%s: %s = %q, want %q", s.name, tc.field, got, s.want)
				}
			}
		})
	}
}

// The "done when": --max-pods beats the file, in either spelling.
func TestMaxPodsDoneWhen(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+"maxPods: 30\n")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--dump-config", "--config", file, "--max-pods", "50"}, "maxPods: 50\n"},
		{[]string{"--dump-config", "--config", file, "--max_pods", "40"}, "maxPods: 40\n"},
		{[]string{"--dump-config", "--config", file}, "maxPods: 30\n"},
	} {
		cfg, _ := load(t, tc.args...)
		out, err := Dump(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(out), tc.want) {
			t.Errorf("%q: dump lacks %q", tc.args, tc.want)
		}
	}
}

func TestFlagNameNormalization(t *testing.T) {
	for _, pair := range [][2]string{
		{"--pod_manifest_path=/m", "--pod-manifest-path=/m"},
		{"--read_only_port=0", "--read-only-port=0"},
		{"--feature_gates=QOSReserved=true", "--feature-gates=QOSReserved=true"},
	} {
		a, _ := load(t, pair[0])
		b, _ := load(t, pair[1])
		da, _ := Dump(a)
		db, _ := Dump(b)
		if string(da) != string(db) {
			t.Errorf("%s and %s give different configurations", pair[0], pair[1])
		}
	}
	c, err := ParseCommandLine([]string{"--hostname_override=n1", "--root_dir=/r", "--node-labels=a=b,c"})
	if err != nil {
		t.Fatal(err)
	}
	if c.Options.HostnameOverride != "n1" || c.Options.RootDir != "/r" || c.Options.NodeLabels["a"] != "b" {
		t.Errorf("options = %+v", c.Options)
	}
	if _, ok := c.Options.NodeLabels["c"]; !ok {
		t.Errorf("label without value missing: %v", c.Options.NodeLabels)
	}
}
