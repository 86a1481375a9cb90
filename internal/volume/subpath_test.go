package volume

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

// volumeFixture makes a volume directory with a directory, a file, a
// symlink inside it, and symlinks out of it, beside a directory outside.
func volumeFixture(t *testing.T) (vol, outside string) {
	t.Helper()
	base := t.TempDir()
	vol, outside = filepath.Join(base, "vol"), filepath.Join(base, "outside")
	localMust(t, os.MkdirAll(filepath.Join(vol, "dir/deep"), 0o755))
	localMust(t, os.MkdirAll(outside, 0o755))
	localMust(t, os.WriteFile(filepath.Join(vol, "file"), []byte("in"), 0o644))
	localMust(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("out"), 0o600))
	localMust(t, os.Symlink("dir", filepath.Join(vol, "link-in")))
	localMust(t, os.Symlink(outside, filepath.Join(vol, "link-out")))
	localMust(t, os.Symlink("../outside", filepath.Join(vol, "rel-out")))
	localMust(t, os.Symlink(filepath.Join(outside, "missing"), filepath.Join(vol, "dangling-out")))
	localMust(t, os.Chmod(vol, 0o777|os.ModeSetgid))
	return vol, outside
}

func TestPrepareSubpath(t *testing.T) {
	tests := []struct {
		subPath string
		wantErr string // in the error or its cause
		// wantBound is the volume path, relative to the volume, whose
		// file the bind mount must be; "" with wantErr.
		wantBound string
		wantDir   bool
	}{
		{subPath: "dir", wantBound: "dir", wantDir: true},
		{subPath: "dir/deep", wantBound: "dir/deep", wantDir: true},
		{subPath: "file", wantBound: "file"},
		{subPath: "new", wantBound: "new", wantDir: true},
		{subPath: "dir/new/newer", wantBound: "dir/new/newer", wantDir: true},
		{subPath: "link-in", wantBound: "dir", wantDir: true},
		{subPath: "link-in/deep", wantBound: "dir/deep", wantDir: true},
		{subPath: "link-out", wantErr: "not within volume path"},
		{subPath: "rel-out", wantErr: "not within volume path"},
		{subPath: "link-out/new", wantErr: "is outside of allowed base"},
		{subPath: "dangling-out", wantErr: "error resolving symlinks"},
		{subPath: "../outside", wantErr: "unable to provision SubPath `../outside`: must not contain '..'"},
		{subPath: "dir/../../outside", wantErr: "must not contain '..'"},
		{subPath: "/etc", wantErr: "error SubPath `/etc` must not be an absolute path"},
		{subPath: "file/sub", wantErr: "not a directory"},
	}
	for _, tt := range tests {
		t.Run(tt.subPath, func(t *testing.T) {
			vol, outside := volumeFixture(t)
			fm := mount.NewFakeMounter(nil)
			h := &Host{RootDir: t.TempDir(), Mounter: fm}
			uid := types.UID("u")
			got, err := h.PrepareSubpath(uid, "data", vol, "app", 2, tt.subPath)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(causeChain(err), tt.wantErr) {
					t.Fatalf("error %q, want %q", causeChain(err), tt.wantErr)
				}
				if _, err := os.Stat(filepath.Join(outside, "new")); !os.IsNotExist(err) {
					t.Fatalf("created outside the volume: %v", err)
				}
				if mps, _ := fm.List(); len(mps) != 0 {
					t.Fatalf("mounts %+v after a refusal", mps)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s", causeChain(err))
			}
			if want := SubpathDir(h.RootDir, uid, "data", "app", 2); got != want {
				t.Fatalf("path %s, want %s", got, want)
			}
			fi, err := os.Lstat(got)
			if err != nil || fi.IsDir() != tt.wantDir {
				t.Fatalf("target %v %v, want a directory: %v", fi, err, tt.wantDir)
			}
			mps, _ := fm.List()
			if len(mps) != 1 || mps[0].Path != got || !strings.HasPrefix(mps[0].Device, "/proc/") {
				t.Fatalf("mounts %+v, want a bind of /proc/PID/fd/N at %s", mps, got)
			}
			if tt.wantDir {
				// A created directory has the volume's mode, setgid
				// included, as upstream's SafeMakeDir.
				fi, err := os.Stat(filepath.Join(vol, tt.wantBound))
				if err != nil {
					t.Fatal(err)
				}
				if tt.subPath == "new" && (fi.Mode().Perm() != 0o777 || fi.Mode()&os.ModeSetgid == 0) {
					t.Fatalf("created %v, want the volume's 2777", fi.Mode())
				}
			}
		})
	}
}

func causeChain(err error) string {
	var s []string
	for ; err != nil; err = errors.Unwrap(err) {
		s = append(s, err.Error())
	}
	return strings.Join(s, " <- ")
}

func TestSubpathErrorHidesTheCause(t *testing.T) {
	vol, _ := volumeFixture(t)
	h := &Host{RootDir: t.TempDir(), Mounter: mount.NewFakeMounter(nil)}
	_, err := h.PrepareSubpath("u", "data", vol, "app", 0, "link-out")
	var se *SubpathError
	if !errors.As(err, &se) {
		t.Fatalf("error %v, want a *SubpathError", err)
	}
	if want := `failed to prepare subPath for volumeMount "data" of container "app"`; err.Error() != want {
		t.Fatalf("error %q, want %q: the host's paths stay out of the pod's status", err, want)
	}
}

// TestSafeOpenRefusesSymlinks checks the race-proof half on its own: a
// path that EvalSymlinks found clean but that holds a symlink by the
// time it is opened (a container swapped a directory for one).
func TestSafeOpenRefusesSymlinks(t *testing.T) {
	vol, _ := volumeFixture(t)
	if fd, err := safeOpen(filepath.Join(vol, "link-in/deep"), vol); err == nil {
		_ = syscall.Close(fd)
		t.Fatal("opened through a symlink")
	} else if !strings.Contains(err.Error(), "unexpected symlink found") && !strings.Contains(err.Error(), "too many levels") {
		t.Fatalf("error %v", err)
	}
	fd, err := safeOpen(filepath.Join(vol, "dir/deep"), vol)
	if err != nil {
		t.Fatal(err)
	}
	_ = syscall.Close(fd)
}

// TestSubpathReal bind-mounts for real: the container sees the volume's
// file, a second call reuses the mount, and a mount of something else
// at the target is replaced.
func TestSubpathReal(t *testing.T) {
	localNeedsRoot(t)
	vol, _ := volumeFixture(t)
	h := &Host{RootDir: t.TempDir(), Mounter: mount.New("")}
	uid := types.UID("u")
	target, err := h.PrepareSubpath(uid, "data", vol, "app", 0, "file")
	if err != nil {
		t.Fatal(causeChain(err))
	}
	t.Cleanup(func() { _ = h.TearDownPod(uid) })
	if b, err := os.ReadFile(target); err != nil || string(b) != "in" {
		t.Fatalf("read %q %v through the bind mount", b, err)
	}
	again, err := h.PrepareSubpath(uid, "data", vol, "app", 0, "file")
	if err != nil || again != target {
		t.Fatalf("second call %s %v", again, err)
	}
	mps, err := h.Mounter.List()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, mp := range mps {
		if mp.Path == target {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d mounts at %s, want 1: reused", n, target)
	}
	// The subPath now names another file: the stale bind is replaced.
	if err := os.WriteFile(filepath.Join(vol, "other"), []byte("other"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.PrepareSubpath(uid, "data", vol, "app", 0, "other"); err != nil {
		t.Fatal(causeChain(err))
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "other" {
		t.Fatalf("read %q %v after the subPath changed", b, err)
	}
	if err := h.TearDownPod(uid); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(vol, "file")); err != nil || string(b) != "in" {
		t.Fatalf("the volume's file after teardown: %q %v", b, err)
	}
}
