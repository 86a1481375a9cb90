package imagepull

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestLimiterConcurrency: the most pulls that ever run at once.
func TestLimiterConcurrency(t *testing.T) {
	three := int32(3)
	tests := []struct {
		name        string
		serialize   bool
		maxParallel *int32
		want        int32
	}{
		{name: "serialized", serialize: true, want: 1},
		{name: "maxParallelImagePulls", maxParallel: &three, want: 3},
		{name: "unbounded", want: 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLimiter(tt.serialize, tt.maxParallel, 0, 0)
			var running, most atomic.Int32
			var wg sync.WaitGroup
			// Every pull runs until the gate opens: once as many as
			// allowed run, and the others had a while to start too.
			gate := make(chan struct{})
			for range 8 {
				wg.Go(func() {
					release, err := l.Acquire(context.Background())
					if err != nil {
						t.Error(err)
						return
					}
					n := running.Add(1)
					for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
					}
					<-gate
					running.Add(-1)
					release()
				})
			}
			deadline := time.Now().Add(10 * time.Second)
			for most.Load() < tt.want && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(50 * time.Millisecond)
			close(gate)
			wg.Wait()
			if got := most.Load(); got != tt.want {
				t.Errorf("at most %d pulls at once, want %d", got, tt.want)
			}
		})
	}
}

// TestLimiterQPS: the bucket lets burst pulls through, then refuses,
// and gives its turn back when it refuses.
func TestLimiterQPS(t *testing.T) {
	l := NewLimiter(true, nil, 1, 2)
	for i := range 2 {
		release, err := l.Acquire(context.Background())
		if err != nil {
			t.Fatalf("pull %d: %v", i, err)
		}
		release()
	}
	if _, err := l.Acquire(context.Background()); !errors.Is(err, ErrQPSExceeded) || err.Error() != "pull QPS exceeded" {
		t.Fatalf("third pull: %v, want pull QPS exceeded", err)
	}
	// The turn was given back: a pull waits only for the next token.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		release, err := l.Acquire(ctx)
		if err == nil {
			release()
			return
		}
		if !errors.Is(err, ErrQPSExceeded) {
			t.Fatalf("a pull after the refusal: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLimiterCanceled: a pull waiting for its turn ends with its context.
func TestLimiterCanceled(t *testing.T) {
	l := NewLimiter(true, nil, 0, 0)
	release, err := l.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := l.Acquire(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("waiting pull: %v, want canceled", err)
	}
	if release, err := (*Limiter)(nil).Acquire(ctx); err != nil || release == nil {
		t.Fatalf("nil limiter: %v", err)
	}
}
