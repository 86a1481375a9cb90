package logind_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/internal/logind"
	"github.com/actorlet/actorlet/internal/logind/fakelogind"
)

// within bounds each wait for the bus, with 3x slack.
const within = 15 * time.Second

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestStartWatch runs the edge against the stand-in on a private bus: the
// delay raised only when logind's is shorter (the drop-in as upstream
// writes it, logind reloaded), the delay lock with upstream's fields,
// PrepareForShutdown's values, and the lock released.
func TestStartWatch(t *testing.T) {
	for _, tc := range []struct {
		name             string
		delay, requested time.Duration
		wantRaised       time.Duration
	}{
		{"logind's delay is enough", 30 * time.Second, 20 * time.Second, 0},
		{"logind's delay is raised", 5 * time.Second, 20 * time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := fakelogind.Start(t, tc.delay)
			t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", fake.Address)
			w, err := logind.StartWatch(fake.ConfDir, tc.requested)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Conn.Close()
			if w.Raised != tc.wantRaised {
				t.Errorf("raised %v, want %v", w.Raised, tc.wantRaised)
			}
			dropIn := filepath.Join(fake.ConfDir, logind.DropIn)
			b, err := os.ReadFile(dropIn)
			if tc.wantRaised == 0 {
				if err == nil || fake.Reloads() != 0 {
					t.Errorf("drop-in written (%q) or logind reloaded (%d) with a delay long enough", b, fake.Reloads())
				}
			} else {
				if want := "# Kubelet logind override\n[Login]\nInhibitDelayMaxSec=20\n"; string(b) != want || err != nil {
					t.Errorf("drop-in %q (%v), want %q", b, err, want)
				}
				if fake.InhibitDelay() != tc.requested || fake.Reloads() != 1 {
					t.Errorf("logind's delay %v after %d reloads, want %v after 1", fake.InhibitDelay(), fake.Reloads(), tc.requested)
				}
			}
			locks := fake.Locks()
			if len(locks) != 1 {
				t.Fatalf("%d locks, want 1", len(locks))
			}
			if want := (fakelogind.Lock{Who: "kubelet", Why: "Kubelet needs time to handle node shutdown", What: "shutdown", Mode: "delay"}); locks[0] != want {
				t.Errorf("lock %+v, want %+v", locks[0], want)
			}
			for _, active := range []bool{true, false} {
				if err := fake.PrepareForShutdown(active); err != nil {
					t.Fatal(err)
				}
				select {
				case got := <-w.Shutdown:
					if got != active {
						t.Errorf("PrepareForShutdown(%v) seen as %v", active, got)
					}
				case <-time.After(within):
					t.Fatalf("PrepareForShutdown(%v) not seen", active)
				}
			}
			if err := w.Lock.Release(); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the lock released", func() bool { return fake.Locks()[0].Released })
			w.Conn.Close()
			select {
			case _, open := <-w.Shutdown:
				if open {
					t.Error("a signal after the connection closed")
				}
			case <-time.After(within):
				t.Error("the watch did not end with the connection")
			}
		})
	}
}

// TestStartWatchFails: logind's delay that will not rise, and no logind at
// all, fail with upstream's errors and leave no lock.
func TestStartWatchFails(t *testing.T) {
	fake := fakelogind.Start(t, 5*time.Second)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", fake.Address)
	// A drop-in directory the stand-in does not read: the reload changes
	// nothing.
	_, err := logind.StartWatch(t.TempDir(), 20*time.Second)
	if want := "node shutdown manager was timed out after 5 attempts waiting for logind InhibitDelayMaxSec to update to 20s (ShutdownGracePeriod), current value is 5s"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
	if n := len(fake.Locks()); n != 0 {
		t.Errorf("%d locks taken", n)
	}
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "none"))
	if _, err := logind.StartWatch(t.TempDir(), time.Second); err == nil {
		t.Error("no error without a bus")
	}
}
