package volume

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// hostFixture makes one file of each kind the hostPath types name, and a
// symlink to the directory.
func hostFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	localMust(t, os.Mkdir(filepath.Join(dir, "dir"), 0o755))
	localMust(t, os.WriteFile(filepath.Join(dir, "file"), nil, 0o644))
	localMust(t, os.Symlink(filepath.Join(dir, "dir"), filepath.Join(dir, "link-to-dir")))
	localMust(t, os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")))
	localMust(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	l, err := net.Listen("unix", filepath.Join(dir, "sock"))
	localMust(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return dir
}

func TestCheckHostPath(t *testing.T) {
	dir := hostFixture(t)
	type typ = v1.HostPathType
	tests := []struct {
		path    string
		typ     typ
		wantErr string
	}{
		{"dir", v1.HostPathUnset, ""},
		{"nowhere", v1.HostPathUnset, ""},
		{"dir", v1.HostPathDirectory, ""},
		{"link-to-dir", v1.HostPathDirectory, ""},
		{"file", v1.HostPathDirectory, "hostPath type check failed: DIR/file is not a directory, it's a File"},
		{"nowhere", v1.HostPathDirectory, `hostPath type check failed, DIR/nowhere is not a directory, unable to determine its type: path "DIR/nowhere" does not exist`},
		{"dir", v1.HostPathDirectoryOrCreate, ""},
		{"new/sub", v1.HostPathDirectoryOrCreate, ""},
		{"file", v1.HostPathDirectoryOrCreate, "hostPath type check failed: DIR/file is not a directory, it's a File"},
		// As upstream: makeDir ignores EEXIST, so a dangling symlink
		// passes and the runtime's mount fails later.
		{"dangling", v1.HostPathDirectoryOrCreate, ""},
		{"file", v1.HostPathFile, ""},
		{"dir", v1.HostPathFile, "hostPath type check failed: DIR/dir is not a file, it's a Directory"},
		{"fifo", v1.HostPathFile, "hostPath type check failed, DIR/fifo is not a file, unable to determine its type: only recognise file, directory, socket, block device and character device"},
		{"file", v1.HostPathFileOrCreate, ""},
		{"newfile", v1.HostPathFileOrCreate, ""},
		{"dir", v1.HostPathFileOrCreate, "hostPath type check failed: DIR/dir is not a file, it's a Directory"},
		{"missing-parent/newfile", v1.HostPathFileOrCreate, "no such file or directory"},
		{"sock", v1.HostPathSocket, ""},
		{"file", v1.HostPathSocket, "hostPath type check failed: DIR/file is not a socket file, it's a File"},
		{"/dev/null", v1.HostPathCharDev, ""},
		{"file", v1.HostPathCharDev, "hostPath type check failed: DIR/file is not a character device, it's a File"},
		{"/dev/null", v1.HostPathBlockDev, "hostPath type check failed: /dev/null is not a block device, it's a CharDevice"},
		{"dir", "Tape", "Tape is an invalid volume type"},
		{"dir/../file", v1.HostPathUnset, "invalid HostPath `DIR/dir/../file`: must not contain '..'"},
	}
	for _, tt := range tests {
		t.Run(string(tt.typ)+" "+tt.path, func(t *testing.T) {
			path := tt.path
			if !filepath.IsAbs(path) {
				path = dir + "/" + path // not Join: keep a ".." to refuse
			}
			typ := tt.typ
			h := &Host{}
			vol := &v1.Volume{Name: "h", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path, Type: &typ}}}
			m, err := h.SetUp(t.Context(), nil, vol)
			want := strings.ReplaceAll(tt.wantErr, "DIR", dir)
			if want != "" {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Fatalf("error %v, want %q", err, want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m != (Mounted{Name: "h", Path: path, HostPath: true}) {
				t.Fatalf("mounted %+v", m)
			}
		})
	}
}

// TestHostPathCreates checks the modes of what DirectoryOrCreate and
// FileOrCreate create: upstream's 0755 and 0644, less the umask.
func TestHostPathCreates(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	tests := []struct {
		typ      v1.HostPathType
		path     string
		wantMode os.FileMode
	}{
		{v1.HostPathDirectoryOrCreate, "a/b", os.ModeDir | 0o755},
		{v1.HostPathFileOrCreate, "f", 0o644},
	}
	for _, tt := range tests {
		path := filepath.Join(dir, tt.path)
		if err := checkHostPath(path, &tt.typ); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil || fi.Mode() != tt.wantMode {
			t.Fatalf("%s: %v %v, want %v", tt.typ, fi.Mode(), err, tt.wantMode)
		}
	}
}
