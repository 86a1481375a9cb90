package registry

import (
	"slices"
	"testing"
)

// TestRegistry: drivers are set, replaced by name, listed sorted, deleted
// and reset; what a reader gets is its own copy.
func TestRegistry(t *testing.T) {
	r := New()
	r.Set(Driver{Name: "b.csi", Endpoint: "/b.sock", Versions: []string{"1.0.0"}, HighestVersion: "1.0.0"})
	r.Set(Driver{Name: "a.csi", Endpoint: "/a.sock", Versions: []string{"1.2.0"}, HighestVersion: "1.2.0"})
	r.Set(Driver{Name: "b.csi", Endpoint: "/b2.sock", Versions: []string{"1.5.0"}, HighestVersion: "1.5.0"})
	var names []string
	for _, d := range r.Drivers() {
		names = append(names, d.Name+"="+d.Endpoint)
	}
	if want := []string{"a.csi=/a.sock", "b.csi=/b2.sock"}; !slices.Equal(names, want) {
		t.Errorf("Drivers() = %v, want %v", names, want)
	}
	d, ok := r.Driver("a.csi")
	if !ok || d.HighestVersion != "1.2.0" {
		t.Fatalf("Driver(a.csi) = %+v, %v", d, ok)
	}
	d.Versions[0] = "changed"
	if d, _ := r.Driver("a.csi"); d.Versions[0] != "1.2.0" {
		t.Errorf("a reader's copy changed the registry: %v", d.Versions)
	}
	r.Delete("a.csi")
	if _, ok := r.Driver("a.csi"); ok {
		t.Error("a.csi still registered after Delete")
	}
	r.Reset()
	if n := len(r.Drivers()); n != 0 {
		t.Errorf("%d drivers after Reset", n)
	}
}
