package retry

import (
	"testing"
	"time"
)

func TestAfter(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name         string
		initial, max time.Duration
		n            int
		want         time.Duration
	}{
		{"first failure", 10 * s, 300 * s, 1, 10 * s},
		{"doubles", 10 * s, 300 * s, 3, 40 * s},
		{"capped", 10 * s, 300 * s, 6, 300 * s},
		{"stays capped without overflow", 10 * s, 300 * s, 1000, 300 * s},
		{"no failure counts as one", 10 * s, 300 * s, 0, 10 * s},
		{"initial above max is max", 10 * s, 4 * s, 1, 4 * s},
		{"zero initial stays zero", 0, 300 * s, 5, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (Backoff{Initial: tt.initial, Max: tt.max}).After(tt.n); got != tt.want {
				t.Errorf("After(%d) = %s, want %s", tt.n, got, tt.want)
			}
		})
	}
}

// TestFail runs failure sequences; each step fails at at (offset from t0)
// noted at now, then checks the delay.
func TestFail(t *testing.T) {
	const ms = time.Millisecond
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	type step struct {
		at, now time.Duration
		reset   bool // Reset before the failure
		want    time.Duration
	}
	tests := []struct {
		name  string
		b     Backoff
		steps []step
	}{
		{"doubles to the cap", Backoff{Initial: 100 * ms, Max: 500 * ms},
			[]step{{want: 100 * ms}, {want: 200 * ms}, {want: 400 * ms}, {want: 500 * ms}, {want: 500 * ms}}},
		{"without Stable time never starts over", Backoff{Initial: 100 * ms, Max: time.Second},
			[]step{{want: 100 * ms}, {at: time.Hour, now: time.Hour, want: 200 * ms}}},
		{"Reset starts over", Backoff{Initial: 100 * ms, Max: time.Second},
			[]step{{want: 100 * ms}, {want: 200 * ms}, {reset: true, want: 100 * ms}}},
		{"a failure within Stable keeps doubling", Backoff{Initial: 100 * ms, Max: time.Second, Stable: time.Minute},
			[]step{{want: 100 * ms}, {at: time.Minute, now: time.Minute, want: 200 * ms}}},
		{"a failure past Stable starts over", Backoff{Initial: 100 * ms, Max: time.Second, Stable: time.Minute},
			[]step{{want: 100 * ms}, {want: 200 * ms}, {at: time.Minute + 1, now: time.Minute + 1, want: 100 * ms}}},
		// A container restarted at now=0 that crashed again after a while:
		// its finish time, not the time the crash is noted, decides.
		{"at decides, now is remembered", Backoff{Initial: 100 * ms, Max: time.Second, Stable: time.Minute},
			[]step{{now: 2 * time.Minute, want: 100 * ms}, {at: 2*time.Minute + 30*time.Second, now: 3 * time.Minute, want: 200 * ms},
				{at: 3*time.Minute + 50*time.Second, now: 4 * time.Minute, want: 400 * ms},
				{at: 5*time.Minute + 1, now: 5*time.Minute + 1, want: 100 * ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.b
			if b.Delay() != 0 || !b.Expired(t0) {
				t.Fatalf("fresh backoff: delay %s, expired %v", b.Delay(), b.Expired(t0))
			}
			for i, st := range tt.steps {
				if st.reset {
					b.Reset()
				}
				if got := b.Fail(t0.Add(st.at), t0.Add(st.now)); got != st.want {
					t.Fatalf("failure %d: delay %s, want %s", i+1, got, st.want)
				}
				if b.Delay() != st.want || !b.Last().Equal(t0.Add(st.now)) {
					t.Fatalf("failure %d: Delay %s Last %s", i+1, b.Delay(), b.Last())
				}
			}
		})
	}
}
