package auth

import (
	"encoding/base64"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

// fakeAPI answers TokenReviews from tokens and SubjectAccessReviews from
// allow ("user verb subresource"), or with the errors set.
type fakeAPI struct {
	mu         sync.Mutex
	tokens     map[string]authenticationv1.TokenReviewStatus
	allow      map[string]bool
	tokenErrs  []error // returned by the next TokenReviews, one each
	sarErrs    []error
	sarStatus  *authorizationv1.SubjectAccessReviewStatus // overrides allow
	tokenCalls int
	sars       []authorizationv1.SubjectAccessReviewSpec
	clientset  *fake.Clientset
}

func newFakeAPI() *fakeAPI {
	api := &fakeAPI{
		tokens: map[string]authenticationv1.TokenReviewStatus{
			"good": {Authenticated: true, User: authenticationv1.UserInfo{Username: "alice", UID: "u-1",
				Groups: []string{"team-a"}, Extra: map[string]authenticationv1.ExtraValue{"scope": {"x"}}}},
			"broken": {Error: "token signature is invalid"},
		},
		allow:     map[string]bool{},
		clientset: fake.NewClientset(),
	}
	api.clientset.PrependReactor("create", "tokenreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		api.tokenCalls++
		if len(api.tokenErrs) > 0 {
			err := api.tokenErrs[0]
			api.tokenErrs = api.tokenErrs[1:]
			return true, nil, err
		}
		review := action.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview)
		review.Status = api.tokens[review.Spec.Token]
		return true, review, nil
	})
	api.clientset.PrependReactor("create", "subjectaccessreviews", func(action k8stesting.Action) (bool, runtime.Object, error) {
		api.mu.Lock()
		defer api.mu.Unlock()
		review := action.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview)
		api.sars = append(api.sars, review.Spec)
		if len(api.sarErrs) > 0 {
			err := api.sarErrs[0]
			api.sarErrs = api.sarErrs[1:]
			return true, nil, err
		}
		ra := review.Spec.ResourceAttributes
		review.Status.Allowed = api.allow[review.Spec.User+" "+ra.Verb+" "+ra.Subresource]
		if api.sarStatus != nil {
			review.Status = *api.sarStatus
		}
		return true, review, nil
	})
	return api
}

func (api *fakeAPI) calls() (tokens, sars int) {
	api.mu.Lock()
	defer api.mu.Unlock()
	return api.tokenCalls, len(api.sars)
}

func webhookConfig(client kubernetes.Interface, anonymous bool) Config {
	return Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: new(true),
				CacheTTL: metav1.Duration{Duration: 2 * time.Minute}},
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: new(anonymous)},
		},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeWebhook,
			Webhook: kubeletconfigv1beta1.KubeletWebhookAuthorization{
				CacheAuthorizedTTL:   metav1.Duration{Duration: 5 * time.Minute},
				CacheUnauthorizedTTL: metav1.Duration{Duration: 30 * time.Second}}},
		Client:   client,
		NodeName: "node-a",
		Log:      zerolog.Nop(),
	}
}

func wsToken(token string) string {
	return bearerProtocolPrefix + base64.RawURLEncoding.EncodeToString([]byte(token))
}

func TestWebhookFlows(t *testing.T) {
	internal := apierrors.NewInternalError(errors.New("etcd is down"))
	forbidden := apierrors.NewForbidden(schema.GroupResource{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}, "", errors.New("no"))
	tests := []struct {
		name      string
		anonymous bool
		method    string
		path      string
		header    []string
		allow     []string
		tokenErrs []error
		sarErrs   []error
		sarStatus *authorizationv1.SubjectAccessReviewStatus
		status    int
		body      string
	}{
		{name: "no credentials", path: "/pods", status: 401, body: "Unauthorized"},
		{name: "no credentials, anonymous on, not allowed", anonymous: true, path: "/pods", status: 403,
			body: "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{name: "anonymous allowed", anonymous: true, path: "/healthz", allow: []string{"system:anonymous get healthz"},
			status: 200, body: `user=system:anonymous groups=[system:unauthenticated] authorization=""`},
		{name: "good token, pods allowed", path: "/pods", header: []string{"Authorization", "Bearer good"},
			allow: []string{"alice get pods"}, status: 200,
			body: `user=alice groups=[team-a system:authenticated] authorization=""`},
		{name: "good token, proxy allowed for pods", path: "/pods/", header: []string{"Authorization", "bearer good"},
			allow: []string{"alice get proxy"}, status: 200, body: "user=alice"},
		{name: "good token, proxy does not allow stats", path: "/stats/summary", header: []string{"Authorization", "Bearer good"},
			allow: []string{"alice get proxy"}, status: 403,
			body: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[stats])\n"},
		{name: "good token, post", method: "POST", path: "/exec/ns/pod/c?command=ls", header: []string{"Authorization", "Bearer good"},
			allow: []string{"alice create proxy"}, status: 200, body: "user=alice"},
		{name: "good token, nothing allowed", path: "/configz", header: []string{"Authorization", "Bearer good"}, status: 403,
			body: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[configz proxy])\n"},
		{name: "refused token", path: "/pods", header: []string{"Authorization", "Bearer garbage"}, status: 401, body: "Unauthorized"},
		{name: "refused token, anonymous on", anonymous: true, path: "/pods", header: []string{"Authorization", "Bearer garbage"},
			allow: []string{"system:anonymous get pods"}, status: 401, body: "Unauthorized"},
		{name: "review reports an error", path: "/pods", header: []string{"Authorization", "Bearer broken"}, status: 401, body: "Unauthorized"},
		{name: "not a bearer header", anonymous: true, path: "/pods", header: []string{"Authorization", "Basic YTpi"},
			allow: []string{"system:anonymous get pods"}, status: 200, body: `user=system:anonymous groups=[system:unauthenticated] authorization="Basic YTpi"`},
		{name: "TokenReview fails", path: "/pods", header: []string{"Authorization", "Bearer good"},
			tokenErrs: []error{forbidden}, status: 401, body: "Unauthorized"},
		{name: "TokenReview fails transiently", path: "/pods", header: []string{"Authorization", "Bearer good"},
			tokenErrs: []error{internal, internal}, allow: []string{"alice get pods"}, status: 200, body: "user=alice"},
		{name: "websocket token", path: "/exec/ns/pod/c",
			header: []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Protocol", wsToken("good") + ", v5.channel.k8s.io"},
			allow:  []string{"alice get proxy"}, status: 200, body: `protocol="v5.channel.k8s.io"`},
		{name: "websocket token alone", path: "/exec/ns/pod/c",
			header: []string{"Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Protocol", wsToken("good")},
			allow:  []string{"alice get proxy"}, status: 401, body: "Unauthorized"},
		{name: "SubjectAccessReview fails", path: "/pods", header: []string{"Authorization", "Bearer good"},
			sarErrs: []error{forbidden}, status: 500,
			body: "Authorization error (user=alice, verb=get, resource=nodes, subresource=pods)"},
		{name: "SubjectAccessReview fails transiently", path: "/pods", header: []string{"Authorization", "Bearer good"},
			sarErrs: []error{internal}, allow: []string{"alice get pods"}, status: 200, body: "user=alice"},
		{name: "allowed and denied", path: "/metrics", header: []string{"Authorization", "Bearer good"},
			sarStatus: &authorizationv1.SubjectAccessReviewStatus{Allowed: true, Denied: true}, status: 500,
			body: "Authorization error (user=alice, verb=get, resource=nodes, subresource=metrics)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			api := newFakeAPI()
			for _, a := range tc.allow {
				api.allow[a] = true
			}
			api.tokenErrs, api.sarErrs, api.sarStatus = tc.tokenErrs, tc.sarErrs, tc.sarStatus
			fastRetries(t)
			f, err := New(webhookConfig(api.clientset, tc.anonymous))
			if err != nil {
				t.Fatal(err)
			}
			method := tc.method
			if method == "" {
				method = "GET"
			}
			status, body := serve(t, f).do(t, method, tc.path, nil, tc.header...)
			// Refusals are upstream's exact bodies; successes show what
			// the handler saw.
			if status != tc.status || status != 200 && body != tc.body || !strings.Contains(body, tc.body) {
				t.Errorf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
		})
	}
}

// fastRetries makes the reviews of filters built during the test retry
// without waiting.
func fastRetries(t *testing.T) {
	saved := reviewBackoff
	reviewBackoff.Duration = time.Millisecond
	t.Cleanup(func() { reviewBackoff = saved })
}

func TestSubjectAccessReviewSpec(t *testing.T) {
	api := newFakeAPI()
	api.allow["alice delete proxy"] = true
	f, err := New(webhookConfig(api.clientset, false))
	if err != nil {
		t.Fatal(err)
	}
	if status, body := serve(t, f).do(t, "DELETE", "/pods/x?y=z", nil, "Authorization", "Bearer good"); status != 200 {
		t.Fatalf("got %d %q, want 200", status, body)
	}
	want := func(subresource string) authorizationv1.SubjectAccessReviewSpec {
		return authorizationv1.SubjectAccessReviewSpec{
			User: "alice", UID: "u-1", Groups: []string{"team-a", "system:authenticated"},
			Extra: map[string]authorizationv1.ExtraValue{"scope": {"x"}},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "delete", Version: "v1", Resource: "nodes",
				Subresource: subresource, Name: "node-a"},
		}
	}
	if !reflect.DeepEqual(api.sars, []authorizationv1.SubjectAccessReviewSpec{want("pods"), want("proxy")}) {
		t.Errorf("SubjectAccessReviews %+v, want pods then proxy for alice", api.sars)
	}
}

func TestNewErrors(t *testing.T) {
	var typedNil *fake.Clientset
	tests := []struct {
		name   string
		change func(*Config)
		err    string
	}{
		{"webhook authentication without client", func(c *Config) { c.Client = nil }, "authentication.webhook.enabled is true but there is no API server client"},
		{"typed nil client", func(c *Config) { c.Client = typedNil }, "authentication.webhook.enabled is true but there is no API server client"},
		{"webhook authorization without client", func(c *Config) {
			c.Client = nil
			c.Authentication.Webhook.Enabled = new(false)
			c.Authentication.Anonymous.Enabled = new(true)
		}, "authorization.mode is Webhook but there is no API server client"},
		{"no authentication method", func(c *Config) { c.Authentication.Webhook.Enabled = nil },
			"no authentication method configured: authentication.x509.clientCAFile is empty and authentication.webhook.enabled and authentication.anonymous.enabled are false"},
		{"no authorization mode", func(c *Config) { c.Authorization.Mode = "" }, "authorization.mode: no authorization mode specified"},
		{"unknown authorization mode", func(c *Config) { c.Authorization.Mode = "RBAC" }, `authorization.mode: unknown authorization mode "RBAC"`},
		{"webhooks with client", func(*Config) {}, ""},
		{"standalone", func(c *Config) {
			c.Client = nil
			c.Authentication.Webhook.Enabled = new(false)
			c.Authentication.Anonymous.Enabled = new(true)
			c.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
		}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := webhookConfig(fake.NewClientset(), false)
			tc.change(&cfg)
			f, err := New(cfg)
			if tc.err == "" {
				if err != nil || f == nil {
					t.Fatalf("New: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New: error %v, want %q", err, tc.err)
			}
		})
	}
}

// TestAnonymousOnly: with neither certificates nor tokens, every request is
// anonymous, even one with a token (upstream has nothing to check it with).
func TestAnonymousOnly(t *testing.T) {
	cfg := webhookConfig(nil, true)
	cfg.Authentication.Webhook.Enabled = new(false)
	cfg.Authorization.Mode = kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow
	f, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	status, body := serve(t, f).do(t, "GET", "/pods", nil, "Authorization", "Bearer whatever")
	if want := `user=system:anonymous groups=[system:unauthenticated] authorization="Bearer whatever"`; status != 200 || !strings.HasPrefix(body, want) {
		t.Errorf("got %d %q, want 200 %q", status, body, want)
	}
	if f.ClientCAs() != nil {
		t.Errorf("ClientCAs without clientCAFile: not nil")
	}
}
