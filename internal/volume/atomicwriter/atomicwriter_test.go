package atomicwriter

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func fp(data string, mode int32) FileProjection {
	return FileProjection{Data: []byte(data), Mode: mode}
}

// visible returns what a reader of dir sees: each regular file reached
// through the user-visible names, with its mode, skipping the writer's own
// ".." names.
func visible(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		root := filepath.Join(dir, e.Name())
		real, err := filepath.EvalSymlinks(root)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		err = filepath.WalkDir(real, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel := filepath.Join(e.Name(), strings.TrimPrefix(p, real))
			got[rel] = fmt.Sprintf("%s %o", data, info.Mode().Perm())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// tsDirs lists the timestamped directories in dir.
func tsDirs(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") && e.Name() != DataDirName {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name   string
		writes []map[string]FileProjection
		want   map[string]string
		// rewritten: whether the last write made a new timestamped
		// directory.
		rewritten bool
	}{
		{
			name:      "first write",
			writes:    []map[string]FileProjection{{"a": fp("1", 0o644), "b": fp("2", 0o400)}},
			want:      map[string]string{"a": "1 644", "b": "2 400"},
			rewritten: true,
		},
		{
			name:      "empty payload",
			writes:    []map[string]FileProjection{{}},
			want:      map[string]string{},
			rewritten: true,
		},
		{
			name: "unchanged",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644)},
				{"a": fp("1", 0o644)},
			},
			want: map[string]string{"a": "1 644"},
		},
		{
			name: "mode alone changed is not rewritten, as upstream",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644)},
				{"a": fp("1", 0o600)},
			},
			want: map[string]string{"a": "1 644"},
		},
		{
			name: "update",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644), "b": fp("2", 0o644)},
				{"a": fp("1", 0o644), "b": fp("3", 0o600)},
			},
			want:      map[string]string{"a": "1 644", "b": "3 600"},
			rewritten: true,
		},
		{
			name: "key removed",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644), "b": fp("2", 0o644), "d/e": fp("3", 0o644)},
				{"a": fp("1", 0o644)},
			},
			want:      map[string]string{"a": "1 644"},
			rewritten: true,
		},
		{
			name: "key added",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644)},
				{"a": fp("1", 0o644), "b": fp("2", 0o644)},
			},
			want:      map[string]string{"a": "1 644", "b": "2 644"},
			rewritten: true,
		},
		{
			name: "nested paths",
			writes: []map[string]FileProjection{
				{"x/y/z": fp("1", 0o644), "x/w": fp("2", 0o644), "./u": fp("3", 0o644)},
			},
			want:      map[string]string{"x/y/z": "1 644", "x/w": "2 644", "u": "3 644"},
			rewritten: true,
		},
		{
			name: "nested file removed, its sibling kept",
			writes: []map[string]FileProjection{
				{"x/y/z": fp("1", 0o644), "x/w": fp("2", 0o644)},
				{"x/w": fp("2", 0o644)},
			},
			want:      map[string]string{"x/w": "2 644"},
			rewritten: true,
		},
		{
			name: "file becomes a directory",
			writes: []map[string]FileProjection{
				{"a": fp("1", 0o644)},
				{"a/b": fp("2", 0o644)},
			},
			want:      map[string]string{"a/b": "2 644"},
			rewritten: true,
		},
		{
			name:      "modes whatever the umask",
			writes:    []map[string]FileProjection{{"a": fp("1", 0o777), "b": fp("2", 0o000), "c": fp("3", 0o440)}},
			want:      map[string]string{"a": "1 777", "b": "2 0", "c": "3 440"},
			rewritten: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var before []string
			for i, w := range tt.writes {
				if i == len(tt.writes)-1 {
					before = tsDirs(t, dir)
				}
				if err := Write(dir, w, nil); err != nil {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			got := visible(t, dir)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("visible files %v, want %v", got, tt.want)
			}
			after := tsDirs(t, dir)
			if len(after) != 1 {
				t.Fatalf("timestamped directories %v, want exactly one", after)
			}
			if rewritten := fmt.Sprint(before) != fmt.Sprint(after); rewritten != tt.rewritten {
				t.Errorf("rewritten %v, want %v (before %v, after %v)", rewritten, tt.rewritten, before, after)
			}
			if target, err := os.Readlink(filepath.Join(dir, DataDirName)); err != nil || target != after[0] {
				t.Errorf("..data -> %q (%v), want %q", target, err, after[0])
			}
			if _, err := os.Lstat(filepath.Join(dir, newDataDirName)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s left behind: %v", newDataDirName, err)
			}
		})
	}
}

func TestWriteLayout(t *testing.T) {
	dir := t.TempDir()
	if err := Write(dir, map[string]FileProjection{"a": fp("1", 0o644), "x/y": fp("2", 0o644)}, nil); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"a": "..data/a", "x": "..data/x"} {
		if got, err := os.Readlink(filepath.Join(dir, name)); err != nil || got != want {
			t.Errorf("%s -> %q (%v), want %q", name, got, err, want)
		}
	}
	ts := tsDirs(t, dir)
	// ..YYYY_MM_DD_HH_MM_SS.N
	if len(ts) != 1 || len(ts[0]) < len("..2006_01_02_15_04_05.1") || ts[0][21] != '.' {
		t.Fatalf("timestamped directory %v", ts)
	}
	info, err := os.Stat(filepath.Join(dir, ts[0]))
	if err != nil || info.Mode().Perm() != 0o755 {
		t.Errorf("timestamped directory mode %v (%v), want 0755", info.Mode().Perm(), err)
	}
}

func TestWriteRecreatesVisibleSymlinks(t *testing.T) {
	dir := t.TempDir()
	payload := map[string]FileProjection{"a": fp("1", 0o644)}
	if err := Write(dir, payload, nil); err != nil {
		t.Fatal(err)
	}
	// An earlier write that stopped before making its symlinks.
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, payload, nil); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, dir); got["a"] != "1 644" {
		t.Errorf("visible %v", got)
	}
}

func TestWriteStaleTmpLink(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink("..gone", filepath.Join(dir, newDataDirName)); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, map[string]FileProjection{"a": fp("1", 0o644)}, nil); err != nil {
		t.Fatal(err)
	}
	if got := visible(t, dir); got["a"] != "1 644" {
		t.Errorf("visible %v", got)
	}
}

func TestWriteSetPerms(t *testing.T) {
	dir := t.TempDir()
	var calls []string
	setPerms := func(sub string) error {
		// The files are written and not yet published.
		if _, err := os.Stat(filepath.Join(dir, sub, "a")); err != nil {
			t.Errorf("setPerms before the files are written: %v", err)
		}
		if _, err := os.Lstat(filepath.Join(dir, "a")); err == nil {
			t.Error("setPerms after the files are published")
		}
		calls = append(calls, sub)
		return nil
	}
	payload := map[string]FileProjection{"a": fp("1", 0o644)}
	if err := Write(dir, payload, setPerms); err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, payload, setPerms); err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0] != tsDirs(t, dir)[0] {
		t.Errorf("setPerms calls %v, want one with %v", calls, tsDirs(t, dir))
	}

	failed := errors.New("no")
	err := Write(dir, map[string]FileProjection{"a": fp("2", 0o644)}, func(string) error { return failed })
	if !errors.Is(err, failed) {
		t.Fatalf("error %v, want %v", err, failed)
	}
	if got := visible(t, dir); got["a"] != "1 644" {
		t.Errorf("after a failed setPerms the old content must stay: %v", got)
	}
	if ts := tsDirs(t, dir); len(ts) != 1 {
		t.Errorf("the failed write's directory is left: %v", ts)
	}
}

func TestWriteFsUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("chown needs root")
	}
	dir := t.TempDir()
	uid := int64(1234)
	if err := Write(dir, map[string]FileProjection{"a": {Data: []byte("1"), Mode: 0o600, FsUser: &uid}}, nil); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"a", filepath.Join(DataDirName, "a")} {
		info, err := os.Lstat(filepath.Join(dir, p))
		if err != nil {
			t.Fatal(err)
		}
		if got := ownerUID(info); got != 1234 {
			t.Errorf("%s owned by %d, want 1234", p, got)
		}
	}
}

func TestWriteInvalidPaths(t *testing.T) {
	tests := []struct {
		path, want string
	}{
		{"", "invalid path: must not be empty"},
		{"/abs", "invalid path: must be relative path: /abs"},
		{"a/../../b", "invalid path: must not contain '..': a/../../b"},
		{"..", "invalid path: must not contain '..': .."},
		{"..data", "invalid path: must not start with '..': ..data"},
		{"..a/b", "invalid path: must not start with '..': ..a/b"},
		{strings.Repeat("a", 256), "invalid path: filenames must be less than or equal to 255 characters"},
		{strings.Repeat("a/", 2049), "invalid path: must be less than or equal to 4096 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			dir := t.TempDir()
			err := Write(dir, map[string]FileProjection{"ok": fp("1", 0o644), tt.path: fp("x", 0o644)}, nil)
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("an invalid payload wrote %v", entries)
			}
		})
	}
	for _, ok := range []string{"a..b", "a/..b", "..", "a/./b"} {
		if ok == ".." {
			continue
		}
		if err := validatePath(ok); err != nil {
			t.Errorf("validatePath(%q): %v", ok, err)
		}
	}
}

func TestWriteMissingDir(t *testing.T) {
	if err := Write(filepath.Join(t.TempDir(), "nope"), nil, nil); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("error %v, want not exist", err)
	}
}

// TestReaderNeverSeesHalfUpdate reads the volume while it is rewritten:
// every read through one resolution of ..data sees one whole version, and
// a file read through its user-visible name is one whole version.
func TestReaderNeverSeesHalfUpdate(t *testing.T) {
	dir := t.TempDir()
	version := func(i int) map[string]FileProjection {
		v := bytes.Repeat([]byte(fmt.Sprintf("v%d;", i)), 4096)
		return map[string]FileProjection{"a": {Data: v, Mode: 0o644}, "x/b": {Data: v, Mode: 0o644}}
	}
	if err := Write(dir, version(0), nil); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	var wg sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 2)
	wg.Add(2)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			target, err := os.Readlink(filepath.Join(dir, DataDirName))
			if err != nil {
				errs <- fmt.Errorf("..data missing: %w", err)
				return
			}
			ts := filepath.Join(dir, target)
			a, errA := os.ReadFile(filepath.Join(ts, "a"))
			b, errB := os.ReadFile(filepath.Join(ts, "x", "b"))
			if errA != nil || errB != nil {
				continue // that version was removed meanwhile; never a mix
			}
			if !bytes.Equal(a, b) {
				errs <- errors.New("a and x/b of one version differ")
				return
			}
			reads.Add(1)
		}
	}()
	go func() {
		defer wg.Done()
		for !stop.Load() {
			a, err := os.ReadFile(filepath.Join(dir, "a"))
			if errors.Is(err, fs.ErrNotExist) {
				// It resolved ..data to the old version just as that was
				// removed: upstream's scheme has the same window. A
				// reader may retry; it never gets a mix.
				continue
			}
			if err != nil {
				errs <- fmt.Errorf("reading a: %w", err)
				return
			}
			if len(a) != len(version(0)["a"].Data) || !bytes.Equal(a, bytes.Repeat(a[:bytes.IndexByte(a, ';')+1], 4096)) {
				errs <- errors.New("a is half written")
				return
			}
		}
	}()
	for i := 1; i < 100; i++ {
		if err := Write(dir, version(i%10), nil); err != nil {
			t.Fatal(err)
		}
	}
	stop.Store(true)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads.Load() == 0 {
		t.Log("the consistent reader never completed a read")
	}
}
