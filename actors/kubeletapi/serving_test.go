package kubeletapi

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	certutil "k8s.io/client-go/util/cert"

	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
)

// TestServingCertFromGetCertificate: with GetServingCert (serverTLSBootstrap),
// the kubelet API serves nothing while there is no certificate — the
// handshake fails, no self-signed certificate stands in — and each new
// handshake gets the certificate current at that time.
func TestServingCertFromGetCertificate(t *testing.T) {
	filter := alwaysAllow(t)
	var current atomic.Pointer[tls.Certificate]
	errNone := errors.New("no serving certificate available for the kubelet")
	addr := serveAPI(t, Params{Auth: filter,
		GetServingCert: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := current.Load(); c != nil {
				return c, nil
			}
			return nil, errNone
		}})

	// get makes a new connection (no reuse: each request is its own
	// handshake) and returns the served certificate and the answer's status.
	get := func() (*x509.Certificate, int, error) {
		tr := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}
		defer tr.CloseIdleConnections()
		client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
		resp, err := client.Get("https://" + addr + "/nothing-here")
		if err != nil {
			return nil, 0, err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.TLS.PeerCertificates[0], resp.StatusCode, nil
	}

	if _, status, err := get(); err == nil || !strings.Contains(err.Error(), "tls: internal error") {
		t.Fatalf("without a certificate: status %d, error %v; want the handshake to fail", status, err)
	}
	for _, name := range []string{"first", "rotated"} {
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(name, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		current.Store(&cert)
		served, status, err := get()
		if err != nil {
			t.Fatalf("%s certificate: %v", name, err)
		}
		// Any HTTP answer will do: the API is served.
		if !strings.HasPrefix(served.Subject.CommonName, name) || status == 0 {
			t.Errorf("%s certificate: served %q, status %d; want that certificate and an answer", name, served.Subject.CommonName, status)
		}
	}
}

func TestSecureAPINeedsACertificate(t *testing.T) {
	a := New(Params{Port: 10250, Auth: &auth.Filter{}, Log: zerolog.Nop()})().(*Actor)
	if _, _, err := a.secureAPI(); err == nil {
		t.Fatal("secureAPI without ServingCert or GetServingCert: no error")
	}
}
