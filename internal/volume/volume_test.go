package volume

import (
	"context"
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
		{"image", v1.VolumeSource{Image: &v1.ImageVolumeSource{Reference: "registry.k8s.io/e2e-test-images/kitten:1.8"}},
			"image volumes are mounted by the container runtime"},
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
