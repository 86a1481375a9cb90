package logs

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

func TestRead(t *testing.T) {
	i64 := func(n int64) *int64 { return &n }
	// A log with both streams and a line split in three, at 0 to 6 ms.
	log := []string{
		cri(at(0), "stdout", "F", "one"),
		cri(at(1), "stderr", "F", "err one"),
		cri(at(2), "stdout", "P", "tw"),
		cri(at(3), "stdout", "P", "o-"),
		cri(at(4), "stdout", "F", "two"),
		cri(at(5), "stderr", "F", "err two"),
		cri(at(6), "stdout", "F", ""),
	}
	// The runtime splits each stream's lines on its own: another stream's
	// line can come between the fragments.
	interleaved := []string{
		cri(at(0), "stdout", "P", "a1"),
		cri(at(1), "stderr", "P", "b1"),
		cri(at(2), "stdout", "F", "a2"),
		cri(at(3), "stderr", "F", "b2"),
	}
	for _, tc := range []struct {
		name       string
		log        []string
		opts       Options
		stdout     string
		stderr     string
		separately bool // stdout and stderr to two writers
	}{
		{name: "everything", log: log,
			stdout: "one\nerr one\ntwo-two\nerr two\n\n"},
		{name: "streams apart", log: log, separately: true,
			stdout: "one\ntwo-two\n\n", stderr: "err one\nerr two\n"},
		{name: "stdout only", log: log, opts: Options{Stream: "Stdout"},
			stdout: "one\ntwo-two\n\n"},
		{name: "stderr only", log: log, opts: Options{Stream: "Stderr"},
			stdout: "err one\nerr two\n"},
		{name: "All", log: log, opts: Options{Stream: "All"},
			stdout: "one\nerr one\ntwo-two\nerr two\n\n"},
		{name: "timestamps", log: log, opts: Options{Timestamps: true},
			stdout: "2026-11-30T10:00:00.000000000Z one\n" +
				"2026-11-30T10:00:00.001000000Z err one\n" +
				"2026-11-30T10:00:00.002000000Z two-two\n" +
				"2026-11-30T10:00:00.005000000Z err two\n" +
				"2026-11-30T10:00:00.006000000Z \n"},
		{name: "since keeps a line by its first fragment", log: log, opts: Options{Since: at(2)},
			stdout: "two-two\nerr two\n\n"},
		{name: "since drops a line by its first fragment", log: log, opts: Options{Since: at(3)},
			stdout: "err two\n\n"},
		{name: "since after everything", log: log, opts: Options{Since: at(7)}},
		{name: "interleaved streams apart", log: interleaved, separately: true, opts: Options{Timestamps: true},
			stdout: "2026-11-30T10:00:00.000000000Z a1a2\n",
			stderr: "2026-11-30T10:00:00.001000000Z b1b2\n"},
		{name: "interleaved streams together", log: interleaved, opts: Options{Timestamps: true},
			stdout: "2026-11-30T10:00:00.000000000Z a1" + "2026-11-30T10:00:00.001000000Z b1" + "a2\n" + "b2\n"},
		{name: "limitBytes cuts mid-line", log: log, opts: Options{LimitBytes: 6},
			stdout: "one\ner"},
		{name: "limitBytes counts timestamps", log: log, opts: Options{LimitBytes: 33, Timestamps: true},
			stdout: "2026-11-30T10:00:00.000000000Z on"},
		{name: "limitBytes counts wanted streams only", log: log, opts: Options{LimitBytes: 10, Stream: "Stderr"},
			stdout: "err one\ner"},
		{name: "limitBytes bigger than the log", log: log, opts: Options{LimitBytes: 1000},
			stdout: "one\nerr one\ntwo-two\nerr two\n\n"},
		{name: "tail 0", log: log, opts: Options{TailLines: i64(0)}},
		{name: "tail 1", log: log, opts: Options{TailLines: i64(1)},
			stdout: "\n"},
		{name: "tail 3 joins the split line", log: log, opts: Options{TailLines: i64(3)},
			stdout: "two-two\nerr two\n\n"},
		{name: "tail 4", log: log, opts: Options{TailLines: i64(4)},
			stdout: "err one\ntwo-two\nerr two\n\n"},
		{name: "tail more than there are", log: log, opts: Options{TailLines: i64(100)},
			stdout: "one\nerr one\ntwo-two\nerr two\n\n"},
		{name: "tail counts a line still being written", opts: Options{TailLines: i64(2)},
			log: []string{
				cri(at(0), "stdout", "F", "a"),
				cri(at(1), "stdout", "F", "b"),
				cri(at(2), "stdout", "P", "c1"),
				cri(at(3), "stdout", "P", "c2"),
			},
			stdout: "b\nc1c2"},
		{name: "tail with timestamps and since", opts: Options{TailLines: i64(2), Timestamps: true, Since: at(2)},
			log: []string{
				cri(at(0), "stdout", "F", "a"),
				cri(at(1), "stdout", "F", "b"),
				cri(at(2), "stdout", "F", "c"),
			},
			stdout: "2026-11-30T10:00:00.002000000Z c\n"},
		{name: "malformed lines are skipped",
			log: []string{
				cri(at(0), "stdout", "F", "a"),
				"garbage\n",
				cri(at(1), "stdin", "F", "b"),
				cri(at(2), "stdout", "F", "c"),
			},
			stdout: "a\nc\n"},
		{name: "an incomplete last line is read",
			log: []string{
				cri(at(0), "stdout", "F", "a"),
				strings.TrimSuffix(cri(at(1), "stdout", "F", "b"), "\n"),
			},
			stdout: "a\nb\n"},
		{name: "an empty log"},
		{name: "docker JSON", separately: true, opts: Options{Timestamps: true},
			log: []string{
				`{"log":"a\n","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n",
				`{"log":"b","stream":"stderr","time":"2026-11-30T10:00:00.001Z"}` + "\n",
				`{"log":"c\n","stream":"stderr","time":"2026-11-30T10:00:00.002Z"}` + "\n",
			},
			stdout: "2026-11-30T10:00:00.000000000Z a\n",
			stderr: "2026-11-30T10:00:00.001000000Z bc\n"},
		{name: "docker JSON tail", opts: Options{TailLines: i64(1)},
			log: []string{
				`{"log":"a\n","stream":"stdout","time":"2026-11-30T10:00:00Z"}` + "\n",
				`{"log":"b","stream":"stdout","time":"2026-11-30T10:00:00.001Z"}` + "\n",
				`{"log":"c\n","stream":"stdout","time":"2026-11-30T10:00:00.002Z"}` + "\n",
			},
			stdout: "bc\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeLog(t, tc.log...)
			var stdout, stderr bytes.Buffer
			errOut := &stdout
			if tc.separately {
				errOut = &stderr
			}
			if err := Read(context.Background(), path, tc.opts, &stdout, errOut, nil); err != nil {
				t.Fatalf("Read: %v", err)
			}
			if stdout.String() != tc.stdout || stderr.String() != tc.stderr {
				t.Errorf("Read wrote\nstdout %q\nstderr %q\nwant\nstdout %q\nstderr %q", stdout.String(), stderr.String(), tc.stdout, tc.stderr)
			}
		})
	}
}

func TestReadReportsMalformedLinesOnce(t *testing.T) {
	path := writeLog(t, "garbage 1\n", cri(at(0), "stdout", "F", "a"), "garbage 2\n")
	var logged bytes.Buffer
	ctx := zerolog.New(&logged).WithContext(context.Background())
	var out bytes.Buffer
	if err := Read(ctx, path, Options{}, &out, &out, nil); err != nil {
		t.Fatal(err)
	}
	got := logged.String()
	if strings.Count(got, "\n") != 1 || !strings.Contains(got, `"lines":2`) || !strings.Contains(got, "garbage 1") || !strings.Contains(got, path) {
		t.Errorf("logged %q, want one warning naming the file, 2 lines and the first", got)
	}
}

func TestReadFollowsSymlink(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	link := filepath.Join(t.TempDir(), "web.log")
	if err := os.Symlink(path, link); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := Read(context.Background(), link, Options{}, &out, &out, nil); err != nil || out.String() != "a\n" {
		t.Errorf("Read through a symlink = %q, %v", out.String(), err)
	}
}

func TestReadErrors(t *testing.T) {
	var out bytes.Buffer
	missing := filepath.Join(t.TempDir(), "0.log")
	if err := Read(context.Background(), missing, Options{}, &out, &out, nil); err == nil || !strings.Contains(err.Error(), missing) {
		t.Errorf("Read of a missing log: %v, want an error naming it", err)
	}

	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	broken := errors.New("connection reset")
	if err := Read(context.Background(), path, Options{}, failingWriter{broken}, nil, nil); !errors.Is(err, broken) {
		t.Errorf("Read to a broken writer: %v, want %v", err, broken)
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }
