package ownership

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const gid = 4321

// tree makes dir/{f (0600), d/ (0700), d/g (0400), l -> f} and returns dir.
func tree(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "vol")
	must(t, os.Mkdir(dir, 0o700))
	must(t, os.Chmod(dir, 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o600))
	must(t, os.Chmod(filepath.Join(dir, "f"), 0o600))
	must(t, os.Mkdir(filepath.Join(dir, "d"), 0o700))
	must(t, os.Chmod(filepath.Join(dir, "d"), 0o700))
	must(t, os.WriteFile(filepath.Join(dir, "d", "g"), nil, 0o400))
	must(t, os.Chmod(filepath.Join(dir, "d", "g"), 0o400))
	must(t, os.Symlink("f", filepath.Join(dir, "l")))
	return dir
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// state is "path mode gid" of each file, symlinks not followed.
func state(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range []string{".", "f", "d", "d/g", "l"} {
		info, err := os.Lstat(filepath.Join(dir, p))
		must(t, err)
		mode := info.Mode().Perm()
		if info.Mode()&os.ModeSetgid != 0 {
			mode |= 0o2000
		}
		if info.Mode()&os.ModeSymlink != 0 {
			mode = 0 // a symlink's mode means nothing
		}
		out[p] = fmt.Sprintf("%o %d", mode, info.Sys().(*syscall.Stat_t).Gid)
	}
	return out
}

func TestSet(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	always := v1.FSGroupChangeAlways
	onRoot := v1.FSGroupChangeOnRootMismatch
	g := int64(gid)
	untouched := map[string]string{".": "700 0", "f": "600 0", "d": "700 0", "d/g": "400 0", "l": "0 0"}
	tests := []struct {
		name     string
		fsGroup  *int64
		policy   *v1.PodFSGroupChangePolicy
		readOnly bool
		// prepare runs on the fresh tree before Set.
		prepare func(t *testing.T, dir string)
		want    map[string]string
	}{
		{name: "no fsGroup", want: untouched},
		{
			name: "no policy walks, read-write", fsGroup: &g,
			want: map[string]string{".": "2770 4321", "f": "660 4321", "d": "2770 4321", "d/g": "660 4321", "l": "0 4321"},
		},
		{
			name: "Always walks, read-only", fsGroup: &g, policy: &always, readOnly: true,
			want: map[string]string{".": "2750 4321", "f": "640 4321", "d": "2750 4321", "d/g": "440 4321", "l": "0 4321"},
		},
		{
			name: "OnRootMismatch, root of another group, walks", fsGroup: &g, policy: &onRoot,
			want: map[string]string{".": "2770 4321", "f": "660 4321", "d": "2770 4321", "d/g": "660 4321", "l": "0 4321"},
		},
		{
			name: "OnRootMismatch, root matches, skips", fsGroup: &g, policy: &onRoot,
			prepare: func(t *testing.T, dir string) {
				must(t, os.Lchown(dir, -1, gid))
				must(t, os.Chmod(dir, 0o770|os.ModeSetgid))
			},
			want: map[string]string{".": "2770 4321", "f": "600 0", "d": "700 0", "d/g": "400 0", "l": "0 0"},
		},
		{
			name: "OnRootMismatch, root without setgid, walks", fsGroup: &g, policy: &onRoot,
			prepare: func(t *testing.T, dir string) {
				must(t, os.Lchown(dir, -1, gid))
				must(t, os.Chmod(dir, 0o770))
			},
			want: map[string]string{".": "2770 4321", "f": "660 4321", "d": "2770 4321", "d/g": "660 4321", "l": "0 4321"},
		},
		{
			name: "OnRootMismatch, root lacks the write bit, walks", fsGroup: &g, policy: &onRoot,
			prepare: func(t *testing.T, dir string) {
				must(t, os.Lchown(dir, -1, gid))
				must(t, os.Chmod(dir, 0o750|os.ModeSetgid))
			},
			want: map[string]string{".": "2770 4321", "f": "660 4321", "d": "2770 4321", "d/g": "660 4321", "l": "0 4321"},
		},
		{
			name: "OnRootMismatch read-only, root has the read-only bits, skips", fsGroup: &g, policy: &onRoot, readOnly: true,
			prepare: func(t *testing.T, dir string) {
				must(t, os.Lchown(dir, -1, gid))
				must(t, os.Chmod(dir, 0o750|os.ModeSetgid))
			},
			want: map[string]string{".": "2750 4321", "f": "600 0", "d": "700 0", "d/g": "400 0", "l": "0 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := tree(t)
			if tt.prepare != nil {
				tt.prepare(t, dir)
			}
			must(t, Set(dir, tt.fsGroup, tt.policy, tt.readOnly))
			if got := state(t, dir); fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got  %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestSetSymlinkTargetModeKept(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	// A symlink pointing out of the volume: its target is neither chmod-ed
	// through it nor walked.
	outside := filepath.Join(t.TempDir(), "outside")
	must(t, os.WriteFile(outside, nil, 0o600))
	must(t, os.Chmod(outside, 0o600))
	dir := tree(t)
	must(t, os.Symlink(outside, filepath.Join(dir, "out")))
	g := int64(gid)
	must(t, Set(dir, &g, nil, false))
	info, err := os.Stat(outside)
	must(t, err)
	if info.Mode().Perm() != 0o600 || info.Sys().(*syscall.Stat_t).Gid != 0 {
		t.Errorf("the target outside the volume changed: %v gid %d", info.Mode(), info.Sys().(*syscall.Stat_t).Gid)
	}
}

func TestSetMissingDir(t *testing.T) {
	g := int64(gid)
	if err := Set(filepath.Join(t.TempDir(), "nope"), &g, nil, false); err == nil {
		t.Fatal("no error for a missing directory")
	}
}

func TestRequiresChangeNotADir(t *testing.T) {
	f := filepath.Join(t.TempDir(), "f")
	must(t, os.WriteFile(f, nil, 0o600))
	must(t, os.Lchown(f, -1, os.Getegid()))
	if !RequiresChange(f, int64(os.Getegid()), false) {
		t.Error("a file root must always be changed, as upstream")
	}
	if !RequiresChange(filepath.Join(t.TempDir(), "nope"), 0, false) {
		t.Error("a missing root must be changed")
	}
}

// TestSetEntrySwappedMidWalk swaps an entry of the volume for a symlink
// to a path outside it once the walk has looked at the entry and before
// it descends into it or changes it, as a container writing the volume
// could: nothing outside the volume may get the group or the mode.
func TestSetEntrySwappedMidWalk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	tests := []struct {
		name string
		// entry is swapped for a symlink to target (outside the volume).
		entry, target string
	}{
		{name: "a directory swapped for a symlink to a directory outside", entry: "d", target: "out"},
		{name: "a file swapped for a symlink to a file outside", entry: "f", target: "out/secret"},
		{name: "a directory swapped for a symlink to a file outside", entry: "d", target: "out/secret"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			host := t.TempDir()
			must(t, os.Mkdir(filepath.Join(host, "out"), 0o700))
			must(t, os.Chmod(filepath.Join(host, "out"), 0o700))
			must(t, os.WriteFile(filepath.Join(host, "out/secret"), nil, 0o600))
			must(t, os.Chmod(filepath.Join(host, "out/secret"), 0o600))
			dir := tree(t)
			testHookInspected = func(parent, name string) {
				if parent != dir || name != tt.entry {
					return
				}
				must(t, os.Rename(filepath.Join(dir, name), filepath.Join(dir, "moved")))
				must(t, os.Symlink(filepath.Join(host, tt.target), filepath.Join(dir, name)))
			}
			t.Cleanup(func() { testHookInspected = nil })
			g := int64(gid)
			_ = Set(dir, &g, nil, false)
			for p, want := range map[string]os.FileMode{"out": os.ModeDir | 0o700, "out/secret": 0o600} {
				info, err := os.Lstat(filepath.Join(host, p))
				must(t, err)
				if info.Mode() != want || info.Sys().(*syscall.Stat_t).Gid != 0 {
					t.Errorf("%s outside the volume changed: %v gid %d", p, info.Mode(), info.Sys().(*syscall.Stat_t).Gid)
				}
			}
			// The entry the walk looked at is the one it changed, where
			// it went.
			info, err := os.Lstat(filepath.Join(dir, "moved"))
			must(t, err)
			if info.Sys().(*syscall.Stat_t).Gid != gid {
				t.Errorf("the swapped-out entry was not given the group: gid %d", info.Sys().(*syscall.Stat_t).Gid)
			}
		})
	}
}

// TestSetSpecialFiles: a FIFO in the volume neither blocks the walk nor
// escapes it; it gets the group and mode as any file (upstream chmods it
// by path).
func TestSetSpecialFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown to another group needs root")
	}
	dir := tree(t)
	fifo := filepath.Join(dir, "fifo")
	must(t, syscall.Mkfifo(fifo, 0o600))
	must(t, os.Chmod(fifo, 0o600))
	g := int64(gid)
	must(t, Set(dir, &g, nil, false))
	info, err := os.Lstat(fifo)
	must(t, err)
	if info.Mode().Perm() != 0o660 || info.Sys().(*syscall.Stat_t).Gid != gid {
		t.Errorf("fifo %v gid %d, want 0660 and the group", info.Mode(), info.Sys().(*syscall.Stat_t).Gid)
	}
}
