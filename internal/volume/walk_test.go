package volume

import (
	"os"
	"path/filepath"
	"testing"

	"k8s.io/mount-utils"
)

// swapForSymlink replaces the directory path with a symlink to target, as
// a container writing the volume could do while the node walks it.
func swapForSymlink(t *testing.T, path, target string) {
	t.Helper()
	localMust(t, os.RemoveAll(path))
	localMust(t, os.Symlink(target, path))
}

// TestWalksStayInTheTree swaps a directory of a volume for a symlink to
// a directory outside it once a walk has found it a directory and before
// the walk enters it: teardown must not remove what is outside, and disk
// usage must not count it.
func TestWalksStayInTheTree(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, vol, outside string)
	}{
		{name: "teardown removes the symlink, not what it points to", run: func(t *testing.T, vol, outside string) {
			testHookBeforeDescend = func(path string) {
				if path == filepath.Join(vol, "sub") {
					swapForSymlink(t, path, outside)
				}
			}
			t.Cleanup(func() { testHookBeforeDescend = nil })
			if err := removeAllOneFilesystem(mount.NewFakeMounter(nil), vol); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(vol); !os.IsNotExist(err) {
				t.Fatalf("volume left: %v", err)
			}
		}},
		{name: "disk usage does not count what the symlink points to", run: func(t *testing.T, vol, outside string) {
			testHookDuBeforeDescend = func(dir, name string) {
				if dir == vol && name == "sub" {
					swapForSymlink(t, filepath.Join(dir, name), outside)
				}
			}
			t.Cleanup(func() { testHookDuBeforeDescend = nil })
			u, err := DiskUsage(vol)
			if err != nil {
				t.Fatal(err)
			}
			if u.Bytes >= 1<<20 || u.Inodes > 4 {
				t.Fatalf("usage %+v counts the directory outside the volume", u)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := t.TempDir()
			outside := filepath.Join(host, "node-data")
			localMust(t, os.Mkdir(outside, 0o755))
			big := make([]byte, 1<<20)
			for i := range big {
				big[i] = 1 // not sparse
			}
			localMust(t, os.WriteFile(filepath.Join(outside, "precious"), big, 0o644))
			vol := filepath.Join(host, "vol")
			localMust(t, os.MkdirAll(filepath.Join(vol, "sub"), 0o755))
			localMust(t, os.WriteFile(filepath.Join(vol, "sub/g"), []byte("x"), 0o644))
			localMust(t, os.WriteFile(filepath.Join(vol, "f"), []byte("x"), 0o644))
			tt.run(t, vol, outside)
			if _, err := os.Stat(filepath.Join(outside, "precious")); err != nil {
				t.Fatalf("the file outside the volume is gone: %v", err)
			}
		})
	}
}

// TestRemoveAllOneFilesystemSeesBindMounts: a bind mount of a directory
// of the same filesystem inside a volume, which a device comparison
// alone misses, stops the removal even when the mounter does not list it.
func TestRemoveAllOneFilesystemSeesBindMounts(t *testing.T) {
	localNeedsRoot(t)
	host := t.TempDir()
	node := filepath.Join(host, "node-data")
	localMust(t, os.Mkdir(node, 0o755))
	localMust(t, os.WriteFile(filepath.Join(node, "precious"), nil, 0o644))
	inner := filepath.Join(host, "vol/sub/mnt")
	localMust(t, os.MkdirAll(inner, 0o755))
	real := mount.New("")
	localMust(t, real.Mount(node, inner, "", []string{"bind"}))
	t.Cleanup(func() { _ = real.Unmount(inner) })
	err := removeAllOneFilesystem(mount.NewFakeMounter(nil), filepath.Join(host, "vol"))
	if err == nil {
		t.Fatal("no refusal at the bind mount")
	}
	if _, err := os.Stat(filepath.Join(node, "precious")); err != nil {
		t.Fatalf("a file behind the bind mount was removed: %v", err)
	}
}
