package apisource

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// As upstream's token manager (pkg/kubelet/token).
const (
	// tokenMaxTTL: a token older than this is refreshed whatever its
	// lifetime.
	tokenMaxTTL = 24 * time.Hour
	// tokenGCPeriod: how often expired tokens are dropped.
	tokenGCPeriod = time.Minute
	// tokenMaxJitter: refreshes are spread over up to this much earlier.
	tokenMaxJitter = 10 * time.Second
	// defaultExpirationSeconds is the API's default for a projection
	// without expirationSeconds.
	defaultExpirationSeconds = 3600
)

// tokenRequest is the TokenRequest a projected volume of pod asks for, as
// upstream's projected volume plugin builds it.
func tokenRequest(pod *v1.Pod, p *v1.ServiceAccountTokenProjection) *authenticationv1.TokenRequest {
	var audiences []string
	if p.Audience != "" {
		audiences = []string{p.Audience}
	}
	exp := p.ExpirationSeconds
	if exp == nil {
		d := int64(defaultExpirationSeconds)
		exp = &d
	}
	return &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{
			Audiences:         audiences,
			ExpirationSeconds: exp,
			BoundObjectRef: &authenticationv1.BoundObjectReference{
				APIVersion: "v1",
				Kind:       "Pod",
				Name:       pod.Name,
				UID:        pod.UID,
			},
		},
	}
}

// tokenManager caches service-account tokens, as upstream's token manager.
type tokenManager struct {
	// create asks the API server for a token.
	create func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error)
	clock  clock.WithTicker
	log    zerolog.Logger
	// jitter returns how much earlier than the rule says a token is
	// refreshed: upstream's random whole seconds below tokenMaxJitter.
	jitter func() time.Duration

	mu    sync.RWMutex
	cache map[string]*authenticationv1.TokenRequest
}

func newTokenManager(c kubernetes.Interface, clk clock.WithTicker, log zerolog.Logger) *tokenManager {
	var (
		once      sync.Once
		supported bool
	)
	// tokenRequestsSupported asks discovery once, as upstream, to tell a
	// missing service account from an API server without the endpoint.
	tokenRequestsSupported := func(ctx context.Context) bool {
		once.Do(func() {
			res, err := discovery.ToDiscoveryInterfaceWithContext(c.Discovery()).ServerResourcesForGroupVersionWithContext(ctx, "v1")
			if err != nil {
				return
			}
			for _, r := range res.APIResources {
				if r.Name == "serviceaccounts/token" {
					supported = true
				}
			}
		})
		return supported
	}
	return &tokenManager{
		create: func(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
			out, err := c.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, tr, metav1.CreateOptions{})
			if apierrors.IsNotFound(err) && !tokenRequestsSupported(ctx) {
				return nil, fmt.Errorf("the API server does not have TokenRequest endpoints enabled")
			}
			return out, err
		},
		clock:  clk,
		log:    log,
		jitter: func() time.Duration { return time.Duration(rand.Float64()*tokenMaxJitter.Seconds()) * time.Second },
		cache:  map[string]*authenticationv1.TokenRequest{},
	}
}

// get returns the cached token for the request, or a new one when the
// cached one needs a refresh; when the refresh fails, the cached one while
// it is still valid, as upstream.
func (m *tokenManager) get(ctx context.Context, namespace, name string, tr *authenticationv1.TokenRequest) (*authenticationv1.TokenRequest, error) {
	key := tokenKey(name, namespace, tr)
	m.mu.RLock()
	cached, ok := m.cache[key]
	m.mu.RUnlock()
	if ok && !m.requiresRefresh(cached) {
		return cached, nil
	}
	fresh, err := m.create(ctx, namespace, name, tr)
	if err != nil {
		switch {
		case !ok:
			return nil, fmt.Errorf("failed to fetch token: %w", err)
		case m.expired(cached):
			return nil, fmt.Errorf("token %s expired and refresh failed: %w", key, err)
		}
		m.log.Error().Err(err).Str("cacheKey", key).Msg("couldn't update token")
		return cached, nil
	}
	m.mu.Lock()
	m.cache[key] = fresh
	m.mu.Unlock()
	return fresh, nil
}

func (m *tokenManager) expired(tr *authenticationv1.TokenRequest) bool {
	return m.clock.Now().After(tr.Status.ExpirationTimestamp.Time)
}

// requiresRefresh is upstream's rule: refresh a token older than 24 h, or
// within 20 % of its lifetime of expiring, either moved earlier by the
// jitter.
func (m *tokenManager) requiresRefresh(tr *authenticationv1.TokenRequest) bool {
	if tr.Spec.ExpirationSeconds == nil {
		// As upstream, which logs it: the API server always sets it.
		m.log.Error().Str("boundPod", boundPod(tr)).Msg("expiration seconds was nil for token request")
		return false
	}
	now := m.clock.Now()
	exp := tr.Status.ExpirationTimestamp.Time
	ttl := time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	iat := exp.Add(-ttl)
	jitter := m.jitter()
	if now.After(iat.Add(tokenMaxTTL - jitter)) {
		return true
	}
	// Whole seconds, as upstream's integer arithmetic.
	twentyPercent := time.Duration(*tr.Spec.ExpirationSeconds*20/100) * time.Second
	return now.After(exp.Add(-twentyPercent - jitter))
}

func boundPod(tr *authenticationv1.TokenRequest) string {
	if tr.Spec.BoundObjectRef == nil {
		return ""
	}
	return string(tr.Spec.BoundObjectRef.UID)
}

// deletePod forgets the tokens bound to the pod.
func (m *tokenManager) deletePod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if tr.Spec.BoundObjectRef != nil && tr.Spec.BoundObjectRef.UID == uid {
			delete(m.cache, k)
		}
	}
}

// cleanup drops expired tokens.
func (m *tokenManager) cleanup() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, tr := range m.cache {
		if m.expired(tr) {
			delete(m.cache, k)
		}
	}
}

func (m *tokenManager) cleanupEvery(ctx context.Context, period time.Duration) {
	t := m.clock.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			m.cleanup()
		}
	}
}

// tokenKey is upstream's cache key: the service account, the audiences,
// the lifetime, the bound object and the service account's UID when the
// request names one. It holds nothing secret and may be logged.
func tokenKey(name, namespace string, tr *authenticationv1.TokenRequest) string {
	var exp int64
	if tr.Spec.ExpirationSeconds != nil {
		exp = *tr.Spec.ExpirationSeconds
	}
	var ref authenticationv1.BoundObjectReference
	if tr.Spec.BoundObjectRef != nil {
		ref = *tr.Spec.BoundObjectRef
	}
	return fmt.Sprintf("%q/%q/%#v/%#v/%#v/%q", name, namespace, tr.Spec.Audiences, exp, ref, tr.UID)
}
