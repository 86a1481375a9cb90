package fdwalk

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestChmodOnPathDescriptor: both ways of changing the mode of an O_PATH
// descriptor change the file it pins, and Chgrp on a symlink's changes
// the link, not its target.
func TestChmodOnPathDescriptor(t *testing.T) {
	for name, chmod := range map[string]func(int, uint32) error{"Chmod": Chmod, "chmodProc": chmodProc} {
		t.Run(name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "f")
			if err := os.WriteFile(f, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			fd, err := unix.Open(f, Path, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			if err := chmod(fd, 0o2640); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(f)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode() != 0o640|os.ModeSetgid {
				t.Fatalf("mode %v, want g+s 0640", fi.Mode())
			}
		})
	}
	t.Run("Chgrp on a symlink", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chown to another group needs root")
		}
		dir := t.TempDir()
		target := filepath.Join(dir, "target")
		if err := os.WriteFile(target, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		link := filepath.Join(dir, "link")
		if err := os.Symlink(target, link); err != nil {
			t.Fatal(err)
		}
		fd, err := unix.Open(link, Path, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fd)
		if err := Chgrp(fd, 4321); err != nil {
			t.Fatal(err)
		}
		for p, want := range map[string]uint32{link: 4321, target: 0} {
			fi, err := os.Lstat(p)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Sys().(*syscall.Stat_t).Gid; got != want {
				t.Fatalf("%s: gid %d, want %d", p, got, want)
			}
		}
	})
}
