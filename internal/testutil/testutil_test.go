package testutil

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
)

// recorder is a testing.TB that records a Fatal instead of stopping the
// goroutine, so that WantErr's failures can be checked.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Fatal(...any)          { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Errorf(string, ...any) { r.failed = true }

func TestWantErr(t *testing.T) {
	boom, aBoomHere, bang := errors.New("boom"), errors.New("a boom here"), errors.New("bang")
	for _, tc := range []struct {
		name      string
		check     func(testing.TB, error, string) bool
		err       error
		want      string
		stop, bad bool
	}{
		{name: "no error wanted, none", check: WantErr},
		{name: "no error wanted, one", check: WantErr, err: boom, bad: true},
		{name: "error wanted, containing it", check: WantErr, err: aBoomHere, want: "boom", stop: true},
		{name: "error wanted, other", check: WantErr, err: bang, want: "boom", stop: true, bad: true},
		{name: "error wanted, none", check: WantErr, want: "boom", stop: true, bad: true},
		{name: "text: no error wanted, none", check: WantErrText},
		{name: "text: no error wanted, one", check: WantErrText, err: boom, bad: true},
		{name: "text: error wanted, the same", check: WantErrText, err: boom, want: "boom", stop: true},
		{name: "text: error wanted, containing it", check: WantErrText, err: aBoomHere, want: "boom", stop: true, bad: true},
		{name: "text: error wanted, none", check: WantErrText, want: "boom", stop: true, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if stop := tc.check(r, tc.err, tc.want); stop != tc.stop || r.failed != tc.bad {
				t.Errorf("stop = %v, failed %v; want %v, %v", stop, r.failed, tc.stop, tc.bad)
			}
		})
	}
}

func TestLockedBuffer(t *testing.T) {
	var b LockedBuffer
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(&b, "%d", i)
			_ = b.String()
		}()
	}
	wg.Wait()
	if got := len(b.String()); got != 4 {
		t.Errorf("%d bytes written, want 4", got)
	}
}

func TestEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	if got := Events(rec); len(got) != 0 {
		t.Fatalf("events of a new recorder: %q", got)
	}
	rec.Event(&v1.Pod{}, v1.EventTypeWarning, "Failed", "one")
	rec.Event(&v1.Pod{}, v1.EventTypeNormal, "Pulled", "two")
	if got := Events(rec); len(got) != 2 || got[0] != "Warning Failed one" || got[1] != "Normal Pulled two" {
		t.Errorf("events = %q", got)
	}
	if got := Events(rec); len(got) != 0 {
		t.Errorf("events taken twice: %q", got)
	}
}

func TestEventWithPrefix(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	for _, tc := range []struct {
		name   string
		event  string // "": none recorded
		prefix string
		bad    bool
	}{
		{name: "matching", event: "one", prefix: "Warning Failed o"},
		{name: "other", event: "one", prefix: "Warning Failed t", bad: true},
		{name: "none", prefix: "Warning", bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.event != "" {
				rec.Event(&v1.Pod{}, v1.EventTypeWarning, "Failed", tc.event)
			}
			r := &recorder{TB: t}
			if EventWithPrefix(r, rec, tc.prefix); r.failed != tc.bad {
				t.Errorf("failed %v, want %v", r.failed, tc.bad)
			}
		})
	}
}
