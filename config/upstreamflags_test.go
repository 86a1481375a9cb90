package config

import (
	_ "embed"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// upstreamFlagList is upstream kubelet v1.37.2's flag set, generated from
// upstream's own code by hack/kube/kubeletflags (make upstream-flags).
//
//go:embed testdata/upstream-kubelet-flags.json
var upstreamFlagList []byte

type upstreamFlag struct {
	Name        string `json:"name"`
	Shorthand   string `json:"shorthand"`
	Type        string `json:"type"`
	Default     string `json:"default"`
	NoOptDefVal string `json:"noOptDefVal"`
	Deprecated  string `json:"deprecated"`
	Hidden      bool   `json:"hidden"`
}

// actorletOnlyFlags are the flags actorlet has that upstream v1.37.2 has
// not, and whether --help hides them.
var actorletOnlyFlags = map[string]bool{
	"debug-address":         false,
	"debug-fault-injection": false,
	"dump-config":           false,
	// Removed upstream; accepted because older kubeadm wrote it.
	"pod-infra-container-image": true,
}

func upstreamFlags(t *testing.T) []upstreamFlag {
	t.Helper()
	var list struct{ Flags []upstreamFlag }
	if err := json.Unmarshal(upstreamFlagList, &list); err != nil {
		t.Fatalf("testdata/upstream-kubelet-flags.json: %v", err)
	}
	if len(list.Flags) == 0 {
		t.Fatal("testdata/upstream-kubelet-flags.json lists no flags")
	}
	return list.Flags
}

// TestFlagSetIsUpstreams compares actorlet's flag set with upstream
// kubelet v1.37.2's: every upstream flag, spelled, typed and defaulted as
// upstream, deprecated and hidden as upstream, and no other flag but
// actorlet's own.
func TestFlagSetIsUpstreams(t *testing.T) {
	c, err := ParseCommandLine(nil)
	if err != nil {
		t.Fatal(err)
	}
	help := c.Help()
	upstream := map[string]bool{}
	for _, u := range upstreamFlags(t) {
		upstream[u.Name] = true
		f := c.Flags.Lookup(u.Name)
		if f == nil {
			t.Errorf("--%s: upstream's flag is missing", u.Name)
			continue
		}
		for _, d := range []struct{ what, got, want string }{
			{"shorthand", f.Shorthand, u.Shorthand},
			{"type", f.Value.Type(), u.Type},
			{"default", f.DefValue, u.Default},
			{"value without an argument (NoOptDefVal)", f.NoOptDefVal, u.NoOptDefVal},
			{"deprecation", f.Deprecated, u.Deprecated},
		} {
			if d.got != d.want {
				t.Errorf("--%s: %s %q, upstream's is %q", u.Name, d.what, d.got, d.want)
			}
		}
		if f.Hidden != u.Hidden {
			t.Errorf("--%s: hidden %t, upstream's is %t", u.Name, f.Hidden, u.Hidden)
		}
		// pflag writes "--name type" or, for a boolean, "--name[=true|false]".
		listed := strings.Contains(help, "--"+u.Name+" ") || strings.Contains(help, "--"+u.Name+"[")
		if listed == u.Hidden {
			t.Errorf("--%s: listed in --help %t, want %t", u.Name, listed, !u.Hidden)
		}
	}
	c.Flags.VisitAll(func(f *pflag.Flag) {
		if upstream[f.Name] {
			return
		}
		hidden, ok := actorletOnlyFlags[f.Name]
		if !ok {
			t.Errorf("--%s: not an upstream flag, nor one of actorlet's own", f.Name)
		} else if f.Hidden != hidden {
			t.Errorf("--%s: hidden %t, want %t", f.Name, f.Hidden, hidden)
		}
	})
}

// sampleValues are valid values for the upstream flags, by name, then by type.
var sampleValues = map[string]string{
	"feature-gates":        "NodeSwap=true",
	"eviction-hard":        "memory.available<1Gi",
	"eviction-soft":        "memory.available<2Gi",
	"manifest-url-header":  "a:b",
	"register-with-taints": "k=v:NoSchedule",
	"reserved-memory":      "0:memory=1Gi",
	"address":              "127.0.0.1",
	"healthz-bind-address": "127.0.0.1",
	"vmodule":              "a=1",
	"help":                 "false",
	"version":              "false",
	"config":               "",
	"config-dir":           "",
	"authorization-mode":   "Webhook",
	// By type.
	"bool":            "true",
	"duration":        "3s",
	"int32":           "3",
	"int64":           "3",
	"Level":           "2",
	"quantity":        "1Ki",
	"string":          "x",
	"stringSlice":     "a,b",
	"mapStringString": "a=b",
}

func sample(u upstreamFlag) string {
	if v, ok := sampleValues[u.Name]; ok {
		return v
	}
	return sampleValues[u.Type]
}

// TestEveryUpstreamFlagAccepted gives every upstream flag at once, with a
// valid value, and loads the configuration: nothing is refused, each
// deprecated flag gets upstream's line once, and the flags actorlet does not
// act on are named in one warning.
func TestEveryUpstreamFlagAccepted(t *testing.T) {
	var args []string
	flags := upstreamFlags(t)
	for _, u := range flags {
		args = append(args, "--"+strings.ReplaceAll(u.Name, "-", "_")+"="+sample(u))
	}
	c, err := ParseCommandLine(args)
	if err != nil {
		t.Fatalf("upstream's flags refused: %v", err)
	}
	_, warnings, err := Load(c)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	var notImplemented []string
	for _, w := range warnings {
		if rest, ok := strings.CutPrefix(w, "accepted, not implemented: "); ok {
			notImplemented = append(notImplemented, rest)
		}
	}
	if len(notImplemented) != 1 {
		t.Fatalf("%d not-implemented warnings, want one: %q", len(notImplemented), warnings)
	}
	named := map[string]bool{}
	for _, item := range strings.Split(notImplemented[0], ", ") {
		name, _, _ := strings.Cut(item, " ")
		named[strings.TrimPrefix(name, "--")] = true
	}
	for _, u := range flags {
		if u.Deprecated != "" {
			line := "Flag --" + u.Name + " has been deprecated, " + u.Deprecated
			if n := countWarnings(warnings, line); n != 1 {
				t.Errorf("--%s: deprecation line printed %d times, want once", u.Name, n)
			}
		}
		if want := flagNotImplemented(u.Name); named[u.Name] != want {
			t.Errorf("--%s: named as not implemented %t, want %t", u.Name, named[u.Name], want)
		}
	}
}

// flagNotImplemented tells whether the flag name sets something actorlet
// does not act on.
func flagNotImplemented(name string) bool {
	for _, f := range configFlags {
		if f.name == name {
			return !IsImplemented(f.field)
		}
	}
	for _, f := range acceptedFlags {
		if f.name == name {
			return true
		}
	}
	return false
}

func countWarnings(warnings []string, line string) int {
	n := 0
	for _, w := range warnings {
		if w == line {
			n++
		}
	}
	return n
}

// TestNewConfigFlagsTakeEffect checks that flags added for upstream's list
// set their KubeletConfiguration field, over a --config file as any
// explicit flag does.
func TestNewConfigFlagsTakeEffect(t *testing.T) {
	file := writeFile(t, t.TempDir(), "kubelet.yaml", header+"enableServer: true\ncpuManagerPolicy: none\nlogging: {flushFrequency: 7s}\n")
	for _, tc := range []struct {
		flag, path, want string
	}{
		{"--enable-server=false", "enableServer", "false"},
		{"--cpu-manager-policy=static", "cpuManagerPolicy", "static"},
		{"--log-flush-frequency=2s", "logging.flushFrequency", "2s"},
		{"--pod-max-pids=42", "podPidsLimit", "42"},
		{"--cpu-cfs-quota-period=50ms", "cpuCFSQuotaPeriod", "50ms"},
		{"--tls-cipher-suites=A,B", "tlsCipherSuites", "[A B]"},
		{"--manifest-url-header=a:b,a:c", "staticPodURLHeader", "map[a:[b c]]"},
		{"--cpu-manager-policy-options=full-pcpus-only=true", "cpuManagerPolicyOptions", "map[full-pcpus-only:true]"},
		{"--reserved-memory=0:memory=1Gi", "reservedMemory", "[map[limits:map[memory:1Gi] numaNode:0]]"},
		{"--log-text-info-buffer-size=1Ki", "logging.options.text.infoBufferSize", "1Ki"},
		{"--vmodule=a=2", "logging.vmodule", "[map[filePattern:a verbosity:2]]"},
	} {
		for _, args := range [][]string{{tc.flag}, {"--config", file, tc.flag}} {
			cfg, _ := load(t, args...)
			if got := lookup(t, cfg, tc.path); got != tc.want {
				t.Errorf("%q: %s = %q, want %q", args, tc.path, got, tc.want)
			}
		}
	}
}

// TestFlagWarnings checks what a few flags say: upstream's deprecation line,
// and the one not-implemented line.
func TestFlagWarnings(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"implemented, undeprecated", []string{"--v=2", "--provider-id=x"}, nil},
		{"implemented, deprecated", []string{"--max-pods=10", "--max_pods=11"}, []string{
			"Flag --max-pods has been deprecated, " + configFlagDeprecated}},
		{"command line only, not implemented", []string{"--lock-file=/run/lock", "--seccomp-default"}, []string{
			"accepted, not implemented: --lock-file"}},
		{"deprecated, not implemented", []string{"--maximum-dead-containers=3", "--kernel-memcg-notification"}, []string{
			"Flag --kernel-memcg-notification has been deprecated, " + configFlagDeprecated,
			"Flag --maximum-dead-containers has been deprecated, Use --eviction-hard or --eviction-soft instead. Will be removed in a future version.",
			"accepted, not implemented: --kernel-memcg-notification (kernelMemcgNotification), --maximum-dead-containers"}},
		{"a version to report", []string{"--version=v1.37.2"}, []string{
			"accepted, not implemented: --version (a reported version other than actorlet's)"}},
	} {
		c, err := ParseCommandLine(tc.args)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got := c.Warnings(); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
			t.Errorf("%s: warnings\n%q\nwant\n%q", tc.name, got, tc.want)
		}
	}
	for _, bad := range [][]string{{"--exit-on-lock-contention=maybe"}, {"--housekeeping-interval=10"}, {"--maximum-dead-containers=x"}, {"--version=maybe"}, {"--reserved-memory=0:cpu=1"}} {
		if _, err := ParseCommandLine(bad); err == nil {
			t.Errorf("%q accepted, want an error", bad)
		}
	}
}
