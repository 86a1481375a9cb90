package volume

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = 1 // not sparse
	}
	localMust(t, os.Mkdir(filepath.Join(dir, "sub"), 0o755))
	localMust(t, os.WriteFile(filepath.Join(dir, "sub/big"), big, 0o644))
	localMust(t, os.Link(filepath.Join(dir, "sub/big"), filepath.Join(dir, "hardlink")))
	localMust(t, os.WriteFile(filepath.Join(dir, "empty"), nil, 0o644))
	localMust(t, os.Symlink("sub/big", filepath.Join(dir, "symlink")))

	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// dir, sub, big (its hard link counted once), empty, symlink.
	if u.Inodes != 5 {
		t.Fatalf("inodes %d, want 5", u.Inodes)
	}
	if u.Bytes < 64<<10 || u.Bytes >= 2*64<<10+64<<10 {
		t.Fatalf("bytes %d, want the big file once plus directories", u.Bytes)
	}
	if _, err := DiskUsage(filepath.Join(dir, "nowhere")); !os.IsNotExist(err) {
		t.Fatalf("missing directory: %v", err)
	}
}

func TestDiskUsageStaysOnItsFilesystem(t *testing.T) {
	localNeedsRoot(t)
	dir := t.TempDir()
	inner := filepath.Join(dir, "tmpfs")
	h := &Host{Mounter: mount.New("")}
	if err := h.mountTmpfs(inner, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Mounter.Unmount(inner) })
	if err := os.WriteFile(filepath.Join(inner, "f"), make([]byte, 1<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	u, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Inodes != 1 || u.Bytes >= 1<<20 {
		t.Fatalf("usage %+v counts the tmpfs mounted inside", u)
	}
}

func TestPodVolumes(t *testing.T) {
	root := t.TempDir()
	uid := types.UID("u")
	if vols, err := PodVolumes(root, uid); err != nil || vols != nil {
		t.Fatalf("no volumes directory: %v %v", vols, err)
	}
	for _, d := range []string{
		VolumeDir(root, uid, PluginEmptyDir, "scratch"),
		VolumeDir(root, uid, PluginConfigMap, "config"),
		VolumeDir(root, uid, PluginLocal, "pv1"),
	} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(VolumeDir(root, uid, PluginEmptyDir, "scratch"), "f"), make([]byte, 8192), 0o644); err != nil {
		t.Fatal(err)
	}
	vols, err := PodVolumes(root, uid)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vols {
		names = append(names, v.Plugin+"/"+v.Name)
		m, err := v.Metrics()
		if err != nil {
			t.Fatal(err)
		}
		if m.Capacity == 0 || m.Available > m.Capacity {
			t.Fatalf("%s: filesystem figures %+v", v.Name, m)
		}
		switch v.Plugin {
		case PluginEmptyDir:
			if m.InodesUsed != 2 || m.Used < 8192 || !v.Ephemeral(m) {
				t.Fatalf("emptyDir metrics %+v", m)
			}
		case PluginConfigMap:
			if m.InodesUsed != 1 || !v.Ephemeral(m) {
				t.Fatalf("configMap metrics %+v", m)
			}
		case PluginLocal:
			// statfs: the whole filesystem's usage, as upstream's
			// MetricsStatFS.
			if m.Used == 0 || m.InodesUsed == 0 || v.Ephemeral(m) {
				t.Fatalf("local metrics %+v", m)
			}
		}
	}
	slices.Sort(names)
	want := []string{"kubernetes.io~configmap/config", "kubernetes.io~empty-dir/scratch", "kubernetes.io~local-volume/pv1"}
	if !slices.Equal(names, want) {
		t.Fatalf("volumes %v, want %v", names, want)
	}
}

// TestPodVolumesBlock: a raw block CSI volume is listed by its link, named
// by its PV, and its driver is asked at the pod's bind mount of the device
// in the global map, as upstream's block mapper's metrics.
func TestPodVolumesBlock(t *testing.T) {
	root := t.TempDir()
	uid := types.UID("u")
	paths := blockPaths(root, uid, "pv-1")
	localMust(t, os.MkdirAll(filepath.Dir(paths.link), 0o755))
	localMust(t, os.Symlink(paths.publish, paths.link))
	localMust(t, os.MkdirAll(paths.data, 0o755))
	localMust(t, saveVolData(paths.data, map[string]string{volDataDriverName: "d", volDataVolHandle: "h"}))
	vols, err := PodVolumes(root, uid)
	if err != nil {
		t.Fatal(err)
	}
	if len(vols) != 1 || vols[0].Name != "pv-1" || vols[0].Plugin != PluginCSI || !vols[0].Block || vols[0].Path != paths.link {
		t.Fatalf("volumes %+v", vols)
	}
	pub, err := vols[0].CSI()
	if err != nil {
		t.Fatal(err)
	}
	if want := (CSIPublished{Driver: "d", Handle: "h", Target: paths.globalMapPod}); pub != want {
		t.Fatalf("published %+v, want %+v", pub, want)
	}
}
