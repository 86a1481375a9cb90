package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestWrite(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	cases := []struct {
		name     string
		existing string // the file's content before; "" means none
		leftover bool   // a crashed write left path.tmp
		data     string
		perm     os.FileMode
	}{
		{name: "new file", data: "new", perm: 0o600},
		{name: "replaces", existing: "old", data: "new", perm: 0o600},
		{name: "mode despite the umask", data: "new", perm: 0o644},
		{name: "over a crashed write's leftover", existing: "old", leftover: true, data: "new", perm: 0o640},
		{name: "empty", existing: "old", data: "", perm: 0o600},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state")
			if c.existing != "" {
				if err := os.WriteFile(path, []byte(c.existing), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if c.leftover {
				if err := os.WriteFile(path+".tmp", []byte("partial and longer than the new content"), 0o666); err != nil {
					t.Fatal(err)
				}
			}
			if err := Write(path, []byte(c.data), c.perm); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			if err != nil || string(got) != c.data {
				t.Errorf("content %q (%v), want %q", got, err, c.data)
			}
			fi, err := os.Stat(path)
			if err != nil || fi.Mode().Perm() != c.perm {
				t.Errorf("mode %v (%v), want %v", fi.Mode().Perm(), err, c.perm)
			}
			assertOnly(t, filepath.Dir(path), "state")
		})
	}
}

// TestWriteFailureKeepsTheOld: a write that cannot finish leaves the old
// file as it was and no temporary file.
func TestWriteFailureKeepsTheOld(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state")
	if err := os.WriteFile(path, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The rename fails: path.tmp can be written, but path is a non-empty
	// directory now.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(path, "x"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Write(path, []byte("new"), 0o600)
	if err == nil || !strings.Contains(err.Error(), "write "+path) {
		t.Fatalf("Write = %v, want an error naming %s", err, path)
	}
	assertOnly(t, dir, "state")

	// A directory that does not exist: nothing made.
	missing := filepath.Join(dir, "missing", "state")
	if err := Write(missing, []byte("new"), 0o600); err == nil {
		t.Fatal("Write into a missing directory: no error")
	}
	assertOnly(t, dir, "state")
}

// assertOnly checks that dir holds exactly the names given.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("%s holds %v, want %v", dir, got, names)
	}
}
