package csi_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
)

// TestNodeGetVolumeStats checks how a driver's usage maps to the figures,
// as upstream's NodeGetVolumeStats: BYTES to the bytes, INODES to the
// inodes, a missing unit zero, no usage at all an error.
func TestNodeGetVolumeStats(t *testing.T) {
	bytes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_BYTES, Total: 100, Available: 60, Used: 40}
	inodes := &csipb.VolumeUsage{Unit: csipb.VolumeUsage_INODES, Total: 10, Available: 7, Used: 3}
	cases := []struct {
		name    string
		usage   []*csipb.VolumeUsage
		want    csi.VolumeStats
		wantErr bool
	}{
		{name: "bytes and inodes", usage: []*csipb.VolumeUsage{bytes, inodes},
			want: csi.VolumeStats{Capacity: 100, Available: 60, Used: 40, Inodes: 10, InodesFree: 7, InodesUsed: 3}},
		{name: "bytes only", usage: []*csipb.VolumeUsage{bytes}, want: csi.VolumeStats{Capacity: 100, Available: 60, Used: 40}},
		{name: "unknown unit ignored", usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_UNKNOWN, Total: 5}, inodes},
			want: csi.VolumeStats{Inodes: 10, InodesFree: 7, InodesUsed: 3}},
		{name: "negative figures are none", usage: []*csipb.VolumeUsage{{Unit: csipb.VolumeUsage_BYTES, Total: 100, Available: -1, Used: 40}},
			want: csi.VolumeStats{Capacity: 100, Used: 40}},
		{name: "no usage", usage: []*csipb.VolumeUsage{}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: "fake.csi", GetVolumeStats: true, VolumeUsage: c.usage}
			dir := t.TempDir()
			p.Serve(t, filepath.Join(dir, "reg.sock"), filepath.Join(dir, "csi.sock"))
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			caps, err := csi.NodeGetCapabilities(ctx, p.Endpoint)
			if err != nil || !caps.GetVolumeStats {
				t.Fatalf("capabilities %+v, %v: want GET_VOLUME_STATS", caps, err)
			}
			got, err := csi.NodeGetVolumeStats(ctx, p.Endpoint, "vol-1", "/target")
			if (err != nil) != c.wantErr {
				t.Fatalf("error %v, want one: %v", err, c.wantErr)
			}
			if got != c.want {
				t.Errorf("figures %+v, want %+v", got, c.want)
			}
			if calls := p.StatsCalls(); len(calls) != 1 || calls[0].VolumeID != "vol-1" || calls[0].Path != "/target" {
				t.Errorf("calls %+v, want one for vol-1 at /target", calls)
			}
		})
	}
}
