package apisource

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestTTLCache checks the Cache strategy's rules, as upstream's cache-based
// store: fresh for cacheTTL, read again after a registration, NotFound
// kept, another error answered with what was read before (or returned
// when nothing was).
func TestTTLCache(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Now())
	c := newTTLCache(clk)
	key := objectKey{KindSecret, "ns", "s"}
	var reads int
	answer := func(obj runtime.Object, err error) func(context.Context) (runtime.Object, error) {
		return func(context.Context) (runtime.Object, error) { reads++; return obj, err }
	}
	v1s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "1"}}
	v2s := &v1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "2"}}
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "secret"}, "s")
	broken := errors.New("connection refused")
	step := func(name string, read func(context.Context) (runtime.Object, error), want runtime.Object, wantErr error, wantReads int) {
		t.Helper()
		got, err := c.get(t.Context(), key, read)
		if got != want || !errors.Is(err, wantErr) || reads != wantReads {
			t.Errorf("%s: %v, %v after %d reads; want %v, %v after %d", name, got, err, reads, want, wantErr, wantReads)
		}
	}
	step("first read fails", answer(nil, broken), nil, broken, 1)
	step("first read", answer(v1s, nil), v1s, nil, 2)
	step("fresh", answer(v2s, nil), v1s, nil, 2)
	clk.SetTime(clk.Now().Add(cacheTTL))
	step("stale, read fails", answer(nil, broken), v1s, nil, 3)
	step("stale, read", answer(v2s, nil), v2s, nil, 4)
	c.invalidate(key)
	step("registered again", answer(nil, notFound), nil, notFound, 5)
	step("NotFound is not kept fresh", answer(v1s, nil), v1s, nil, 6)
}

// TestChangeDetectionStrategies checks that only Watch watches: Get reads
// each time, Cache once per registration.
func TestChangeDetectionStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy  string
		wantReads int
	}{
		{StrategyGet, 3},
		{StrategyCache, 2},
	} {
		c := newWatchClient(&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}})
		gets := 0
		c.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
			gets++
			return false, nil, nil
		})
		s := New(t.Context(), c, Options{ChangeDetection: tc.strategy})
		pod := podWith("a", "ns", secretVol("s"))
		s.RegisterPod(pod)
		for range 2 {
			if _, err := s.Secret(t.Context(), "ns", "s"); err != nil {
				t.Fatalf("%s: %v", tc.strategy, err)
			}
		}
		s.RegisterPod(pod)
		if _, err := s.Secret(t.Context(), "ns", "s"); err != nil {
			t.Fatalf("%s: %v", tc.strategy, err)
		}
		if n := len(s.objects.watching()); n != 0 {
			t.Errorf("%s: %d watches", tc.strategy, n)
		}
		if gets != tc.wantReads {
			t.Errorf("%s: %d GETs, want %d", tc.strategy, gets, tc.wantReads)
		}
		s.UnregisterPod(pod)
	}
}
