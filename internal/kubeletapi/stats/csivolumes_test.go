package stats

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
)

// TestSummaryCSIVolumes checks that a CSI volume's figures come from its
// driver's NodeGetVolumeStats, asked with the volume's handle and publish
// target, and that the volume is left out when the driver cannot tell
// them: without GET_VOLUME_STATS, not registered, or hung (then within
// the stats timeout, and asked again only after the period).
func TestSummaryCSIVolumes(t *testing.T) {
	const driver, handle = "fake.csi.example.com", "vol-1"
	usage := []*csipb.VolumeUsage{
		{Unit: csipb.VolumeUsage_BYTES, Total: 10 << 30, Available: 7 << 30, Used: 3 << 30},
		{Unit: csipb.VolumeUsage_INODES, Total: 1000, Available: 900, Used: 100},
	}
	cases := []struct {
		name         string
		caps, hang   bool
		registered   bool
		wantListed   bool
		wantRequests int // NodeGetVolumeStats calls of two requests within a period
	}{
		{name: "capability on", caps: true, registered: true, wantListed: true, wantRequests: 1},
		{name: "capability off", caps: false, registered: true},
		{name: "driver not registered", caps: true, registered: false},
		{name: "hung driver", caps: true, hang: true, registered: true, wantRequests: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := newTestNode(t)
			dir := filepath.Join(n.p.RootDir, "pods", "uid-a", "volumes", "kubernetes.io~csi", "data")
			volData, err := json.Marshal(map[string]string{"driverName": driver, "volumeHandle": handle, "specVolID": "data"})
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, "vol_data.json"), string(volData))
			writeFile(t, filepath.Join(dir, "mount", "file"), "on the driver's volume")

			plugin := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: driver, Versions: []string{"1.0.0"},
				GetVolumeStats: c.caps, VolumeUsage: usage, HangVolumeStats: c.hang}
			sock := t.TempDir()
			plugin.Serve(t, filepath.Join(sock, "reg.sock"), filepath.Join(sock, "csi.sock"))
			reg := registry.New()
			if c.registered {
				reg.Set(registry.Driver{Name: driver, Endpoint: plugin.Endpoint, HighestVersion: "1.0.0"})
			}
			n.p.CSIDrivers = reg
			n.p.csiStatsTimeout = 300 * time.Millisecond

			request := func() (statsapi.VolumeStats, bool) {
				t.Helper()
				start := time.Now()
				s, err := n.p.Summary(context.Background(), false)
				if err != nil {
					t.Fatal(err)
				}
				if d := time.Since(start); d > 10*time.Second {
					t.Errorf("summary took %v: the driver's call is not bounded", d)
				}
				for _, p := range s.Pods {
					if p.PodRef.UID != "uid-a" {
						continue
					}
					for _, v := range p.VolumeStats {
						if v.Name == "data" {
							return v, true
						}
					}
				}
				return statsapi.VolumeStats{}, false
			}
			v, listed := request()
			if listed != c.wantListed {
				t.Fatalf("volume listed %v, want %v (%+v)", listed, c.wantListed, v)
			}
			n.clock.Advance(30 * time.Second)
			if _, again := request(); again != listed {
				t.Errorf("within the period listed %v, then %v", listed, again)
			}
			if got := len(plugin.StatsCalls()); got != c.wantRequests {
				t.Errorf("%d NodeGetVolumeStats calls for two requests within a period, want %d", got, c.wantRequests)
			}
			if !c.wantListed {
				return
			}
			call := plugin.StatsCalls()[0]
			checks := []struct {
				what      string
				got, want any
			}{
				{"volume id", call.VolumeID, handle},
				{"volume path", call.Path, filepath.Join(dir, "mount")},
				{"no staging path, as upstream", call.StagingPath, ""},
				{"capacity", val(v.CapacityBytes), uint64(10 << 30)},
				{"available", val(v.AvailableBytes), uint64(7 << 30)},
				{"used (the driver's, not du's)", val(v.UsedBytes), uint64(3 << 30)},
				{"inodes", val(v.Inodes), uint64(1000)},
				{"inodes free", val(v.InodesFree), uint64(900)},
				{"inodes used", val(v.InodesUsed), uint64(100)},
				{"time", v.Time.Time, timeAt(200)},
			}
			for _, ch := range checks {
				if !equal(ch.got, ch.want) {
					t.Errorf("%s: %v, want %v", ch.what, ch.got, ch.want)
				}
			}
		})
	}
}
