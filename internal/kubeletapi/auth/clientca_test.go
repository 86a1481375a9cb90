package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
)

func x509Config(caFile string, anonymous bool) Config {
	return Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			X509:      kubeletconfigv1beta1.KubeletX509Authentication{ClientCAFile: caFile},
			Webhook:   kubeletconfigv1beta1.KubeletWebhookAuthentication{Enabled: new(false)},
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: new(anonymous)},
		},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow},
		NodeName:      "node-a",
		Log:           zerolog.Nop(),
	}
}

func TestX509(t *testing.T) {
	ca, other := newTestCA(t, "client-ca"), newTestCA(t, "other-ca")
	valid := ca.client(t, "alice", "team-a", "team-b")
	fromOther := other.client(t, "alice", "team-a")
	expired := ca.issue(t, pkix.Name{CommonName: "alice"}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(-time.Hour))
	serverOnly := ca.issue(t, pkix.Name{CommonName: "alice"}, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, time.Now().Add(time.Hour))
	noCN := ca.issue(t, pkix.Name{Organization: []string{"team-a"}}, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(time.Hour))
	anyUsage := ca.issue(t, pkix.Name{CommonName: "bob"}, []x509.ExtKeyUsage{x509.ExtKeyUsageAny}, time.Now().Add(time.Hour))

	tests := []struct {
		name      string
		cert      *tls.Certificate
		anonymous bool
		status    int
		body      string
	}{
		{"accepted", &valid, false, 200, "user=alice groups=[team-a team-b system:authenticated]"},
		{"any usage", &anyUsage, false, 200, "user=bob groups=[system:authenticated]"},
		{"wrong CA", &fromOther, false, 401, "Unauthorized"},
		{"expired", &expired, false, 401, "Unauthorized"},
		{"no client auth usage", &serverOnly, false, 401, "Unauthorized"},
		{"no common name", &noCN, false, 401, "Unauthorized"},
		{"no certificate", nil, false, 401, "Unauthorized"},
		// A certificate that fails verification is not anonymous: the
		// client presented a credential and it was bad.
		{"wrong CA, anonymous on", &fromOther, true, 401, "Unauthorized"},
		{"expired, anonymous on", &expired, true, 401, "Unauthorized"},
		{"no certificate, anonymous on", nil, true, 200, "user=system:anonymous groups=[system:unauthenticated]"},
		{"no common name, anonymous on", &noCN, true, 200, "user=system:anonymous groups=[system:unauthenticated]"},
		{"accepted, anonymous on", &valid, true, 200, "user=alice groups=[team-a team-b system:authenticated]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := New(x509Config(ca.file(t), tc.anonymous))
			if err != nil {
				t.Fatal(err)
			}
			srv := serve(t, f)
			status, body := srv.do(t, "GET", "/pods", tc.cert)
			if status != tc.status || !strings.HasPrefix(body, tc.body) {
				t.Errorf("got %d %q, want %d %q", status, body, tc.status, tc.body)
			}
			// Go clients send only a certificate of a CA the server
			// names: the server must name the client CA.
			if len(srv.acceptableCAs) != 1 || !bytes.Equal(srv.acceptableCAs[0], ca.cert.RawSubject) {
				t.Errorf("server offered CA names %q, want only %q", srv.acceptableCAs, ca.cert.Subject)
			}
		})
	}
}

func TestUserFromCertificate(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	uid := func(v string) pkix.AttributeTypeAndValue { return pkix.AttributeTypeAndValue{Type: uidOID, Value: v} }
	tests := []struct {
		name    string
		subject pkix.Name
		want    *User
		err     string
	}{
		{"name and groups", pkix.Name{CommonName: "system:node:a", Organization: []string{"system:nodes"}},
			&User{Name: "system:node:a", Groups: []string{"system:nodes"}}, ""},
		{"uid", pkix.Name{CommonName: "carol", ExtraNames: []pkix.AttributeTypeAndValue{uid("uid-1")}},
			&User{Name: "carol", UID: "uid-1"}, ""},
		{"two uids", pkix.Name{CommonName: "carol", ExtraNames: []pkix.AttributeTypeAndValue{uid("a"), uid("b")}},
			nil, "expected 1 UID, but found multiple: [a b]"},
		{"empty uid", pkix.Name{CommonName: "carol", ExtraNames: []pkix.AttributeTypeAndValue{uid("")}},
			nil, "UID cannot be an empty string"},
		{"no common name", pkix.Name{Organization: []string{"g"}}, nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cert := ca.issue(t, tc.subject, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, time.Now().Add(time.Hour)).Leaf
			u, ok, err := userFromCertificate(cert)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "SN=") {
					t.Fatalf("error %v, want one naming the certificate and containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ok != (tc.want != nil) {
				t.Fatalf("ok %v, want %v", ok, tc.want != nil)
			}
			if !ok {
				return
			}
			if id := u.Extra[credentialIDKey]; len(id) != 1 || !strings.HasPrefix(id[0], "X509SHA256=") || len(id[0]) != len("X509SHA256=")+64 {
				t.Errorf("credential id %q, want X509SHA256=<sha256 hex>", id)
			}
			u.Extra = nil
			if !reflect.DeepEqual(u, tc.want) {
				t.Errorf("user %+v, want %+v", u, tc.want)
			}
		})
	}
}

// TestClientCAReload: a changed bundle is used for verification and offered
// in handshakes; a changed bundle that does not parse leaves the previous
// one in place.
func TestClientCAReload(t *testing.T) {
	first, second := newTestCA(t, "first-ca"), newTestCA(t, "second-ca")
	path := first.file(t)
	f, err := New(x509Config(path, false))
	if err != nil {
		t.Fatal(err)
	}
	f.clientCA.every = 0
	srv := serve(t, f)
	fromFirst, fromSecond := first.client(t, "alice"), second.client(t, "bob")
	expect := func(step string, cert *tls.Certificate, status int, offered *x509.Certificate) {
		t.Helper()
		if got, body := srv.do(t, "GET", "/stats/summary", cert); got != status {
			t.Errorf("%s: status %d %q, want %d", step, got, body, status)
		}
		if len(srv.acceptableCAs) != 1 || !bytes.Equal(srv.acceptableCAs[0], offered.RawSubject) {
			t.Errorf("%s: server offered CA names %q, want only %q", step, srv.acceptableCAs, offered.Subject)
		}
	}
	expect("before", &fromFirst, http.StatusOK, first.cert)
	expect("before", &fromSecond, http.StatusUnauthorized, first.cert)

	if err := os.WriteFile(path, second.pem(), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("replaced", &fromFirst, http.StatusUnauthorized, second.cert)
	expect("replaced", &fromSecond, http.StatusOK, second.cert)

	if err := os.WriteFile(path, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	expect("broken", &fromSecond, http.StatusOK, second.cert)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	expect("removed", &fromSecond, http.StatusOK, second.cert)
}

func TestClientCAFileErrors(t *testing.T) {
	dir := t.TempDir()
	garbage := dir + "/garbage.crt"
	if err := os.WriteFile(garbage, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{dir + "/missing.crt", garbage} {
		_, err := New(x509Config(path, false))
		if err == nil || !strings.Contains(err.Error(), "authentication.x509.clientCAFile") || !strings.Contains(err.Error(), path) {
			t.Errorf("New with clientCAFile %s: error %v, want one naming the field and the file", path, err)
		}
	}
}

func TestTLSConfig(t *testing.T) {
	ca := newTestCA(t, "client-ca")
	serving := ca.serving(t)
	withCA, err := New(x509Config(ca.file(t), false))
	if err != nil {
		t.Fatal(err)
	}
	withoutCA, err := New(x509Config("", true))
	if err != nil {
		t.Fatal(err)
	}

	base := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serving}}
	if got := withoutCA.TLSConfig(base); got.ClientAuth != tls.NoClientCert || got.ClientCAs != nil || got.GetConfigForClient != nil {
		t.Errorf("without clientCAFile: ClientAuth %v, ClientCAs %v, GetConfigForClient set %v; want base unchanged",
			got.ClientAuth, got.ClientCAs, got.GetConfigForClient != nil)
	}

	cfg := withCA.TLSConfig(base)
	if cfg.ClientAuth != tls.RequestClientCert || !cfg.ClientCAs.Equal(ca.pool()) {
		t.Errorf("with clientCAFile: ClientAuth %v, want RequestClientCert, and the client CA", cfg.ClientAuth)
	}
	if base.ClientAuth != tls.NoClientCert || base.GetConfigForClient != nil {
		t.Errorf("base was modified")
	}
	perHandshake, err := cfg.GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if perHandshake.ClientAuth != tls.RequestClientCert || !perHandshake.ClientCAs.Equal(ca.pool()) ||
		perHandshake.MinVersion != tls.VersionTLS12 || len(perHandshake.Certificates) != 1 || perHandshake.GetConfigForClient != nil {
		t.Errorf("per-handshake configuration %+v: want base with the client CA requested", perHandshake)
	}

	// A base that picks its own configuration per handshake keeps doing so.
	other := ca.serving(t)
	base.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
		return &tls.Config{Certificates: []tls.Certificate{other}}, nil
	}
	perHandshake, err = withCA.TLSConfig(base).GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil {
		t.Fatal(err)
	}
	if len(perHandshake.Certificates) != 1 || perHandshake.Certificates[0].Leaf != other.Leaf || !perHandshake.ClientCAs.Equal(ca.pool()) {
		t.Errorf("per-handshake configuration of base's GetConfigForClient: not used, or without the client CA")
	}
}
