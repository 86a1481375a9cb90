package features

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	m, err := Parse("QOSReserved=true, EventedPLEG=false,")
	if err != nil || !m["QOSReserved"] || m["EventedPLEG"] || len(m) != 2 {
		t.Errorf("Parse = %v, %v", m, err)
	}
	for value, want := range map[string]string{
		"NoSuchGate=true":   "unrecognized feature gate: NoSuchGate",
		"QOSReserved=maybe": "invalid value of QOSReserved=maybe, err: ",
		"QOSReserved":       "missing bool value for QOSReserved",
	} {
		if _, err := Parse(value); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Parse(%q) = %v, want %q", value, err, want)
		}
	}
}

func TestSetFromMap(t *testing.T) {
	for _, tc := range []struct {
		name    string
		set     map[string]bool
		warning string
		err     string
	}{
		{name: "unknown", set: map[string]bool{"NoSuchGate": true}, err: "unrecognized feature gate: NoSuchGate"},
		{name: "locked GA", set: map[string]bool{"NodeSwap": false}, err: "cannot set feature gate NodeSwap to false, feature is locked to true"},
		{name: "unlocked GA off", set: map[string]bool{"SELinuxMount": false}, warning: "setting GA feature gate SELinuxMount=false"},
		{name: "deprecated", set: map[string]bool{"KubeletRegistrationGetOnExistsOnly": true}, warning: "setting deprecated feature gate KubeletRegistrationGetOnExistsOnly=true"},
		{name: "beta", set: map[string]bool{"MemoryQoS": false}},
	} {
		g := New()
		warnings, err := g.SetFromMap(tc.set)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if tc.warning == "" && len(warnings) > 0 || tc.warning != "" && (len(warnings) != 1 || !strings.Contains(warnings[0], tc.warning)) {
			t.Errorf("%s: warnings = %q, want %q", tc.name, warnings, tc.warning)
		}
		for k, v := range tc.set {
			if g.Enabled(k) != v {
				t.Errorf("%s: %s = %t after setting %t", tc.name, k, g.Enabled(k), v)
			}
		}
	}
}

func TestFailedSetLeavesGatesUnchanged(t *testing.T) {
	g := New()
	if _, err := g.SetFromMap(map[string]bool{"QOSReserved": true, "NodeSwap": false}); err == nil {
		t.Fatal("locked gate accepted")
	}
	if g.Enabled("QOSReserved") {
		t.Error("a failed SetFromMap changed the gates")
	}
}

func TestLaterSettingsWinAndRepeatsDoNotWarnTwice(t *testing.T) {
	g := New()
	if _, err := g.SetFromMap(map[string]bool{"QOSReserved": true, "SELinuxMount": false}); err != nil {
		t.Fatal(err)
	}
	warnings, err := g.SetFromMap(map[string]bool{"QOSReserved": false, "SELinuxMount": false})
	if err != nil {
		t.Fatal(err)
	}
	if g.Enabled("QOSReserved") || len(warnings) != 0 {
		t.Errorf("QOSReserved %t, warnings %q", g.Enabled("QOSReserved"), warnings)
	}
}

func TestAllAlphaAllBeta(t *testing.T) {
	g := New()
	if _, err := g.SetFromMap(map[string]bool{AllAlpha: true, "QOSReserved": false, AllBeta: false}); err != nil {
		t.Fatal(err)
	}
	if !g.Enabled("EventedPLEG") || g.Enabled("QOSReserved") || g.Enabled("MemoryQoS") || !g.Enabled("NodeSwap") {
		t.Errorf("EventedPLEG %t (alpha, want true), QOSReserved %t (explicit false), MemoryQoS %t (beta, want false), NodeSwap %t (GA, want true)",
			g.Enabled("EventedPLEG"), g.Enabled("QOSReserved"), g.Enabled("MemoryQoS"), g.Enabled("NodeSwap"))
	}
}

func TestRegistryMatchesUpstream(t *testing.T) {
	for name, want := range map[string]Spec{
		"KubeletCrashLoopBackOffMax":         {Default: true, Stage: Beta},
		"GracefulNodeShutdown":               {Default: true, Stage: Beta},
		"KubeletTracing":                     {Default: true, Stage: GA, LockToDefault: true},
		"PodReadyToStartContainersCondition": {Default: true, Stage: GA, LockToDefault: true},
		"ContextualLogging":                  {Default: true, Stage: Beta},
		AllAlpha:                             {Default: false, Stage: Alpha},
	} {
		if got, ok := Known[name]; !ok || got != want {
			t.Errorf("Known[%s] = %+v, %t; want %+v", name, got, ok, want)
		}
	}
	g := New()
	if !g.Enabled("KubeletCrashLoopBackOffMax") || g.Enabled("EventedPLEG") {
		t.Error("defaults not applied")
	}
	if !strings.Contains(strings.Join(g.KnownFeatures(), "\n"), "QOSReserved=true|false (ALPHA - default=false)") {
		t.Error("KnownFeatures lacks QOSReserved")
	}
}
