package config

import (
	"errors"
	"maps"
	"strings"
	"testing"
)

func TestValidateReportsEveryProblem(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+`maxPods: -1
healthzPort: 70000
imageGCHighThresholdPercent: 50
imageGCLowThresholdPercent: 60
logging: {format: xml}
evictionHard: {memory.available: lots, disk.available: 1Gi}
clusterDNS: [10.0.0.300]
authorization: {mode: RBAC}
`)
	cfg, _ := load(t, "--config", file)
	err := Validate(cfg, nil)
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("Validate = %v, want *ValidationError", err)
	}
	want := []string{
		"maxPods: Invalid value: -1: must not be negative",
		"healthzPort: Invalid value: 70000: must be between 1 and 65535",
		"imageGCLowThresholdPercent: Invalid value: 60: must be less than imageGCHighThresholdPercent (50)",
		`logging.format: Invalid value: "xml": must be one of "text", "json"`,
		`evictionHard[memory.available]: Invalid value: "lots":`,
		`evictionHard[disk.available]: Invalid value: "1Gi": unsupported eviction signal disk.available`,
		`clusterDNS[0]: Invalid value: "10.0.0.300": must be a valid IP address`,
		`authorization.mode: Invalid value: "RBAC": must be one of "AlwaysAllow", "Webhook"`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("validation error lacks %q:\n%v", w, err)
		}
	}
	if got := len(strings.Split(err.Error(), "\n")); got != len(verr.Problems) || got != len(want) {
		t.Errorf("%d lines, %d problems, want %d:\n%v", got, len(verr.Problems), len(want), err)
	}
}

func TestValidateDefaultsAreValid(t *testing.T) {
	for _, args := range [][]string{nil, {"--config", writeFile(t, t.TempDir(), "k.yaml", header)}} {
		cfg, _ := load(t, args...)
		if err := Validate(cfg, nil); err != nil {
			t.Errorf("defaults for %q are invalid: %v", args, err)
		}
	}
}

func TestValidateFeatureGateRules(t *testing.T) {
	cfg, _ := load(t)
	cfg.FeatureGates = map[string]bool{"NodeSwap": false}
	if err := Validate(cfg, nil); err == nil || !strings.Contains(err.Error(), "cannot set feature gate NodeSwap to false, feature is locked to true") {
		t.Errorf("locked gate: err = %v", err)
	}
	cfg.FeatureGates = map[string]bool{"KubeletCrashLoopBackOffMax": false}
	if err := Validate(cfg, nil); err == nil || !strings.Contains(err.Error(), "crashLoopBackOff.maxContainerRestartPeriod") {
		t.Errorf("gate-dependent field: err = %v", err)
	}
	cfg, _ = load(t)
	cfg.ServerTLSBootstrap = true
	cfg.FeatureGates = map[string]bool{"RotateKubeletServerCertificate": false}
	if err := Validate(cfg, nil); err == nil || !strings.Contains(err.Error(), "serverTLSBootstrap: Invalid value: true: requires feature gate RotateKubeletServerCertificate") {
		t.Errorf("serverTLSBootstrap without its gate: err = %v", err)
	}
	cfg.FeatureGates = nil
	if err := Validate(cfg, nil); err != nil {
		t.Errorf("serverTLSBootstrap with its gate on by default: err = %v", err)
	}
}

func TestValidateReservedResources(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want string // "": valid
	}{
		{name: "supported", yaml: "kubeReserved: {cpu: 100m, memory: 1Gi, ephemeral-storage: 1Gi, pid: \"100\"}\n"},
		// Upstream's parseResourceList: huge pages are all allocatable.
		{name: "huge pages", yaml: "systemReserved: {hugepages-2Mi: 2Mi}\n",
			want: `systemReserved[hugepages-2Mi]: Invalid value: "2Mi": cannot reserve "hugepages-2Mi" resource`},
		{name: "unknown", yaml: "kubeReserved: {gpu: \"1\"}\n", want: `kubeReserved[gpu]: Invalid value: "1": cannot reserve "gpu" resource`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+c.yaml))
			err := Validate(cfg, nil)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestValidateEnforceNodeAllocatable: upstream's rules for
// enforceNodeAllocatable and cgroupsPerQOS.
func TestValidateEnforceNodeAllocatable(t *testing.T) {
	tests := []struct {
		name, yaml, want string
	}{
		{"pods", "enforceNodeAllocatable: [pods]\n", ""},
		{"none", "enforceNodeAllocatable: [none]\ncgroupsPerQOS: false\n", ""},
		{"pods without QoS cgroups", "enforceNodeAllocatable: [pods]\ncgroupsPerQOS: false\n",
			`cgroupsPerQOS: Invalid value: false: must be set to true when "pods" contained in enforceNodeAllocatable`},
		{"none and more", "enforceNodeAllocatable: [none, pods]\n", `may not contain additional enforcements when "none" is specified`},
		{"unknown", "enforceNodeAllocatable: [everything]\n", `enforceNodeAllocatable: Invalid value: "everything": valid options are`},
		{"duplicate", "enforceNodeAllocatable: [pods, pods]\n", `enforceNodeAllocatable: Invalid value: "pods": duplicated enforcement`},
		{"system-reserved without cgroup", "enforceNodeAllocatable: [pods, system-reserved]\n", `systemReservedCgroup: Invalid value: "": must be specified`},
		{"kube-reserved with cgroup", "enforceNodeAllocatable: [kube-reserved]\nkubeReservedCgroup: /kube\n", ""},
		{"both forms", "enforceNodeAllocatable: [kube-reserved, kube-reserved-compressible]\nkubeReservedCgroup: /kube\n",
			`"kube-reserved" and "kube-reserved-compressible" cannot be specified together`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+tt.yaml))
			err := Validate(cfg, nil)
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestValidateTLSSettings: the kubelet API's TLS settings are parsed as
// upstream's InitializeTLS parses them, and a value it would fail on is an
// error naming the field.
func TestValidateTLSSettings(t *testing.T) {
	cases := []struct {
		name string
		yaml string
		want string // "": valid
	}{
		{"unset", "", ""},
		{"TLS 1.3", "tlsMinVersion: VersionTLS13\n", ""},
		{"known suites", "tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384]\n", ""},
		{"insecure suite", "tlsCipherSuites: [TLS_RSA_WITH_AES_128_CBC_SHA]\n", ""},
		{"curves", "tlsCurvePreferences: [29, 23]\n", ""},
		{"unknown version", "tlsMinVersion: TLS13\n",
			`tlsMinVersion: Invalid value: "TLS13": unknown tls version "TLS13"; must be one of VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13`},
		{"unknown suite", "tlsCipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_NOPE]\n",
			"tlsCipherSuites: Invalid value: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 TLS_NOPE]: Cipher suite TLS_NOPE not supported or doesn't exist"},
		{"unknown curve", "tlsCurvePreferences: [29, 4242]\n", "tlsCurvePreferences: Invalid value: [29 4242]: curve preference 4242 is not supported"},
		{"duplicate curve", "tlsCurvePreferences: [29, 29]\n", "tlsCurvePreferences: Invalid value: [29 29]: duplicate curve preference 29"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+c.yaml))
			err := Validate(cfg, nil)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("Validate = %v, want no error", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("Validate = %v, want %q", err, c.want)
			}
		})
	}
}

// TestValidatePullCredentialsPolicy follows upstream's validation of
// imagePullCredentialsVerificationPolicy and
// preloadedImagesVerificationAllowlist.
func TestValidatePullCredentialsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		want       string // "": valid
	}{
		{"default", "", ""},
		{"always", "imagePullCredentialsVerificationPolicy: AlwaysVerify\n", ""},
		{"allowlisted", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [registry.example/*, busybox]\n", ""},
		{"unknown policy", "imagePullCredentialsVerificationPolicy: Sometimes\n", `imagePullCredentialsVerificationPolicy: Invalid value: "Sometimes"`},
		{"allowlist without its policy", "preloadedImagesVerificationAllowlist: [busybox]\n", "preloadedImagesVerificationAllowlist: Invalid value: [busybox]: must not be set unless imagePullCredentialsVerificationPolicy is NeverVerifyAllowlistedImages"},
		{"bad pattern", "imagePullCredentialsVerificationPolicy: NeverVerifyAllowlistedImages\npreloadedImagesVerificationAllowlist: [\"busybox:1.36\"]\n", "invalid image pattern: neither tag nor digest is accepted"},
		{"gate off", "featureGates: {KubeletEnsureSecretPulledImages: false}\nimagePullCredentialsVerificationPolicy: AlwaysVerify\n", "must not be set unless feature gate KubeletEnsureSecretPulledImages is enabled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+tc.yaml))
			err := Validate(cfg, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate = %v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestValidateUserNamespaces(t *testing.T) {
	tests := []struct {
		idsPerPod string
		want      string
	}{
		{idsPerPod: "65536"},
		{idsPerPod: "131072"},
		{idsPerPod: "4294901760"},
		{idsPerPod: "0", want: "userNamespaces.idsPerPod: Invalid value: 0: must not be less than 65536"},
		{idsPerPod: "1000", want: "userNamespaces.idsPerPod: Invalid value: 1000: must not be less than 65536"},
		{idsPerPod: "100000", want: "userNamespaces.idsPerPod: Invalid value: 100000: must be a multiple of 65536"},
		{idsPerPod: "4294967296", want: "userNamespaces.idsPerPod: Invalid value: 4294967296: must not be more than 4294967295"},
	}
	for _, tc := range tests {
		t.Run(tc.idsPerPod, func(t *testing.T) {
			file := writeFile(t, t.TempDir(), "kubelet.yaml", header+"userNamespaces: {idsPerPod: "+tc.idsPerPod+"}\n")
			cfg, _ := load(t, "--config", file)
			got := ""
			if err := Validate(cfg, nil); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("Validate = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestValidateShutdownGracePeriods: upstream's rules for the shutdown's
// grace periods, of which the two forms exclude each other.
func TestValidateShutdownGracePeriods(t *testing.T) {
	byPrio := "shutdownGracePeriodByPodPriority:\n- {priority: 0, shutdownGracePeriodSeconds: 10}\n"
	for _, tc := range []struct {
		name, yaml string
		gates      map[string]bool
		want       string
	}{
		{"grace and critical", "shutdownGracePeriod: 30s\nshutdownGracePeriodCriticalPods: 10s\n", nil, ""},
		{"by priority", byPrio, nil, ""},
		{"critical over grace", "shutdownGracePeriod: 10s\nshutdownGracePeriodCriticalPods: 20s\n", nil,
			"shutdownGracePeriodCriticalPods: Invalid value: 20s: must be <= shutdownGracePeriod (10s)"},
		{"under a second", "shutdownGracePeriod: 500ms\n", nil, "shutdownGracePeriod: Invalid value: 500ms: must be either zero or otherwise >= 1 sec"},
		{"both forms", "shutdownGracePeriod: 30s\n" + byPrio, nil,
			"shutdownGracePeriodByPodPriority: Invalid value: 1: Cannot specify both shutdownGracePeriodByPodPriority and shutdownGracePeriod at the same time"},
		{"by priority without its gate", byPrio, map[string]bool{"GracefulNodeShutdownBasedOnPodPriority": false},
			"shutdownGracePeriodByPodPriority: Invalid value: 1: requires feature gate GracefulNodeShutdownBasedOnPodPriority"},
		{"grace without the gate", "shutdownGracePeriod: 30s\n", map[string]bool{"GracefulNodeShutdown": false, "GracefulNodeShutdownBasedOnPodPriority": false},
			"shutdownGracePeriod: Invalid value: 30s: requires feature gate GracefulNodeShutdown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+tc.yaml))
			cfg.FeatureGates = tc.gates
			err := Validate(cfg, nil)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

// TestValidateOperational: upstream's rules for the logging options and
// showHiddenMetricsForVersion.
func TestValidateOperational(t *testing.T) {
	checkValidate(t, []validateCase{
		{yaml: "showHiddenMetricsForVersion: \"1.36\"\n"},
		{yaml: "showHiddenMetricsForVersion: \"1.35\"\n", want: `showHiddenMetricsForVersion: Invalid value: "1.35": must be omitted or have the value '1.36'; only the previous minor version is allowed`},
		{yaml: "showHiddenMetricsForVersion: \"1.37\"\n", want: `showHiddenMetricsForVersion: Invalid value: "1.37": must be omitted or have the value '1.36'; only the previous minor version is allowed`},
		{yaml: "logging: {flushFrequency: 1s}\n"},
		{yaml: "logging: {flushFrequency: -1s}\n", want: "logging.flushFrequency: Invalid value: -1s: Must be greater than zero"},
		{yaml: "logging: {options: {json: {splitStream: true}}}\n", want: "logging.options.json.splitStream: Invalid value: true: Feature LoggingAlphaOptions is disabled"},
		{yaml: "logging: {options: {text: {infoBufferSize: 1Ki}}}\n", want: `logging.options.text.infoBufferSize: Invalid value: "1Ki": Feature LoggingAlphaOptions is disabled`},
		{yaml: "featureGates: {LoggingAlphaOptions: true}\nlogging: {options: {json: {splitStream: true, infoBufferSize: 1Ki}}}\n"},
		{yaml: "enableSystemLogQuery: true\n"},
		{yaml: "enableSystemLogQuery: true\nenableSystemLogHandler: false\n", want: "enableSystemLogQuery: Invalid value: true: enableSystemLogHandler is required for enableSystemLogQuery"},
		{yaml: "configMapAndSecretChangeDetectionStrategy: Cache\n"},
		{yaml: "configMapAndSecretChangeDetectionStrategy: Poll\n", want: `configMapAndSecretChangeDetectionStrategy: Invalid value: "Poll": must be one of "Watch", "Cache", "Get"`},
	})
}

// validateCase is a configuration file's body and the whole error Validate
// gives for it ("": valid).
type validateCase struct{ yaml, want string }

func checkValidate(t *testing.T, cases []validateCase) {
	t.Helper()
	for _, tc := range cases {
		file := writeFile(t, t.TempDir(), "kubelet.yaml", header+tc.yaml)
		cfg, _ := load(t, "--config", file)
		got := ""
		if err := Validate(cfg, nil); err != nil {
			got = err.Error()
		}
		if got != tc.want {
			t.Errorf("%q: Validate = %q, want %q", tc.yaml, got, tc.want)
		}
	}
}

func TestPreviousMinor(t *testing.T) {
	for in, want := range map[string]string{"v1.37.2": "1.36", "1.37": ""} {
		if got := previousMinor(in); got != want {
			t.Errorf("previousMinor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidateDefaultPodSysctls(t *testing.T) {
	const gate = "featureGates: {DefaultPodSysctls: true}\n"
	checkValidate(t, []validateCase{
		{yaml: gate + "defaultPodSysctls: {net.ipv4.ip_unprivileged_port_start: \"0\", kernel/shmmax: \"1\"}\n"},
		{yaml: "defaultPodSysctls: {net.ipv4.ip_unprivileged_port_start: \"0\"}\n",
			want: "defaultPodSysctls: Invalid value: 1: DefaultPodSysctls feature gate is required for Kubelet configuration option defaultPodSysctls"},
		{yaml: gate + "defaultPodSysctls: {Net.x: \"0\"}\n", want: `defaultPodSysctls: Invalid value: "Net.x": "Net.x" is not a valid sysctl name for defaultPodSysctls`},
		{yaml: gate + "defaultPodSysctls: {vm.swappiness: \"0\"}\n", want: `defaultPodSysctls: Invalid value: "vm.swappiness": "vm.swappiness" is not known to be namespaced for defaultPodSysctls`},
		{yaml: gate + "defaultPodSysctls: {kernel.shmmax: \"1\", kernel/shmmax: \"2\"}\n", want: `defaultPodSysctls: Invalid value: "kernel/shmmax": duplicate sysctl "kernel.shmmax" found in defaultPodSysctls`},
	})
}

func TestValidateReservedMemory(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+`reservedMemory:
- numaNode: 0
  limits: {memory: 1Gi, cpu: "1"}
- numaNode: 0
  limits: {memory: 1Gi, hugepages-2Mi: "0"}
- numaNode: 1
  limits: {memory: 1Gi, hugepages-1Gi: 1Gi}
`)
	cfg, _ := load(t, "--config", file)
	err := Validate(cfg, nil)
	want := []string{
		`reservedMemory[0].limits[cpu]: Invalid value: "1": the limit type "cpu" for NUMA node 0 is not supported, only [memory hugepages-<HugePageSize>] is accepted`,
		`reservedMemory[1].limits[hugepages-2Mi]: Invalid value: "0": reserved memory may not be zero for NUMA node 0 and resource "hugepages-2Mi"`,
		`reservedMemory[1].limits[memory]: Invalid value: "1Gi": the reserved memory has a duplicate value for NUMA node 0 and resource "memory"`,
	}
	if err == nil {
		t.Fatal("valid")
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("validation error lacks %q:\n%v", w, err)
		}
	}
	if got := len(strings.Split(err.Error(), "\n")); got != len(want) {
		t.Errorf("%d problems, want %d:\n%v", got, len(want), err)
	}
}

// TestValidateResourceFields checks the resource fields' rules, upstream's
// ValidateKubeletConfiguration and validateKubeletOSConfiguration.
func TestValidateResourceFields(t *testing.T) {
	for _, tc := range []struct {
		name  string
		yaml  string
		gates map[string]bool
		want  string // "" valid
	}{
		{"custom period with its gate", "cpuCFSQuotaPeriod: 10ms\n", nil, ""},
		{"custom period without its gate", "cpuCFSQuotaPeriod: 10ms\n", map[string]bool{"CustomCPUCFSQuotaPeriod": false},
			"cpuCFSQuotaPeriod: Invalid value: 10ms: requires feature gate CustomCPUCFSQuotaPeriod"},
		{"period too long", "cpuCFSQuotaPeriod: 2s\n", nil, "cpuCFSQuotaPeriod: Invalid value: 2s: must be between 1ms and 1sec, inclusive"},
		{"period too short", "cpuCFSQuotaPeriod: 500us\n", nil, "must be between 1ms and 1sec, inclusive"},
		{"qosReserved memory", "qosReserved: {memory: 50%}\n", nil, ""},
		{"qosReserved cpu", "qosReserved: {cpu: 50%}\n", nil, `cannot reserve "cpu" resource`},
		{"qosReserved not a percentage", "qosReserved: {memory: 1Gi}\n", nil, `failed to parse percentage "1Gi" for "memory" resource: percentage expected, got '1Gi'`},
		{"memoryThrottlingFactor with MemoryQoS", "memoryThrottlingFactor: 0.8\n", nil, ""},
		{"memoryThrottlingFactor without MemoryQoS", "memoryThrottlingFactor: 0.8\n", map[string]bool{"MemoryQoS": false},
			"memoryThrottlingFactor: Invalid value: 0.8: must not be set when MemoryQoS feature gate is disabled"},
		{"the former default without MemoryQoS", "memoryThrottlingFactor: 0.9\n", map[string]bool{"MemoryQoS": false}, ""},
		{"swapBehavior", "memorySwap: {swapBehavior: LimitedSwap}\n", nil, ""},
		{"bad swapBehavior", "memorySwap: {swapBehavior: UnlimitedSwap}\n", nil, `memorySwap.swapBehavior: Invalid value: "UnlimitedSwap": must be one of "", "NoSwap", "LimitedSwap"`},
		{"systemCgroups without cgroupRoot", "systemCgroups: /system\n", nil, "systemCgroups"},
		{"maxOpenFiles negative", "maxOpenFiles: -1\n", nil, "maxOpenFiles: Invalid value: -1: must not be negative"},
	} {
		cfg, _ := load(t, "--config", writeFile(t, t.TempDir(), "k.yaml", header+tc.yaml))
		if cfg.FeatureGates == nil {
			cfg.FeatureGates = map[string]bool{}
		}
		maps.Copy(cfg.FeatureGates, tc.gates)
		err := Validate(cfg, nil)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestValidateOnHost(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		set      *bool
		cgroupV1 bool
		wantErr  bool
	}{
		{nil, true, false}, {&yes, true, false}, {&no, true, true}, {&no, false, false},
	} {
		cfg, _ := load(t)
		cfg.SingleProcessOOMKill = tc.set
		cfg.FailCgroupV1 = &no
		err := ValidateOnHost(cfg, tc.cgroupV1)
		if (err != nil) != tc.wantErr {
			t.Errorf("singleProcessOOMKill %v on v1 %v: %v", tc.set, tc.cgroupV1, err)
		}
		if err != nil && err.Error() != "singleProcessOOMKill: Invalid value: false: must not be explicitly set to false when using cgroup v1" {
			t.Errorf("message: %v", err)
		}
	}
}

func TestValidateOnHostFailCgroupV1(t *testing.T) {
	no, yes := false, true
	for _, tc := range []struct {
		set      *bool
		cgroupV1 bool
		wantErr  bool
	}{
		{nil, true, true}, {&yes, true, true}, {&no, true, false},
		{nil, false, false}, {&yes, false, false}, {&no, false, false},
	} {
		cfg, _ := load(t)
		cfg.FailCgroupV1 = tc.set
		err := ValidateOnHost(cfg, tc.cgroupV1)
		if (err != nil) != tc.wantErr {
			t.Errorf("failCgroupV1 %v on v1 %v: %v", tc.set, tc.cgroupV1, err)
		}
		if err != nil && err.Error() != FailCgroupV1Message {
			t.Errorf("message: %v", err)
		}
	}
}
