// Package testutil holds the small helpers that unit tests across the tree
// share, so that each package's tests do not carry their own copy.
// Production code does not import it.
package testutil

import (
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/record"
)

// WantErr checks err against a table case's expected error: when want is
// not empty, err must contain it, and WantErr reports true so that the case
// stops there; when want is empty, any error fails the test. The usual use:
//
//	got, err := f(tc.in)
//	if testutil.WantErr(t, err, tc.wantErr) {
//		return
//	}
func WantErr(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want one containing %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// WantErrText is WantErr for a case that expects an error of exactly the
// text want, not merely one that contains it.
func WantErrText(t testing.TB, err error, want string) bool {
	t.Helper()
	if want != "" {
		if err == nil || err.Error() != want {
			t.Fatalf("err = %v, want %q", err, want)
		}
		return true
	}
	if err != nil {
		t.Fatal(err)
	}
	return false
}

// LockedBuffer is a log sink that goroutines and the test share: writes and
// reads hold one lock.
type LockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

// Write appends p.
func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what was written so far.
func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Events takes the events rec has recorded and nobody has read yet, each
// as rec writes them ("TYPE REASON MESSAGE"), without waiting for more.
func Events(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

// EventWithPrefix checks that the next event rec holds, already recorded,
// begins with prefix.
func EventWithPrefix(t testing.TB, rec *record.FakeRecorder, prefix string) {
	t.Helper()
	select {
	case ev := <-rec.Events:
		if !strings.HasPrefix(ev, prefix) {
			t.Errorf("event %q, want one beginning %q", ev, prefix)
		}
	default:
		t.Errorf("no event, want one beginning %q", prefix)
	}
}
