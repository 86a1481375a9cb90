package apisource

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// issued is a token request answered at iat for ttl.
func issued(iat time.Time, ttl time.Duration) *authenticationv1.TokenRequest {
	return &authenticationv1.TokenRequest{
		Spec:   authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To(int64(ttl / time.Second))},
		Status: authenticationv1.TokenRequestStatus{Token: "t", ExpirationTimestamp: metav1.NewTime(iat.Add(ttl))},
	}
}

func TestRequiresRefresh(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		age    time.Duration // since issued
		jitter time.Duration
		want   bool
	}{
		{"fresh", time.Hour, 0, 0, false},
		{"just under 80% of an hour", time.Hour, 48*time.Minute - time.Second, 0, false},
		{"at 80% exactly", time.Hour, 48 * time.Minute, 0, false},
		{"past 80%", time.Hour, 48*time.Minute + time.Second, 0, true},
		{"jitter brings it forward", time.Hour, 47*time.Minute + 55*time.Second, 9 * time.Second, true},
		{"600 s token at 479 s", 600 * time.Second, 479 * time.Second, 0, false},
		{"600 s token at 481 s", 600 * time.Second, 481 * time.Second, 0, true},
		{"expired", time.Hour, 2 * time.Hour, 0, true},
		{"48 h token at 23 h", 48 * time.Hour, 23 * time.Hour, 0, false},
		{"48 h token past 24 h", 48 * time.Hour, 24*time.Hour + time.Second, 0, true},
		{"48 h token near 24 h with jitter", 48 * time.Hour, 24*time.Hour - 5*time.Second, 9 * time.Second, true},
		// 20 % of 7 s is 1.4 s, whole seconds as upstream: 1 s.
		{"7 s token, integer 20%", 7 * time.Second, 5*time.Second + 500*time.Millisecond, 0, false},
		{"7 s token past 6 s", 7 * time.Second, 6*time.Second + time.Millisecond, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := testclock.NewFakeClock(epoch.Add(tc.age))
			m := &tokenManager{clock: clk, jitter: func() time.Duration { return tc.jitter }}
			if got := m.requiresRefresh(issued(epoch, tc.ttl)); got != tc.want {
				t.Errorf("requiresRefresh = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequiresRefreshNilExpiration(t *testing.T) {
	m := &tokenManager{clock: testclock.NewFakeClock(epoch.Add(100 * time.Hour)), jitter: func() time.Duration { return 0 }}
	tr := issued(epoch, time.Hour)
	tr.Spec.ExpirationSeconds = nil
	if m.requiresRefresh(tr) {
		t.Error("a request without expirationSeconds needs no refresh, as upstream")
	}
}

func TestTokenKey(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}
	base := tokenRequest(pod, &v1.ServiceAccountTokenProjection{Audience: "a", ExpirationSeconds: ptr.To(int64(600))})
	key := tokenKey("sa", "ns", base)
	same := tokenKey("sa", "ns", tokenRequest(pod, &v1.ServiceAccountTokenProjection{Audience: "a", ExpirationSeconds: ptr.To(int64(600))}))
	if key != same {
		t.Errorf("the same request gives %q and %q", key, same)
	}
	other := pod.DeepCopy()
	other.UID = "uid-2"
	for name, k := range map[string]string{
		"service account": tokenKey("sa2", "ns", base),
		"namespace":       tokenKey("sa", "ns2", base),
		"audience":        tokenKey("sa", "ns", tokenRequest(pod, &v1.ServiceAccountTokenProjection{Audience: "b", ExpirationSeconds: ptr.To(int64(600))})),
		"no audience":     tokenKey("sa", "ns", tokenRequest(pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(600))})),
		"expiration":      tokenKey("sa", "ns", tokenRequest(pod, &v1.ServiceAccountTokenProjection{Audience: "a", ExpirationSeconds: ptr.To(int64(3600))})),
		"bound pod":       tokenKey("sa", "ns", tokenRequest(other, &v1.ServiceAccountTokenProjection{Audience: "a", ExpirationSeconds: ptr.To(int64(600))})),
	} {
		if k == key {
			t.Errorf("another %s gives the same key %q", name, k)
		}
	}
	if want := `"sa"/"ns"/[]string{"a"}/600/`; !strings.HasPrefix(key, want) {
		t.Errorf("key %q does not start as upstream's %q", key, want)
	}
}

// tokenClient is a fake clientset that answers TokenRequests, counting
// them, and fails them while fail is set.
type tokenClient struct {
	*fake.Clientset
	clk      *testclock.FakeClock
	requests []*authenticationv1.TokenRequest
	names    []string
	fail     error
}

func newTokenClient(clk *testclock.FakeClock) *tokenClient {
	c := &tokenClient{Clientset: fake.NewClientset(), clk: clk}
	c.PrependReactor("create", "serviceaccounts", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "token" {
			return false, nil, nil
		}
		if c.fail != nil {
			return true, nil, c.fail
		}
		ca := a.(k8stesting.CreateActionImpl)
		tr := ca.GetObject().(*authenticationv1.TokenRequest).DeepCopy()
		c.requests = append(c.requests, tr.DeepCopy())
		c.names = append(c.names, a.GetNamespace()+"/"+ca.Name)
		tr.Status.Token = "token-" + string(rune('0'+len(c.requests)))
		tr.Status.ExpirationTimestamp = metav1.NewTime(c.clk.Now().Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))
		return true, tr, nil
	})
	return c
}

func TestServiceAccountTokenRequest(t *testing.T) {
	clk := testclock.NewFakeClock(epoch)
	c := newTokenClient(clk)
	// No cleanup in the background: it would drop the expired token
	// before the last request can find it.
	stopped, stop := context.WithCancel(t.Context())
	stop()
	s := New(stopped, c, Options{Clock: clk})
	s.tokens.jitter = func() time.Duration { return 0 }
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "uid-1"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}
	ctx := t.Context()

	tok, err := s.ServiceAccountToken(ctx, pod, &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To(int64(600)), Path: "token"})
	if err != nil || tok.Token != "token-1" || tok.ExpirationTimestamp.IsZero() {
		t.Fatalf("ServiceAccountToken = %+v, %v", tok, err)
	}
	tr := c.requests[0]
	if c.names[0] != "ns/sa" {
		t.Errorf("token asked for %s, want ns/sa", c.names[0])
	}
	if len(tr.Spec.Audiences) != 1 || tr.Spec.Audiences[0] != "vault" {
		t.Errorf("audiences %v, want [vault]", tr.Spec.Audiences)
	}
	if *tr.Spec.ExpirationSeconds != 600 {
		t.Errorf("expirationSeconds %d, want 600", *tr.Spec.ExpirationSeconds)
	}
	want := authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-1"}
	if *tr.Spec.BoundObjectRef != want {
		t.Errorf("bound to %+v, want %+v", *tr.Spec.BoundObjectRef, want)
	}

	// No audience: none asked, so the API server's own apply.
	if _, err := s.ServiceAccountToken(ctx, pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(600))}); err != nil {
		t.Fatal(err)
	}
	if a := c.requests[1].Spec.Audiences; a != nil {
		t.Errorf("no audience asked as %#v, want nil", a)
	}

	// Cached until 80 % of its life, then refreshed.
	proj := &v1.ServiceAccountTokenProjection{Audience: "vault", ExpirationSeconds: ptr.To(int64(600))}
	clk.Step(470 * time.Second)
	if tok, _ := s.ServiceAccountToken(ctx, pod, proj); tok.Token != "token-1" || len(c.requests) != 2 {
		t.Errorf("at 470 s: %q after %d requests, want the cached token-1 after 2", tok.Token, len(c.requests))
	}
	clk.Step(20 * time.Second)
	if tok, _ := s.ServiceAccountToken(ctx, pod, proj); tok.Token != "token-3" {
		t.Errorf("at 490 s: %q, want a new token-3", tok.Token)
	}

	// A failed refresh returns the cached token while it is valid, and an
	// error once it has expired.
	c.fail = errors.New("apiserver down")
	clk.Step(490 * time.Second)
	if tok, err := s.ServiceAccountToken(ctx, pod, proj); tok.Token != "token-3" || err != nil {
		t.Errorf("refresh failing, token valid: %q, %v; want token-3", tok.Token, err)
	}
	clk.Step(200 * time.Second)
	if _, err := s.ServiceAccountToken(ctx, pod, proj); err == nil || !strings.Contains(err.Error(), "expired and refresh failed") {
		t.Errorf("refresh failing, token expired: %v", err)
	}
	if _, err := s.ServiceAccountToken(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x", UID: "u"}, Spec: v1.PodSpec{ServiceAccountName: "sa"}}, proj); err == nil || strings.Contains(err.Error(), "token-") {
		t.Errorf("first request failing: %v", err)
	}
}

func TestTokenCacheDropsPodAndExpired(t *testing.T) {
	clk := testclock.NewFakeClock(epoch)
	c := newTokenClient(clk)
	m := newTokenManager(c, clk, zerolog.Nop())
	ctx := t.Context()
	podA := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "a"}}
	podB := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "b"}}
	for _, p := range []struct {
		pod *v1.Pod
		exp int64
	}{{podA, 600}, {podA, 3600}, {podB, 600}, {podB, 7200}} {
		if _, err := m.get(ctx, "ns", "sa", tokenRequest(p.pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(p.exp)})); err != nil {
			t.Fatal(err)
		}
	}
	cached := func() map[types.UID]int {
		m.mu.RLock()
		defer m.mu.RUnlock()
		out := map[types.UID]int{}
		for _, tr := range m.cache {
			out[tr.Spec.BoundObjectRef.UID]++
		}
		return out
	}
	m.deletePod("a")
	if got := cached(); got["a"] != 0 || got["b"] != 2 {
		t.Errorf("after deletePod(a): %v", got)
	}
	clk.Step(time.Hour)
	m.cleanup()
	if got := cached(); got["b"] != 1 {
		t.Errorf("after an hour's cleanup: %v, want b's 2 h token only", got)
	}
}

func TestTokenCleanupRuns(t *testing.T) {
	clk := testclock.NewFakeClock(epoch)
	m := newTokenManager(newTokenClient(clk), clk, zerolog.Nop())
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "a"}}
	if _, err := m.get(t.Context(), "ns", "sa", tokenRequest(pod, &v1.ServiceAccountTokenProjection{ExpirationSeconds: ptr.To(int64(600))})); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); m.cleanupEvery(ctx, tokenGCPeriod) }()
	defer func() { cancel(); <-done }()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(11 * time.Minute)
	deadline := time.Now().Add(10 * time.Second)
	for {
		m.mu.RLock()
		n := len(m.cache)
		m.mu.RUnlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the expired token is still cached after a cleanup period")
		}
		time.Sleep(5 * time.Millisecond)
	}
}
