package volume

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

// podTree makes a pod directory with an emptyDir holding files, a
// memory volume, a local volume and a subpath, and returns their paths.
func podTree(t *testing.T, root string, uid types.UID) (emptyDir, memory, local, subpath string) {
	t.Helper()
	emptyDir = VolumeDir(root, uid, PluginEmptyDir, "scratch")
	memory = VolumeDir(root, uid, PluginEmptyDir, "mem")
	local = VolumeDir(root, uid, PluginLocal, "pv1")
	subpath = SubpathDir(root, uid, "scratch", "app", 0)
	for _, d := range []string{filepath.Join(emptyDir, "a/b"), memory, local, subpath} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(emptyDir, "a/b/f"), filepath.Join(PodDir(root, uid), "etc-hosts")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return emptyDir, memory, local, subpath
}

func TestTearDownPod(t *testing.T) {
	tests := []struct {
		name string
		// mounted lists the tree's paths the fake mounter has mounted,
		// by their index in podTree's results.
		mounted []int
		// failUnmount makes unmounting that path fail.
		failUnmount int
		wantErr     string
		wantLeft    []int // paths that must still exist
	}{
		{name: "nothing mounted", failUnmount: -1},
		{name: "every mount unmounted", mounted: []int{1, 2, 3}, failUnmount: -1},
		{name: "a busy tmpfs stays with its pod directory", mounted: []int{1, 2, 3}, failUnmount: 1,
			wantErr: "device or resource busy", wantLeft: []int{1}},
		{name: "a busy subpath stays", mounted: []int{3}, failUnmount: 3,
			wantErr: "device or resource busy", wantLeft: []int{3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			uid := types.UID("u1")
			e, m, l, s := podTree(t, root, uid)
			paths := []string{e, m, l, s}
			fm := mount.NewFakeMounter(nil)
			for _, i := range tt.mounted {
				fm.MountPoints = append(fm.MountPoints, mount.MountPoint{Device: "dev", Path: paths[i]})
			}
			if tt.failUnmount >= 0 {
				busy := paths[tt.failUnmount]
				fm.UnmountFunc = func(p string) error {
					if p == busy {
						return errors.New("device or resource busy")
					}
					return nil
				}
			}
			h := &Host{RootDir: root, Mounter: fm}
			err := h.TearDownPod(uid)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				for _, i := range tt.wantLeft {
					if _, err := os.Stat(paths[i]); err != nil {
						t.Fatalf("%s removed: %v", paths[i], err)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(PodDir(root, uid)); !os.IsNotExist(err) {
				t.Fatalf("pod directory left: %v", err)
			}
			if mps, _ := fm.List(); len(mps) != 0 {
				t.Fatalf("mounts left: %+v", mps)
			}
			// Torn down already: nothing to do.
			if err := h.TearDownPod(uid); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestRemoveAllOneFilesystem checks that a mount point deeper in a
// volume (a container's mount propagated back, say) stops the removal
// there: the files on the other filesystem are never touched.
func TestRemoveAllOneFilesystem(t *testing.T) {
	root := t.TempDir()
	inner := filepath.Join(root, "vol/sub/mnt")
	if err := os.MkdirAll(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vol/f", "vol/sub/g", "vol/sub/mnt/precious"} {
		if err := os.WriteFile(filepath.Join(root, f), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fm := mount.NewFakeMounter([]mount.MountPoint{{Device: "dev", Path: inner}})
	err := removeAllOneFilesystem(fm, filepath.Join(root, "vol"))
	if err == nil || !strings.Contains(err.Error(), "it is a mount point") {
		t.Fatalf("error %v, want a refusal at the mount point", err)
	}
	if _, err := os.Stat(filepath.Join(inner, "precious")); err != nil {
		t.Fatalf("a file behind the mount point was removed: %v", err)
	}
	for _, gone := range []string{"vol/f", "vol/sub/g"} {
		if _, err := os.Stat(filepath.Join(root, gone)); !os.IsNotExist(err) {
			t.Fatalf("%s not removed: %v", gone, err)
		}
	}
}

func TestPodDirs(t *testing.T) {
	root := t.TempDir()
	h := &Host{RootDir: root}
	if uids, err := h.PodDirs(); err != nil || uids != nil {
		t.Fatalf("no pods directory: %v %v", uids, err)
	}
	for _, d := range []string{"pods/a", "pods/b"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "pods/stray-file"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	uids, err := h.PodDirs()
	if err != nil || !slices.Equal(uids, []types.UID{"a", "b"}) {
		t.Fatalf("PodDirs %v %v", uids, err)
	}
}

// TestTearDownRealMounts tears down a pod whose emptyDir has a real bind
// mount inside (a directory of the node's own): unmounted, never emptied.
func TestTearDownRealMounts(t *testing.T) {
	localNeedsRoot(t)
	root, node := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(node, "precious"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	uid := types.UID("u2")
	_, memory, local, _ := podTree(t, root, uid)
	h := &Host{RootDir: root, Mounter: mount.New("")}
	if err := h.mountTmpfs(memory, nil); err != nil {
		t.Fatal(err)
	}
	if err := h.Mounter.Mount(node, local, "", []string{"bind"}); err != nil {
		t.Fatal(err)
	}
	// Mounted twice over: a crash between a mount and its record.
	if err := h.Mounter.Mount(node, local, "", []string{"bind"}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range []string{memory, local, local} {
			_ = h.Mounter.Unmount(p)
		}
	})
	if err := h.TearDownPod(uid); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(node, "precious")); err != nil {
		t.Fatalf("the node's file was removed: %v", err)
	}
	if _, err := os.Stat(PodDir(root, uid)); !os.IsNotExist(err) {
		t.Fatalf("pod directory left: %v", err)
	}
}
