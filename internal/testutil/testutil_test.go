package testutil

import (
	"errors"
	"fmt"
	"sync"
	"testing"
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

func TestWantErr(t *testing.T) {
	for _, tc := range []struct {
		name      string
		err       error
		want      string
		stop, bad bool
	}{
		{name: "no error wanted, none", stop: false},
		{name: "no error wanted, one", err: errors.New("boom"), bad: true},
		{name: "error wanted, matching", err: errors.New("a boom here"), want: "boom", stop: true},
		{name: "error wanted, other", err: errors.New("bang"), want: "boom", stop: true, bad: true},
		{name: "error wanted, none", want: "boom", stop: true, bad: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			if stop := WantErr(r, tc.err, tc.want); stop != tc.stop || r.failed != tc.bad {
				t.Errorf("WantErr = %v, failed %v; want %v, %v", stop, r.failed, tc.stop, tc.bad)
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
