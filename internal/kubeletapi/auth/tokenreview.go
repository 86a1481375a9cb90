package auth

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
)

// tokenReviewer authenticates bearer tokens with TokenReviews, caching the
// answers as upstream's cached token authenticator: authenticated or not,
// for ttl; an error (the call failed, or the review reports one) is not
// cached. The cache is keyed by an HMAC of the token under a key drawn at
// start, so that no token is kept in memory.
type tokenReviewer struct {
	client  authenticationv1client.TokenReviewInterface
	ttl     time.Duration
	backoff wait.Backoff
	cache   *cache.LRUExpireCache
	hashes  sync.Pool
}

// tokenAnswer is a cached review: user is nil when the token was refused.
type tokenAnswer struct{ user *User }

func newTokenReviewer(client authenticationv1client.TokenReviewInterface, ttl time.Duration, clock cache.Clock) *tokenReviewer {
	key := make([]byte, 32)
	_, _ = rand.Read(key) // crypto/rand.Read never fails
	return &tokenReviewer{
		client: client, ttl: ttl, backoff: reviewBackoff,
		cache:  cache.NewLRUExpireCacheWithClock(cacheSize, clock),
		hashes: sync.Pool{New: func() any { return hmac.New(sha256.New, key) }},
	}
}

func (t *tokenReviewer) authenticate(ctx context.Context, token string) (*User, bool, error) {
	key := t.key(token)
	if v, ok := t.cache.Get(key); ok {
		u := v.(tokenAnswer).user
		return u, u != nil, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	var result *authenticationv1.TokenReview
	err := withRetry(ctx, t.backoff, func(ctx context.Context) error {
		var err error
		result, err = t.client.Create(ctx, review, metav1.CreateOptions{})
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("TokenReview: %w", err)
	}
	st := result.Status
	if !st.Authenticated {
		if st.Error != "" {
			return nil, false, errors.New(st.Error)
		}
		t.remember(key, tokenAnswer{})
		return nil, false, nil
	}
	u := &User{Name: st.User.Username, UID: st.User.UID, Groups: st.User.Groups}
	if st.User.Extra != nil {
		u.Extra = make(map[string][]string, len(st.User.Extra))
		for k, v := range st.User.Extra {
			u.Extra[k] = []string(v)
		}
	}
	t.remember(key, tokenAnswer{u})
	return u, true, nil
}

func (t *tokenReviewer) remember(key string, a tokenAnswer) {
	if t.ttl > 0 {
		t.cache.Add(key, a, t.ttl)
	}
}

func (t *tokenReviewer) key(token string) string {
	h := t.hashes.Get().(hash.Hash)
	defer t.hashes.Put(h)
	h.Reset()
	h.Write([]byte(token))
	return string(h.Sum(nil))
}
