package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/config/features"
)

func TestUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, `unknown command "foo"`},
		{[]string{"--max-pods=3", "run", "now"}, `unknown command "run"`},
		{[]string{"--no-such-flag"}, "unknown flag: --no-such-flag"},
		{[]string{"--max-pods=many"}, `invalid argument "many" for "--max-pods" flag`},
		{[]string{"--address=nowhere"}, `"nowhere" is not a valid IP address`},
		{[]string{"--register-with-taints=a=b:Sometimes"}, `invalid taint effect "Sometimes"`},
		{[]string{"--feature-gates=NoSuchGate=true", "--dump-config"}, "unrecognized feature gate: NoSuchGate"},
		{[]string{"--feature-gates=QOSReserved=maybe"}, "invalid value of QOSReserved=maybe"},
	} {
		_, err := ParseCommandLine(tc.args)
		var ue *UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: error %v is not a *UsageError", tc.args, err)
			continue
		}
		if !strings.Contains(ue.Error(), tc.want) {
			t.Errorf("%q: error %q does not contain %q", tc.args, ue.Error(), tc.want)
		}
		if !strings.HasPrefix(ue.Usage, "Usage:\n  actorlet [flags]\n") || !strings.Contains(ue.Usage, "--max-pods") {
			t.Errorf("%q: usage text is %q", tc.args, ue.Usage)
		}
	}
}

func TestHelpAndShortCircuitFlags(t *testing.T) {
	c, err := ParseCommandLine([]string{"-h", "--version", "--dump-config", "--debug-fault-injection", "--seccomp-default", "--pod-infra-container-image=pause:3"})
	if err != nil {
		t.Fatal(err)
	}
	o := c.Options
	if !o.ShowHelp || !o.ShowVersion || !o.DumpConfig || !o.DebugFaultInjection || !o.SeccompDefault || o.PodInfraContainerImage != "pause:3" {
		t.Errorf("options = %+v", o)
	}
	help := c.Help()
	for _, want := range []string{"actorlet is a Kubernetes node agent", "Usage:\n  actorlet [flags]", "--config-dir", "-v, --v Level", "--feature-gates"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q", want)
		}
	}
	if o.RootDir != "/var/lib/kubelet" || o.CertDir != "/var/lib/kubelet/pki" {
		t.Errorf("directory defaults = %q, %q", o.RootDir, o.CertDir)
	}
}

func TestDefaultSets(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header)
	withFile, _ := load(t, "--config", file)
	legacy, _ := load(t)
	for _, tc := range []struct{ field, v1beta1, legacy string }{
		{"readOnlyPort", "", "10255"},
		{"authentication.anonymous.enabled", "false", "true"},
		{"authentication.webhook.enabled", "true", "false"},
		{"authorization.mode", "Webhook", "AlwaysAllow"},
		{"evictionHard", "map[imagefs.available:15% imagefs.inodesFree:5% memory.available:100Mi nodefs.available:10% nodefs.inodesFree:5%]", ""},
		{"maxPods", "110", "110"},
		{"port", "10250", "10250"},
		{"logging.format", "text", "text"},
		{"crashLoopBackOff.maxContainerRestartPeriod", "5m0s", "5m0s"},
	} {
		if got := lookup(t, withFile, tc.field); got != tc.v1beta1 {
			t.Errorf("with --config: %s = %q, want %q", tc.field, got, tc.v1beta1)
		}
		if got := lookup(t, legacy, tc.field); got != tc.legacy {
			t.Errorf("without --config: %s = %q, want %q", tc.field, got, tc.legacy)
		}
	}
}

func TestRelativePathsResolveAgainstConfigFile(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "kubelet.yaml", header+"staticPodPath: manifests\ntlsCertFile: /abs/cert\n")
	cfg, _ := load(t, "--config", file)
	if cfg.StaticPodPath != filepath.Join(dir, "manifests") || cfg.TLSCertFile != "/abs/cert" {
		t.Errorf("staticPodPath = %q, tlsCertFile = %q", cfg.StaticPodPath, cfg.TLSCertFile)
	}
}

func TestDropIns(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "kubelet.yaml", header+"clusterDNS: [10.0.0.1, 10.0.0.2]\nfeatureGates: {QOSReserved: true}\nmaxPods: 30\nevictionHard: {memory.available: 1Gi}\n")
	d := filepath.Join(dir, "conf.d")
	writeFile(t, d, "10-dns.conf", header+"clusterDNS: [10.0.0.9]\nfeatureGates: {EventedPLEG: true}\nmaxPods: 10\n")
	writeFile(t, d, "20-pods.conf", header+"maxPods: 20\nevictionHard: {nodefs.available: 20%}\n")
	writeFile(t, d, "30-sub/05-first-in-sub.conf", header+"maxPods: 40\n")
	writeFile(t, d, "99-ignored.yaml", "this is not a kubelet configuration")
	writeFile(t, d, "README", "neither is this")

	cfg, _ := load(t, "--config", file, "--config-dir", d)
	for field, want := range map[string]string{
		"clusterDNS":   "[10.0.0.9]",
		"featureGates": "map[EventedPLEG:true QOSReserved:true]",
		"maxPods":      "40",
		"evictionHard": "map[memory.available:1Gi nodefs.available:20%]",
	} {
		if got := lookup(t, cfg, field); got != want {
			t.Errorf("%s = %q, want %q", field, got, want)
		}
	}

	// Without --config the drop-ins merge over the legacy flag defaults.
	legacy, _ := load(t, "--config-dir", d)
	if legacy.ReadOnlyPort != 10255 || legacy.MaxPods != 40 {
		t.Errorf("legacy base: readOnlyPort %d, maxPods %d", legacy.ReadOnlyPort, legacy.MaxPods)
	}

	bad := writeFile(t, dir, "bad.d/50-bad.conf", "apiVersion: v1\nkind: ConfigMap\n")
	_, _, err := tryLoad("--config", file, "--config-dir", filepath.Dir(bad))
	if err == nil || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), `unsupported apiVersion "v1", kind "ConfigMap"`) {
		t.Errorf("drop-in with wrong kind: err = %v", err)
	}
	_, _, err = tryLoad("--config-dir", filepath.Join(dir, "missing"))
	if err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing drop-in directory: err = %v", err)
	}
}

func TestDocumentErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, content, want string
	}{
		{"wrong-version.yaml", "apiVersion: kubelet.config.k8s.io/v1\nkind: KubeletConfiguration\n", `unsupported apiVersion "kubelet.config.k8s.io/v1"`},
		{"wrong-kind.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n", `kind "KubeProxyConfiguration"`},
		{"no-kind.yaml", "maxPods: 3\n", "apiVersion and kind must be set"},
		{"empty.yaml", "\n", "was empty"},
		{"bad-type.yaml", header + "maxPods: lots\n", "failed to decode"},
		{"bad-yaml.yaml", header + "maxPods: [\n", "failed to parse"},
		{"typo.yaml", header + "maxPodz: 3\n", `unknown field "maxPodz"`},
	} {
		path := writeFile(t, dir, tc.name, tc.content)
		_, _, err := tryLoad("--config", path)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: err = %v, want it to name the file and contain %q", tc.name, err, tc.want)
		}
	}
	_, _, err := tryLoad("--config", filepath.Join(dir, "absent.yaml"))
	if err == nil || !strings.Contains(err.Error(), "absent.yaml") {
		t.Errorf("missing file: err = %v", err)
	}
}

func TestUnknownFields(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body, want string
	}{
		{"top-level typo", "maxPodz: 3\n", `unknown field "maxPodz" in %s (did you mean "maxPods"?)`},
		{"wrong case", "MaxPods: 3\n", `unknown field "MaxPods" in %s (did you mean "maxPods"?)`},
		{"transposition", "readOnlyProt: 0\n", `(did you mean "readOnlyPort"?)`},
		{"nested typo", "authentication: {x509: {clientCAFil: /ca}}\n", `unknown field "authentication.x509.clientCAFil" in %s (did you mean "authentication.x509.clientCAFile"?)`},
		{"typo inside a list item", "registerWithTaints: [{key: a, efect: NoSchedule}]\n", `unknown field "registerWithTaints[0].efect"`},
	} {
		path := writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml", header+tc.body)
		_, _, err := tryLoad("--config", path)
		want := tc.want
		if strings.Contains(want, "%s") {
			want = strings.ReplaceAll(want, "%s", path)
		}
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, want)
		}
	}

	path := writeFile(t, dir, "newer.yaml", header+"maxPods: 30\nfooBarBaz: 1\nlogging: {someNewOption: true}\nmemoryManagerPolicy: Static\ntopologyManagerPolicyOptions: {prefer-closest-numa-nodes: x}\nlogging: {format: json, options: {text: {splitStream: true}}}\n")
	cfg, warnings := load(t, "--config", path, "--oom-score-adj=5")
	if cfg.MaxPods != 30 || cfg.Logging.Format != "json" {
		t.Errorf("lenient load lost values: maxPods %d, logging.format %q", cfg.MaxPods, cfg.Logging.Format)
	}
	for _, want := range []string{
		"unknown field: fooBarBaz (in " + path + ")",
		"ignored (not implemented yet): logging.options.text.splitStream",
		"the last of duplicate keys wins",
	} {
		if !containsWarning(warnings, want) {
			t.Errorf("warnings %q lack %q", warnings, want)
		}
	}
	// The memory manager and the topology manager's options are
	// implemented.
	for _, field := range []string{"memoryManagerPolicy", "topologyManagerPolicyOptions"} {
		if containsWarning(warnings, field) {
			t.Errorf("warnings %q name the implemented %s", warnings, field)
		}
	}
	ignoredWarnings := 0
	for _, w := range warnings {
		if strings.HasPrefix(w, "ignored (not implemented yet)") {
			ignoredWarnings++
			if strings.Contains(w, "maxPods") || strings.Contains(w, "logging.format") {
				t.Errorf("implemented field reported as ignored: %q", w)
			}
		}
	}
	if ignoredWarnings != 1 {
		t.Errorf("%d ignored-field warnings, want exactly one: %q", ignoredWarnings, warnings)
	}

	// Defaults alone never produce warnings.
	_, warnings = load(t, "--config", writeFile(t, dir, "plain.yaml", header+"maxPods: 3\n"))
	if len(warnings) != 0 {
		t.Errorf("warnings for a plain file: %q", warnings)
	}

	// Zero values of fields that are not pointers ask for nothing: kubeadm
	// writes them for every unset duration. A pointer's zero (a *bool set
	// to false) and an empty map are choices, and are reported.
	_, warnings = load(t, "--config", writeFile(t, dir, "kubeadm.yaml", header+
		"cpuManagerReconcilePeriod: 0s\nshutdownGracePeriod: 0s\nstreamingConnectionIdleTimeout: 0s\n"+
		"logging: {flushFrequency: 0, options: {json: {infoBufferSize: \"0\"}}}\ncpuManagerPolicy: \"\"\n"))
	if len(warnings) != 0 {
		t.Errorf("warnings for zero values: %q", warnings)
	}
	l := &loader{gates: features.New()}
	if _, err := l.loadFile(writeFile(t, dir, "choices.yaml", header+"cpuCFSQuota: false\nsystemCgroups: \"\"\nqosReserved: {}\n")); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(l.present, "cpuCFSQuota") || !slices.Contains(l.present, "qosReserved") || slices.Contains(l.present, "systemCgroups") {
		t.Errorf("fields set %q: want the choices cpuCFSQuota and qosReserved, not systemCgroups", l.present)
	}
}

func TestFeatureGatesFlagThenFile(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+"featureGates: {EventedPLEG: true, QOSReserved: true}\n")
	c, err := ParseCommandLine([]string{"--config", file, "--feature-gates=QOSReserved=false,NodeSwap=true"})
	if err != nil {
		t.Fatal(err)
	}
	gates, warnings, err := c.FeatureGates()
	if err != nil {
		t.Fatal(err)
	}
	if gates.Enabled("EventedPLEG") || gates.Enabled("QOSReserved") {
		t.Error("gates from the file applied before the file was loaded")
	}
	if !containsWarning(warnings, "GA feature gate NodeSwap=true") {
		t.Errorf("warnings = %q", warnings)
	}
	cfg, _, err := Load(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := gates.SetFromMap(cfg.FeatureGates); err != nil {
		t.Fatal(err)
	}
	if !gates.Enabled("EventedPLEG") || gates.Enabled("QOSReserved") {
		t.Errorf("after reapplying: EventedPLEG %t (want true), QOSReserved %t (want false: the flag wins)", gates.Enabled("EventedPLEG"), gates.Enabled("QOSReserved"))
	}

	bad := writeFile(t, t.TempDir(), "kubelet.yaml", header+"featureGates: {NoSuchGate: true}\n")
	if _, _, err := tryLoad("--config", bad); err == nil || !strings.Contains(err.Error(), "unrecognized feature gate: NoSuchGate") || !strings.Contains(err.Error(), bad) {
		t.Errorf("unknown gate in file: err = %v", err)
	}
}

func TestDumpRoundTrip(t *testing.T) {
	dir := t.TempDir()
	file := writeFile(t, dir, "kubelet.yaml", header+"maxPods: 30\nclusterDNS: [10.0.0.10]\nregisterWithTaints: [{key: a, value: b, effect: NoSchedule}]\nkubeReserved: {cpu: 100m}\nfeatureGates: {QOSReserved: true}\nlogging: {format: json, verbosity: 4}\n")
	cfg, _ := load(t, "--config", file, "--read-only-port=10255")
	out, err := Dump(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(out), "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n") {
		t.Errorf("dump does not start with apiVersion and kind:\n%s", out)
	}
	dumped := writeFile(t, dir, "dumped.yaml", string(out))
	again, _ := load(t, "--config", dumped)
	out2, err := Dump(again)
	if err != nil {
		t.Fatal(err)
	}
	if string(out) != string(out2) {
		t.Errorf("round trip changed the configuration:\n%s\n---\n%s", out, out2)
	}
	if err := Validate(again, nil); err != nil {
		t.Errorf("dumped configuration is invalid: %v", err)
	}
}

func TestMain(m *testing.M) {
	// Relative paths in tests must not depend on where go test runs.
	if err := os.Chdir(os.TempDir()); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// TestDebuggingSwitchesAndDebugAddress: the four debugging switches take
// effect (actors/kubeletapi), so setting them is not warned about, and
// --debug-address is actorlet's own, checked, and not a configuration field.
func TestDebuggingSwitchesAndDebugAddress(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, "debug.yaml", header+"enableDebuggingHandlers: false\nenableSystemLogHandler: false\nenableProfilingHandler: false\nenableContentionProfiling: true\n")
	cfg, warnings := load(t, "--config", path, "--debug-address", "127.0.0.1:10249")
	if *cfg.EnableDebuggingHandlers || *cfg.EnableSystemLogHandler || *cfg.EnableProfilingHandler || !cfg.EnableContentionProfiling {
		t.Errorf("switches not loaded: %v %v %v %v", *cfg.EnableDebuggingHandlers, *cfg.EnableSystemLogHandler,
			*cfg.EnableProfilingHandler, cfg.EnableContentionProfiling)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings for implemented fields: %q", warnings)
	}
	for _, tc := range []struct {
		arg string
		ok  bool
	}{
		{"127.0.0.1:10249", true},
		{"[::1]:10249", true},
		{":10249", true},
		{"127.0.0.1", false},
		{"127.0.0.1:", false},
		{"localhost:10249:1", false},
	} {
		c, err := ParseCommandLine([]string{"--debug-address", tc.arg})
		if tc.ok && (err != nil || c.Options.DebugAddress != tc.arg) {
			t.Errorf("--debug-address %s: %v", tc.arg, err)
		}
		if !tc.ok && (err == nil || !strings.Contains(err.Error(), "--debug-address")) {
			t.Errorf("--debug-address %s: err = %v, want one naming the flag", tc.arg, err)
		}
	}
	c, err := ParseCommandLine(nil)
	if err != nil || c.Options.DebugAddress != "" {
		t.Errorf("--debug-address defaults to %q (%v), want empty: off", c.Options.DebugAddress, err)
	}
}

// TestMergeDefaultEvictionSettings: mergeDefaultEvictionSettings fills the
// signals evictionHard leaves unset with upstream's defaults, and is not
// reported as ignored.
func TestMergeDefaultEvictionSettings(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, body string
		want       map[string]string
	}{
		{"merged", "evictionHard: {memory.available: 200Mi}\nmergeDefaultEvictionSettings: true\n", map[string]string{
			"memory.available": "200Mi", "nodefs.available": "10%", "nodefs.inodesFree": "5%", "imagefs.available": "15%", "imagefs.inodesFree": "5%"}},
		{"not merged", "evictionHard: {memory.available: 200Mi}\nmergeDefaultEvictionSettings: false\n", map[string]string{
			"memory.available": "200Mi"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, warnings := load(t, "--config", writeFile(t, dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml", header+tc.body))
			if len(warnings) != 0 {
				t.Errorf("warnings: %q", warnings)
			}
			if !reflect.DeepEqual(cfg.EvictionHard, tc.want) {
				t.Errorf("evictionHard %v, want %v", cfg.EvictionHard, tc.want)
			}
		})
	}
}
