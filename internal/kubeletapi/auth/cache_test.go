package auth

import (
	"context"
	"errors"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestTokenCache: answers are cached for the TTL, authenticated or not;
// errors are not cached.
func TestTokenCache(t *testing.T) {
	fastRetries(t)
	api := newFakeAPI()
	clock := clocktesting.NewFakeClock(time.Now())
	tokens := newTokenReviewer(api.clientset.AuthenticationV1().TokenReviews(), time.Minute, clock)
	ctx := context.Background()
	steps := []struct {
		name    string
		token   string
		advance time.Duration
		apiErr  error
		ok      bool
		err     bool
		calls   int // TokenReviews made so far
	}{
		{name: "first good", token: "good", ok: true, calls: 1},
		{name: "good cached", token: "good", advance: 59 * time.Second, ok: true, calls: 1},
		{name: "good expired", token: "good", advance: 2 * time.Second, ok: true, calls: 2},
		{name: "first refused", token: "garbage", calls: 3},
		{name: "refused cached", token: "garbage", advance: 30 * time.Second, calls: 3},
		{name: "refused expired", token: "garbage", advance: 31 * time.Second, calls: 4},
		{name: "review error", token: "broken", err: true, calls: 5},
		{name: "review error not cached", token: "broken", err: true, calls: 6},
		{name: "API error", token: "other", apiErr: apierrors.NewForbidden(schema.GroupResource{Resource: "tokenreviews"}, "", errors.New("no")), err: true, calls: 7},
		{name: "API error not cached", token: "other", calls: 8},
	}
	for _, s := range steps {
		clock.Step(s.advance)
		if s.apiErr != nil {
			api.tokenErrs = []error{s.apiErr}
		}
		u, ok, err := tokens.authenticate(ctx, s.token)
		if ok != s.ok || (err != nil) != s.err {
			t.Errorf("%s: ok %v err %v, want ok %v error %v", s.name, ok, err, s.ok, s.err)
		}
		if ok && u.Name != "alice" {
			t.Errorf("%s: user %+v, want alice", s.name, u)
		}
		if calls, _ := api.calls(); calls != s.calls {
			t.Errorf("%s: %d TokenReviews, want %d", s.name, calls, s.calls)
		}
	}
}

// TestAccessCache: allowed answers are cached for the authorized TTL, the
// others for the unauthorized TTL; failed calls are not cached.
func TestAccessCache(t *testing.T) {
	fastRetries(t)
	api := newFakeAPI()
	api.allow["alice get pods"] = true
	clock := clocktesting.NewFakeClock(time.Now())
	reviewer := newAccessReviewer(api.clientset.AuthorizationV1().SubjectAccessReviews(), 5*time.Minute, 30*time.Second, clock)
	attrs := func(user, subresource string) Attributes {
		return Attributes{User: User{Name: user}, Verb: "get", APIVersion: "v1", Resource: "nodes", Subresource: subresource, Name: "node-a"}
	}
	steps := []struct {
		name    string
		attrs   Attributes
		advance time.Duration
		apiErr  error
		status  *authorizationv1.SubjectAccessReviewStatus
		allowed bool
		err     bool
		reviews int
	}{
		{name: "allowed", attrs: attrs("alice", "pods"), allowed: true, reviews: 1},
		{name: "denied", attrs: attrs("alice", "stats"), reviews: 2},
		{name: "other user", attrs: attrs("bob", "pods"), reviews: 3},
		{name: "allowed cached", attrs: attrs("alice", "pods"), advance: 29 * time.Second, allowed: true, reviews: 3},
		{name: "denied cached", attrs: attrs("alice", "stats"), reviews: 3},
		{name: "denied expired", attrs: attrs("alice", "stats"), advance: 2 * time.Second, reviews: 4},
		{name: "allowed still cached", attrs: attrs("alice", "pods"), advance: 4 * time.Minute, allowed: true, reviews: 4},
		{name: "allowed expired", attrs: attrs("alice", "pods"), advance: 30 * time.Second, allowed: true, reviews: 5},
		{name: "API error", attrs: attrs("carol", "pods"), apiErr: apierrors.NewServiceUnavailable("down"), err: true, reviews: 6},
		{name: "API error not cached", attrs: attrs("carol", "pods"), reviews: 7},
		{name: "allowed and denied", attrs: attrs("dave", "pods"), err: true, reviews: 8,
			status: &authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}},
	}
	for _, s := range steps {
		clock.Step(s.advance)
		if s.apiErr != nil {
			api.sarErrs = []error{s.apiErr}
		}
		api.sarStatus = s.status
		allowed, err := reviewer.authorize(context.Background(), s.attrs)
		if allowed != s.allowed || (err != nil) != s.err {
			t.Errorf("%s: allowed %v err %v, want allowed %v error %v", s.name, allowed, err, s.allowed, s.err)
		}
		if _, reviews := api.calls(); reviews != s.reviews {
			t.Errorf("%s: %d SubjectAccessReviews, want %d", s.name, reviews, s.reviews)
		}
	}
}

// TestRetries: transient failures are retried up to upstream's five
// attempts; others fail at once.
func TestRetries(t *testing.T) {
	fastRetries(t)
	internal := apierrors.NewInternalError(errors.New("etcd is down"))
	tests := []struct {
		name  string
		errs  []error
		err   bool
		calls int
	}{
		{"success", nil, false, 1},
		{"two internal errors", []error{internal, internal}, false, 3},
		{"too many requests", []error{apierrors.NewTooManyRequests("slow down", 1)}, false, 2},
		{"always internal", []error{internal, internal, internal, internal, internal, internal}, true, 5},
		{"forbidden", []error{apierrors.NewForbidden(schema.GroupResource{Resource: "tokenreviews"}, "", errors.New("no"))}, true, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI()
			api.tokenErrs = tc.errs
			tokens := newTokenReviewer(api.clientset.AuthenticationV1().TokenReviews(), time.Minute, clocktesting.NewFakeClock(time.Now()))
			_, _, err := tokens.authenticate(context.Background(), "good")
			if (err != nil) != tc.err {
				t.Errorf("error %v, want error %v", err, tc.err)
			}
			if calls, _ := api.calls(); calls != tc.calls {
				t.Errorf("%d TokenReviews, want %d", calls, tc.calls)
			}
		})
	}
}
