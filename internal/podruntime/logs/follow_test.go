package logs

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// testPeriod stands for checkPeriod, so that a follow notices a stopped
// container quickly.
const testPeriod = 20 * time.Millisecond

// follower is a Read with Follow running in the background.
type follower struct {
	out     *flushRecorder
	running atomic.Bool
	checks  atomic.Int64
	cancel  context.CancelFunc
	done    chan error
}

func follow(t *testing.T, path string, opts Options) *follower {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f := &follower{out: &flushRecorder{}, cancel: cancel, done: make(chan error, 1)}
	f.running.Store(true)
	running := func(context.Context) (bool, error) {
		f.checks.Add(1)
		return f.running.Load(), nil
	}
	opts.Follow = true
	go func() { f.done <- read(ctx, path, opts, f.out, f.out, running, testPeriod) }()
	t.Cleanup(func() {
		cancel()
		<-f.done
	})
	return f
}

// stop says the container stopped and waits for Read to end.
func (f *follower) stop(t *testing.T) {
	t.Helper()
	f.running.Store(false)
	f.wait(t, nil)
}

// wait waits for Read to return want, with generous slack.
func (f *follower) wait(t *testing.T, want error) {
	t.Helper()
	select {
	case err := <-f.done:
		f.done <- err // for the cleanup
		if !errors.Is(err, want) {
			t.Fatalf("Read returned %v, want %v", err, want)
		}
	case <-time.After(10 * testPeriod * 3):
		t.Fatalf("Read did not return; client saw %q", f.out.String())
	}
}

func TestFollowDeliversAppendedLines(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	w := openAppend(t, path)
	f := follow(t, path, Options{})
	waitOutput(t, f.out, "a\n")

	appendTo(t, w, cri(at(1), "stderr", "F", "b"))
	waitOutput(t, f.out, "a\nb\n")
	appendTo(t, w, cri(at(2), "stdout", "P", "c1"))
	waitOutput(t, f.out, "a\nb\nc1")
	// A line written in two writes is read once whole.
	line := cri(at(3), "stdout", "F", "c2")
	appendTo(t, w, line[:10])
	time.Sleep(3 * testPeriod)
	appendTo(t, w, line[10:])
	waitOutput(t, f.out, "a\nb\nc1c2\n")

	f.stop(t)
	if got := f.out.String(); got != "a\nb\nc1c2\n" {
		t.Errorf("client saw %q", got)
	}
}

func TestFollowWithTailAndLimit(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"), cri(at(1), "stdout", "F", "b"))
	w := openAppend(t, path)
	tail := int64(1)
	f := follow(t, path, Options{TailLines: &tail, LimitBytes: 8})
	waitOutput(t, f.out, "b\n")
	appendTo(t, w, cri(at(2), "stdout", "F", "c"))
	waitOutput(t, f.out, "b\nc\n")
	// The limit ends the follow.
	appendTo(t, w, cri(at(3), "stdout", "F", "ddddd"))
	f.wait(t, nil)
	if got := f.out.String(); got != "b\nc\ndddd" {
		t.Errorf("client saw %q", got)
	}
}

func TestFollowAcrossRotation(t *testing.T) {
	path := writeLog(t)
	runtime := openAppend(t, path) // the runtime's descriptor, kept across the rename
	appendTo(t, runtime, cri(at(0), "stdout", "F", "a"))
	f := follow(t, path, Options{})
	waitOutput(t, f.out, "a\n")

	// As the gc actor rotates: rename, then the runtime reopens the path.
	appendTo(t, runtime, cri(at(1), "stdout", "F", "b"))
	rotated := path + ".20261130-100000"
	if err := os.Rename(path, rotated); err != nil {
		t.Fatal(err)
	}
	appendTo(t, runtime, cri(at(2), "stdout", "P", "c1"))
	next := openAppend(t, path)
	time.Sleep(3 * testPeriod) // the new file exists, empty: the old one may still be written
	appendTo(t, runtime, cri(at(3), "stdout", "F", "c2"))
	runtime.Close()
	appendTo(t, next, cri(at(4), "stdout", "F", "d"))
	waitOutput(t, f.out, "a\nb\nc1c2\nd\n")
	appendTo(t, next, cri(at(5), "stdout", "F", "e"))
	waitOutput(t, f.out, "a\nb\nc1c2\nd\ne\n")

	// And a second rotation, to a file written to at once.
	if err := os.Rename(path, rotated+"1"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(cri(at(6), "stdout", "F", "f")), 0o644); err != nil {
		t.Fatal(err)
	}
	waitOutput(t, f.out, "a\nb\nc1c2\nd\ne\nf\n")
	f.stop(t)
	if got := f.out.String(); got != "a\nb\nc1c2\nd\ne\nf\n" {
		t.Errorf("client saw %q", got)
	}
}

func TestFollowEndsWhenTheContainerStopped(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, path string) // before the container stops
		want   string
	}{
		{name: "drained", want: "a\nb\n"},
		{name: "after lines written meanwhile", want: "a\nb\nc\n", before: func(t *testing.T, path string) {
			appendTo(t, openAppend(t, path), cri(at(2), "stdout", "F", "c"))
		}},
		{name: "with an incomplete last line", want: "a\nb\nc\n", before: func(t *testing.T, path string) {
			appendTo(t, openAppend(t, path), strings.TrimSuffix(cri(at(2), "stdout", "F", "c"), "\n"))
		}},
		{name: "after a rotation to an empty file", want: "a\nb\nc\n", before: func(t *testing.T, path string) {
			w := openAppend(t, path)
			if err := os.Rename(path, path+".20261130-100000"); err != nil {
				t.Fatal(err)
			}
			openAppend(t, path)
			appendTo(t, w, cri(at(2), "stdout", "F", "c"))
		}},
		{name: "after the log was removed", want: "a\nb\n", before: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeLog(t, cri(at(0), "stdout", "F", "a"), cri(at(1), "stdout", "F", "b"))
			f := follow(t, path, Options{})
			waitOutput(t, f.out, "a\nb\n")
			if tc.before != nil {
				tc.before(t, path)
			}
			f.stop(t)
			if got := f.out.String(); got != tc.want {
				t.Errorf("client saw %q, want %q", got, tc.want)
			}
		})
	}
}

func TestFollowOfAStoppedContainerEndsAtOnce(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out := &flushRecorder{}
	start := time.Now()
	// With the real period: the first end of the log asks at once.
	err := Read(ctx, path, Options{Follow: true}, out, out, func(context.Context) (bool, error) { return false, nil })
	if err != nil || out.String() != "a\n" {
		t.Errorf("Read = %q, %v", out.String(), err)
	}
	if d := time.Since(start); d > checkPeriod/2 {
		t.Errorf("Read took %v for a stopped container", d)
	}
}

func TestFollowCancel(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	f := follow(t, path, Options{})
	waitOutput(t, f.out, "a\n")
	f.cancel()
	f.wait(t, context.Canceled)
}

func TestFollowQuietLogCostsLittle(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	f := follow(t, path, Options{})
	waitOutput(t, f.out, "a\n")
	before := f.checks.Load()
	time.Sleep(10 * testPeriod)
	// One check per period, and one at the start; 3x slack.
	if n := f.checks.Load() - before; n > 3*11 {
		t.Errorf("%d checks in 10 periods of a quiet log", n)
	}
}

func TestFollowRunningError(t *testing.T) {
	path := writeLog(t, cri(at(0), "stdout", "F", "a"))
	broken := errors.New("runtime says no")
	out := &flushRecorder{}
	err := read(context.Background(), path, Options{Follow: true}, out, out,
		func(context.Context) (bool, error) { return false, broken }, testPeriod)
	if !errors.Is(err, broken) || !strings.Contains(err.Error(), path) {
		t.Errorf("Read = %v, want %v naming %s", err, broken, path)
	}
}
