package volume

import (
	"context"
	"os"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSetUpRefuses checks the reason a pod is told for a volume this node
// cannot set up: what is missing, not a driver it does not need.
func TestSetUpRefuses(t *testing.T) {
	tests := []struct {
		name    string
		src     v1.VolumeSource
		wantErr string
	}{
		{"nfs", v1.VolumeSource{NFS: &v1.NFSVolumeSource{Server: "nfs", Path: "/"}},
			"volume type nfs is not supported by this node: it needs an attach or a CSI driver"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &Host{RootDir: t.TempDir()}
			_, err := h.SetUp(context.Background(), &v1.Pod{}, &v1.Volume{Name: "v", VolumeSource: tt.src})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("SetUp: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestSetUpImage: an image volume is nothing on the host, as upstream's
// image plugin; the runtime mounts its image, always read-only.
func TestSetUpImage(t *testing.T) {
	root := t.TempDir()
	h := &Host{RootDir: root}
	pod := &v1.Pod{}
	pod.UID = "uid"
	ref := "registry.k8s.io/e2e-test-images/kitten:1.8"
	got, err := h.SetUp(context.Background(), pod, &v1.Volume{Name: "v", VolumeSource: v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: ref}}})
	if err != nil {
		t.Fatal(err)
	}
	if want := (Mounted{Name: "v", Image: ref, ReadOnly: true}); got != want {
		t.Errorf("SetUp: %+v, want %+v", got, want)
	}
	if entries, err := os.ReadDir(root); err != nil || len(entries) != 0 {
		t.Errorf("the root directory holds %v (%v), want nothing", entries, err)
	}
}
