package auth

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/clock"
)

// Config is what the filter is built from.
type Config struct {
	// Authentication and Authorization are the KubeletConfiguration's
	// sections, defaults applied.
	Authentication kubeletconfigv1beta1.KubeletAuthentication
	Authorization  kubeletconfigv1beta1.KubeletAuthorization
	// Client makes the TokenReviews and SubjectAccessReviews, with the
	// node's credentials; nil in standalone mode, where neither webhook
	// can be used.
	Client kubernetes.Interface
	// NodeName is the name of the node object requests are authorized on.
	NodeName string
	// Log receives authentication and authorization failures; the zero
	// Logger discards them.
	Log zerolog.Logger
}

// Filter authenticates and authorizes requests to the kubelet API.
type Filter struct {
	authenticate authenticator
	authorize    authorizer
	clientCA     *clientCA
	nodeName     string
	log          zerolog.Logger
}

// New builds the filter cfg describes, as upstream's BuildAuth.
func New(cfg Config) (*Filter, error) {
	client := cfg.Client
	// A typed nil (a nil *Clientset in the interface) is no client either,
	// as upstream checks.
	if v := reflect.ValueOf(client); client != nil && v.Kind() == reflect.Pointer && v.IsNil() {
		client = nil
	}
	f := &Filter{nodeName: cfg.NodeName, log: cfg.Log}
	authn := cfg.Authentication
	var chain []authenticator
	if authn.X509.ClientCAFile != "" {
		ca, err := loadClientCA(authn.X509.ClientCAFile, cfg.Log)
		if err != nil {
			return nil, err
		}
		f.clientCA = ca
		chain = append(chain, ca.authenticate)
	}
	if on(authn.Webhook.Enabled) {
		if client == nil {
			return nil, errors.New("authentication.webhook.enabled is true but there is no API server client (standalone mode): cannot use webhook authentication")
		}
		tokens := newTokenReviewer(client.AuthenticationV1().TokenReviews(), authn.Webhook.CacheTTL.Duration, clock.RealClock{})
		chain = append(chain, bearerToken(tokens), webSocketToken(tokens))
	}
	switch {
	case len(chain) > 0 && on(authn.Anonymous.Enabled):
		f.authenticate = orAnonymous(withAuthenticatedGroup(firstOf(chain...)))
	case len(chain) > 0:
		f.authenticate = withAuthenticatedGroup(firstOf(chain...))
	case on(authn.Anonymous.Enabled):
		f.authenticate = anonymous
	default:
		return nil, errors.New("no authentication method configured: authentication.x509.clientCAFile is empty and authentication.webhook.enabled and authentication.anonymous.enabled are false")
	}

	authz := cfg.Authorization
	switch authz.Mode {
	case kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow:
		f.authorize = alwaysAllow
	case kubeletconfigv1beta1.KubeletAuthorizationModeWebhook:
		if client == nil {
			return nil, errors.New("authorization.mode is Webhook but there is no API server client (standalone mode): cannot use webhook authorization")
		}
		f.authorize = newAccessReviewer(client.AuthorizationV1().SubjectAccessReviews(),
			authz.Webhook.CacheAuthorizedTTL.Duration, authz.Webhook.CacheUnauthorizedTTL.Duration, clock.RealClock{}).authorize
	case "":
		return nil, errors.New("authorization.mode: no authorization mode specified")
	default:
		return nil, fmt.Errorf("authorization.mode: unknown authorization mode %q", authz.Mode)
	}
	return f, nil
}

func on(b *bool) bool { return b != nil && *b }

// Wrap returns next behind authentication and authorization, answering as
// upstream's InstallAuthFilter: 401 "Unauthorized" when no method
// authenticates the request, 403 when no check allows it, 500 when a
// check fails. next finds the user with UserFrom.
func (f *Filter) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := f.authenticate(r)
		if err != nil {
			f.log.Error().Err(err).Str("path", r.URL.Path).Str("remote", r.RemoteAddr).Msg("unable to authenticate the request due to an error")
		}
		if err != nil || !ok {
			writeError(w, http.StatusUnauthorized, "Unauthorized")
			return
		}
		attrs := RequestAttributes(r, *u, f.nodeName)
		subresources := make([]string, 0, len(attrs))
		for _, a := range attrs {
			subresources = append(subresources, a.Subresource)
			allowed, err := f.authorize(r.Context(), a)
			if err != nil {
				f.log.Error().Err(err).Str("user", u.Name).Str("verb", a.Verb).Str("resource", a.Resource).
					Str("subresource", a.Subresource).Msg("authorization error")
				writeError(w, http.StatusInternalServerError, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=%s, subresource=%s)",
					u.Name, a.Verb, a.Resource, a.Subresource))
				return
			}
			if allowed {
				next.ServeHTTP(w, r.WithContext(WithUser(r.Context(), *u)))
				return
			}
		}
		f.log.Debug().Str("user", u.Name).Str("verb", attrs[0].Verb).Str("resource", attrs[0].Resource).
			Strs("subresources", subresources).Msg("forbidden")
		writeError(w, http.StatusForbidden, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=%s, subresource(s)=%v)\n",
			u.Name, attrs[0].Verb, attrs[0].Resource, subresources))
	})
}

// writeError writes what go-restful's WriteErrorString does: the status and
// the text, with the content type net/http sniffs for it.
func writeError(w http.ResponseWriter, status int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(text))
}

// ClientCAs is the current client CA bundle, nil without
// authentication.x509.clientCAFile.
func (f *Filter) ClientCAs() *x509.CertPool {
	if f.clientCA == nil {
		return nil
	}
	return f.clientCA.current()
}

// TLSConfig returns a copy of base for the kubelet API's listener. With a
// client CA bundle it requests client certificates without requiring them
// (tls.RequestClientCert, as upstream: the filter verifies them, and
// requests without one go on to token or anonymous authentication) and
// offers clients the current bundle's names at every handshake, as
// upstream's dynamic client CA controller. The configuration a handshake
// uses is then a copy of base: everything the server needs (certificates,
// NextProtos for HTTP/2) must be in base, not added later by the server.
func (f *Filter) TLSConfig(base *tls.Config) *tls.Config {
	cfg := base.Clone()
	if f.clientCA == nil {
		return cfg
	}
	cfg.ClientAuth = tls.RequestClientCert
	cfg.ClientCAs = f.ClientCAs()
	inner := base.GetConfigForClient
	cfg.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		c := base
		if inner != nil {
			ic, err := inner(hello)
			if err != nil {
				return nil, err
			}
			if ic != nil {
				c = ic
			}
		}
		c = c.Clone()
		c.ClientAuth = tls.RequestClientCert
		c.ClientCAs = f.ClientCAs()
		c.GetConfigForClient = nil
		return c, nil
	}
	return cfg
}
