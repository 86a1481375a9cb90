package conformance

import (
	"strings"
	"testing"
)

func TestNeedsDRA(t *testing.T) {
	for _, tc := range []struct {
		name  string
		specs []string
		want  bool
	}{
		{"none", nil, false},
		{"node specs", []string{"[sig-node] Pods should be submitted and removed [NodeConformance] [Conformance]"}, false},
		{"a DRA spec", []string{"[sig-node] Pods x", "[sig-node] [DRA] kubelet [Feature:DynamicResourceAllocation] registers plugin"}, true},
		{"a DRA device plugin spec elsewhere", []string{"[sig-node] Device Plugin [DRA] x"}, false},
	} {
		if got := NeedsDRA(tc.specs); got != tc.want {
			t.Errorf("%s: NeedsDRA = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDRASpecs: every spec of dra.txt is one of e2e.test's DRA specs, so
// that the run starts their controllers.
func TestDRASpecs(t *testing.T) {
	specs, err := ReadSpecs("dra.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if !strings.HasPrefix(s, draPrefix) {
			t.Errorf("dra.txt: %q is not a DRA spec", s)
		}
	}
}
