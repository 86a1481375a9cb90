package auth

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// testServer serves f.Wrap(echo) over TLS with a serving certificate of a
// CA of its own.
type testServer struct {
	url   string
	roots *x509.CertPool
	// acceptableCAs are the CA names the server offered in the last
	// handshake.
	acceptableCAs [][]byte
}

// echo answers with the user the filter passed on and the credentials
// left in the request, so that tests see what a handler sees.
var echo = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	u, ok := UserFrom(r.Context())
	if !ok {
		http.Error(w, "no user in the request context", http.StatusInternalServerError)
		return
	}
	fmt.Fprintf(w, "user=%s groups=%v authorization=%q protocol=%q",
		u.Name, u.Groups, r.Header.Get("Authorization"), r.Header.Get("Sec-WebSocket-Protocol"))
})

func serve(t *testing.T, f *Filter) *testServer {
	t.Helper()
	servingCA := newTestCA(t, "serving-ca")
	srv := httptest.NewUnstartedServer(f.Wrap(echo))
	srv.TLS = f.TLSConfig(&tls.Config{Certificates: []tls.Certificate{servingCA.serving(t)}})
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return &testServer{url: srv.URL, roots: servingCA.pool()}
}

// do sends a request with cert (when not nil) as client certificate,
// offered whatever CAs the server names, and the given headers.
func (s *testServer) do(t *testing.T, method, path string, cert *tls.Certificate, header ...string) (int, string) {
	t.Helper()
	tlsConfig := &tls.Config{RootCAs: s.roots,
		GetClientCertificate: func(cri *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			s.acceptableCAs = cri.AcceptableCAs
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}}
	defer client.CloseIdleConnections()
	req, err := http.NewRequest(method, s.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Add(header[i], header[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	if resp.StatusCode != http.StatusOK && !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Errorf("%s %s: status %d with content type %q, want text/plain", method, path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, string(body)
}
