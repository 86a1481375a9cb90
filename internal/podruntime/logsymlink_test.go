package podruntime

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLogSymlink(t *testing.T) {
	id := strings.Repeat("ab", 32)
	long := strings.Repeat("n", 253)
	tests := []struct {
		name, pod, namespace, container, id string
		want                                string
	}{
		{"upstream's naming", "web", "default", "app", id, "/var/log/containers/web_default_app-" + id + ".log"},
		{"cut to ext4's 255 bytes", long, "default", "app", id, "/var/log/containers/" + (long + "_default_app-" + id)[:251] + ".log"},
	}
	for _, tt := range tests {
		got := LogSymlink(DefaultContainerLogsDir, tt.pod, tt.namespace, tt.container, tt.id)
		if got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
		if n := len(filepath.Base(got)); n > 255 {
			t.Errorf("%s: name of %d bytes", tt.name, n)
		}
	}
}

func TestContainerIDFromLogSymlink(t *testing.T) {
	tests := []struct {
		path, want string
		ok         bool
	}{
		{"/var/log/containers/web_default_app-0123456789.log", "0123456789", true},
		{"/var/log/containers/my-pod_default_my-app-0123456789.log", "0123456789", true},
		{"/var/log/containers/web_default_app-01234.log", "", false},
		{"/var/log/containers/web_default_app-0123456789.txt", "", false},
		{"/var/log/containers/nodash.log", "", false},
	}
	for _, tt := range tests {
		got, err := ContainerIDFromLogSymlink(tt.path)
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("%s: %q, %v; want %q ok %v", tt.path, got, err, tt.want, tt.ok)
		}
	}
}

func TestLinkContainerLog(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "containers") // made on first use
	logs := t.TempDir()
	logPath := filepath.Join(logs, "0.log")
	if err := os.WriteFile(logPath, []byte("line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &Runtime{Opts: Options{ContainerLogsDir: dir}}
	r.linkContainerLog("web", "default", "app", "c0123456", logPath)
	link := LogSymlink(dir, "web", "default", "app", "c0123456")
	if target, err := os.Readlink(link); err != nil || target != logPath {
		t.Fatalf("link %s -> %q, %v; want %s", link, target, err, logPath)
	}
	// No log file, no link: it would only dangle.
	r.linkContainerLog("web", "default", "side", "c6543210", filepath.Join(logs, "missing.log"))
	if _, err := os.Lstat(LogSymlink(dir, "web", "default", "side", "c6543210")); !os.IsNotExist(err) {
		t.Errorf("link to a missing log made: %v", err)
	}
	r.unlinkContainerLog("web", "default", "app", "c0123456")
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("link left after unlink: %v", err)
	}
	r.unlinkContainerLog("web", "default", "app", "c0123456") // already gone: nothing to do
	// Without a directory, nothing is linked.
	(&Runtime{}).linkContainerLog("web", "default", "app", "c0123456", logPath)
}
