package nodelogs

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// logDir is a log directory with a file per heuristic, a link that stays
// inside and links that lead out.
func logDir(t *testing.T) string {
	t.Helper()
	dir, outside := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		t.Helper()
		if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "plain"), "plain line\n")
	write(filepath.Join(dir, "dotlog.log"), "dotlog line\n")
	write(filepath.Join(dir, "nested", "nested.log"), "nested line\n")
	write(filepath.Join(dir, "apt", "history.log"), "history line\n")
	write(filepath.Join(outside, "secret"), "secret line\n")
	link("apt/history.log", "inside.log")
	link(filepath.Join(outside, "secret"), "escape.log")
	link("../"+filepath.Base(outside)+"/secret", "relescape.log")
	link(outside, "escapedir")
	return dir
}

func TestStat(t *testing.T) {
	s := Source{Dir: logDir(t)}
	for name, want := range map[string]string{
		"apt/history.log":   "",
		"./apt/history.log": "",
		"inside.log":        "",
		"/apt/history.log":  "path escapes from parent", // os.Root takes relative names only, as upstream's
		"../etc/passwd":     "path escapes from parent",
		"escape.log":        "path escapes from parent",
		"relescape.log":     "path escapes from parent",
		"escapedir/secret":  "path escapes from parent",
		"apt/none.log":      "no such file or directory",
	} {
		err := s.Stat(name)
		if (err == nil) != (want == "") || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("Stat(%q) = %v, want %q", name, err, want)
		}
	}
}

// TestCopyWithoutJournal runs service queries where journalctl is missing
// or knows no such unit: the services' log files are looked for, as
// upstream.
func TestCopyWithoutJournal(t *testing.T) {
	dir := logDir(t)
	journals := map[string]string{"missing": filepath.Join(t.TempDir(), "no-journalctl")}
	if path, err := exec.LookPath("journalctl"); err == nil {
		journals["this machine's"] = path
	}
	for name, journalctl := range journals {
		s := Source{Dir: dir, Journalctl: journalctl}
		t.Run(name, func(t *testing.T) {
			tests := []struct {
				services []string
				opts     Options
				want     string
			}{
				{services: []string{"plain"}, want: "plain line\n"},
				{services: []string{"dotlog"}, want: "dotlog line\n"},
				{services: []string{"nested"}, want: "nested line\n"},
				{services: []string{"plain", "dotlog"}, want: "plain line\ndotlog line\n"},
				{services: []string{"ghost-actorlet-test"}, want: "\nlog not found for ghost-actorlet-test\n"},
				{services: []string{"escape"}, want: "\nerror getting log for escape: openat escape.log: path escapes from parent\n"},
				{services: []string{".."}, want: "\nerror getting log for ..: openat ..: path escapes from parent\n"},
				{services: []string{"plain"}, opts: Options{TailLines: new(1)},
					want: "\noptions present and query resolved to log files for [plain]\ntry without specifying options\n"},
			}
			for _, tt := range tests {
				var out bytes.Buffer
				s.Copy(context.Background(), &out, &Query{Services: tt.services, Options: tt.opts})
				if out.String() != tt.want {
					t.Errorf("%q %+v: got %q, want %q", tt.services, tt.opts, out.String(), tt.want)
				}
			}
		})
	}
}

// A request gone before its query runs gets nothing, as upstream.
func TestCopyAfterTheRequest(t *testing.T) {
	s := Source{Dir: logDir(t), Journalctl: filepath.Join(t.TempDir(), "no-journalctl")}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var out bytes.Buffer
	s.Copy(ctx, &out, &Query{Services: []string{"plain"}})
	if want := ""; out.String() != want {
		t.Errorf("got %q, want %q", out.String(), want)
	}
}
