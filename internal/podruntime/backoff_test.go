package podruntime

import (
	"testing"
	"time"
)

func TestCrashLoopBackoffDoublesToCapAndResets(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	tests := []struct {
		name string
		max  time.Duration
		want []time.Duration
	}{
		{"default cap 5m", 0, []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}},
		{"cap lowered to 30s", 30 * time.Second, []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second}},
		{"cap below initial", 4 * time.Second, []time.Duration{4 * time.Second, 4 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := NewCrashLoopBackoff(tt.max, clock)
			for i, want := range tt.want {
				finished := now
				b.Next("k", finished)
				if got := b.Get("k"); got != want {
					t.Fatalf("failure %d: delay %s, want %s", i+1, got, want)
				}
				if in, left := b.InBackoffSince("k", finished); !in || left != want {
					t.Fatalf("failure %d: in backoff %v, left %s", i+1, in, left)
				}
				now = now.Add(want) // the restart happens when the delay passed
				if in, _ := b.InBackoffSince("k", finished); in {
					t.Fatalf("failure %d: still in backoff after %s", i+1, want)
				}
				now = now.Add(time.Second) // it runs for a second and crashes
			}
		})
	}
}

func TestCrashLoopBackoffResetAfterTenMinutesRunning(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewCrashLoopBackoff(0, func() time.Time { return now })
	b.Next("k", now)
	b.Next("k", now)
	if got := b.Get("k"); got != 20*time.Second {
		t.Fatalf("delay %s", got)
	}
	// Crashes again after 9 minutes of running: keeps doubling.
	now = now.Add(9 * time.Minute)
	b.Next("k", now)
	if got := b.Get("k"); got != 40*time.Second {
		t.Fatalf("after 9 min: delay %s, want 40s", got)
	}
	// Crashes after running more than 10 minutes: starts over.
	now = now.Add(10*time.Minute + time.Second)
	if in, _ := b.InBackoffSince("k", now); in {
		t.Fatal("a crash after 10 min running must not be in backoff")
	}
	b.Next("k", now)
	if got := b.Get("k"); got != 10*time.Second {
		t.Fatalf("after 10 min running: delay %s, want 10s", got)
	}
}

func TestImagePullBackoff(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := NewImagePullBackoff(func() time.Time { return now })
	if in, _ := b.InBackoffSinceUpdate("img"); in {
		t.Fatal("unknown key in backoff")
	}
	b.Next("img", now)
	now = now.Add(4 * time.Second)
	if in, left := b.InBackoffSinceUpdate("img"); !in || left != 6*time.Second {
		t.Fatalf("in %v left %s", in, left)
	}
	now = now.Add(6 * time.Second)
	if in, _ := b.InBackoffSinceUpdate("img"); in {
		t.Fatal("still in backoff after 10s")
	}
	b.Next("img", now)
	if got := b.Get("img"); got != 20*time.Second {
		t.Fatalf("second failure delay %s", got)
	}
	b.Reset("img")
	if b.Get("img") != 0 {
		t.Fatal("Reset kept the key")
	}
	b.Next("img", now)
	now = now.Add(11 * time.Minute)
	b.GC()
	if b.Get("img") != 0 {
		t.Fatal("GC kept a stale key")
	}
}
