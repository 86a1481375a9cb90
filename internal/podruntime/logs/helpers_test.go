package logs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// at is t0 plus ms milliseconds.
func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// cri is one line in the CRI log format.
func cri(t time.Time, stream, tag, content string) string {
	return t.Format(time.RFC3339Nano) + " " + stream + " " + tag + " " + content + "\n"
}

// writeLog writes a log file of lines in a new directory and returns its path.
func writeLog(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// appendTo writes lines to f at once, as the runtime writes a line.
func appendTo(t *testing.T, f *os.File, lines ...string) {
	t.Helper()
	if _, err := f.WriteString(strings.Join(lines, "")); err != nil {
		t.Fatal(err)
	}
}

func openAppend(t *testing.T, path string) *os.File {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// flushRecorder is a response writer that shows what was written only once
// flushed, as a client of a buffered HTTP response sees it.
type flushRecorder struct {
	mu               sync.Mutex
	pending, flushed bytes.Buffer
}

func (r *flushRecorder) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pending.Write(b)
}

func (r *flushRecorder) Flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending.WriteTo(&r.flushed)
}

func (r *flushRecorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.flushed.String()
}

// waitOutput waits until the client has seen want, with generous slack for
// a loaded machine.
func waitOutput(t *testing.T, r *flushRecorder, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if r.String() == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("client saw %q, want %q", r.String(), want)
}
