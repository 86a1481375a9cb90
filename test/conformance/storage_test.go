package conformance

import "testing"

func TestNeedsStorageDriver(t *testing.T) {
	ext := "External Storage [Driver: hostpath.csi.actorlet.example.com] [Testpattern: Dynamic PV (default fs)] volumes should store data"
	for _, tc := range []struct {
		name  string
		specs []string
		want  bool
	}{
		{"none", nil, false},
		{"node specs", []string{"[sig-node] Pods should be submitted and removed [NodeConformance] [Conformance]"}, false},
		{"an external storage spec", []string{"[sig-node] Pods x", ext}, true},
		{"the in-tree csi-hostpath driver", []string{"[sig-storage] CSI Volumes [Driver: csi-hostpath] [Testpattern: Dynamic PV (default fs)] volumes should store data"}, false},
	} {
		if got := NeedsStorageDriver(tc.specs); got != tc.want {
			t.Errorf("%s: NeedsStorageDriver = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestStorageSpecs: every spec of storage.txt runs against the driver the
// run installs, so the run installs it.
func TestStorageSpecs(t *testing.T) {
	specs, err := ReadSpecs("storage.txt")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range specs {
		if !NeedsStorageDriver([]string{s}) {
			t.Errorf("storage.txt: %q is not an External Storage spec", s)
		}
	}
}
