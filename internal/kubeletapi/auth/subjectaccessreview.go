package auth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/apimachinery/pkg/util/wait"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// An authorizer decides one check. An error is neither allow nor deny: the
// request fails with 500, as upstream's filter.
type authorizer func(ctx context.Context, a Attributes) (allowed bool, err error)

func alwaysAllow(context.Context, Attributes) (bool, error) { return true, nil }

// maxCachedAttrs is upstream's limit on the size of the attributes whose
// answer is cached (the path is not part of a resource review).
const maxCachedAttrs = 10000

// accessReviewer authorizes with SubjectAccessReviews, caching allowed
// answers for allowTTL and the others for denyTTL, keyed by the review's
// spec, as upstream's webhook authorizer.
type accessReviewer struct {
	client            authorizationv1client.SubjectAccessReviewInterface
	allowTTL, denyTTL time.Duration
	backoff           wait.Backoff
	cache             *cache.LRUExpireCache
}

func newAccessReviewer(client authorizationv1client.SubjectAccessReviewInterface, allowTTL, denyTTL time.Duration, clock cache.Clock) *accessReviewer {
	return &accessReviewer{client: client, allowTTL: allowTTL, denyTTL: denyTTL, backoff: reviewBackoff,
		cache: cache.NewLRUExpireCacheWithClock(cacheSize, clock)}
}

func (s *accessReviewer) authorize(ctx context.Context, a Attributes) (bool, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: a.User.Name, UID: a.User.UID, Groups: a.User.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: a.Verb, Version: a.APIVersion,
			Resource: a.Resource, Subresource: a.Subresource, Name: a.Name},
	}
	if a.User.Extra != nil {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(a.User.Extra))
		for k, v := range a.User.Extra {
			spec.Extra[k] = v
		}
	}
	keyBytes, err := json.Marshal(spec)
	if err != nil {
		return false, fmt.Errorf("SubjectAccessReview spec for %s: %w", a.User.Name, err)
	}
	key := string(keyBytes)
	var st authorizationv1.SubjectAccessReviewStatus
	if v, ok := s.cache.Get(key); ok {
		st = v.(authorizationv1.SubjectAccessReviewStatus)
	} else {
		var result *authorizationv1.SubjectAccessReview
		err := withRetry(ctx, s.backoff, func(ctx context.Context) error {
			var err error
			result, err = s.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
			return err
		})
		if err != nil {
			return false, fmt.Errorf("SubjectAccessReview: %w", err)
		}
		st = result.Status
		if ttl := s.ttl(st.Allowed); ttl > 0 && len(a.Verb)+len(a.APIVersion)+len(a.Resource)+len(a.Subresource)+len(a.Name)+len(a.Path) < maxCachedAttrs {
			s.cache.Add(key, st, ttl)
		}
	}
	if st.Allowed && st.Denied {
		return false, errors.New("webhook subject access review returned both allow and deny response")
	}
	return st.Allowed, nil
}

func (s *accessReviewer) ttl(allowed bool) time.Duration {
	if allowed {
		return s.allowTTL
	}
	return s.denyTTL
}
