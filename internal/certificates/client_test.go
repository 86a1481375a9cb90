package certificates

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// clientPair is a client certificate of the test CA, with its PEM files'
// contents.
type clientPair struct {
	tls          *tls.Certificate
	certPEM, key []byte
}

func (ca *testCA) client(t *testing.T, cn string, serial int64, notBefore, notAfter time.Time) clientPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:nodes"}},
		NotBefore: notBefore, NotAfter: notAfter, KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(key)
	p := clientPair{certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key: pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})}
	c, err := tls.X509KeyPair(p.certPEM, p.key)
	if err != nil {
		t.Fatal(err)
	}
	c.Leaf, _ = x509.ParseCertificate(der)
	p.tls = &c
	return p
}

// writeKubeconfig writes a kubeconfig for server with the client
// certificate in files (empty pair: a token instead).
func writeClientKubeconfig(t *testing.T, dir, server string, ca []byte, p clientPair) string {
	t.Helper()
	auth := &clientcmdapi.AuthInfo{Token: "secret-token"}
	if p.certPEM != nil {
		cert, key := filepath.Join(dir, "client.crt"), filepath.Join(dir, "client.key")
		if err := os.WriteFile(cert, p.certPEM, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(key, p.key, 0o600); err != nil {
			t.Fatal(err)
		}
		auth = &clientcmdapi.AuthInfo{ClientCertificate: cert, ClientKey: key}
	}
	path := filepath.Join(dir, "kubeconfig")
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: server, CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": auth},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestKubeconfigValid(t *testing.T) {
	ca := newTestCA(t)
	now := time.Now()
	tests := []struct {
		name    string
		write   func(dir string) string
		want    bool
		wantWhy string
	}{
		{"missing", func(dir string) string { return filepath.Join(dir, "none") }, false, "does not exist"},
		{"not a kubeconfig", func(dir string) string {
			p := filepath.Join(dir, "bad")
			_ = os.WriteFile(p, []byte("{{{"), 0o600)
			return p
		}, false, "cannot be loaded"},
		{"token, no certificate", func(dir string) string {
			return writeClientKubeconfig(t, dir, "https://127.0.0.1:6443", ca.pem, clientPair{})
		}, false, "no client certificate"},
		{"expired certificate", func(dir string) string {
			return writeClientKubeconfig(t, dir, "https://127.0.0.1:6443", ca.pem, ca.client(t, "system:node:a", 5, now.Add(-2*time.Hour), now.Add(-time.Hour)))
		}, false, "expired at"},
		{"valid certificate", func(dir string) string {
			return writeClientKubeconfig(t, dir, "https://127.0.0.1:6443", ca.pem, ca.client(t, "system:node:a", 6, now.Add(-time.Hour), now.Add(time.Hour)))
		}, true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ok, why, err := KubeconfigValid(tc.write(t.TempDir()))
			if err != nil || ok != tc.want || !strings.Contains(why, tc.wantWhy) {
				t.Errorf("KubeconfigValid = %v, %q, %v; want %v, %q", ok, why, err, tc.want, tc.wantWhy)
			}
		})
	}
}

func TestClientsetFn(t *testing.T) {
	ca := newTestCA(t)
	current := ca.client(t, "system:node:a", 4, time.Now().Add(-time.Hour), time.Now().Add(time.Hour))
	user := &rest.Config{Host: "https://user:6443", TLSClientConfig: rest.TLSClientConfig{CertFile: "/elsewhere.crt", KeyFile: "/elsewhere.key", CAData: ca.pem}}
	renewal := &rest.Config{Host: "https://bootstrap:6443", BearerToken: "abcdef.0123456789abcdef"}
	fn := clientsetFn(user, renewal)
	tests := []struct {
		name     string
		current  *tls.Certificate
		want     string
		wantCert []byte
	}{
		{"a valid certificate renews with itself", current.tls, "user:6443", current.certPEM},
		{"none (expired) renews with the bootstrap credentials", nil, "bootstrap:6443", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := fn(tc.current)
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.(*kubernetes.Clientset).CertificatesV1().RESTClient().Get().URL().Host; got != tc.want {
				t.Errorf("CSR client goes to %s, want %s", got, tc.want)
			}
			if tc.wantCert == nil {
				return
			}
			certPEM, keyPEM, err := encodePair(tc.current)
			if err != nil || string(certPEM) != string(tc.wantCert) {
				t.Fatalf("encodePair: %v; certificate as given: %v", err, string(certPEM) == string(tc.wantCert))
			}
			if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
				t.Errorf("the encoded pair does not load: %v", err)
			}
		})
	}
}

// fakeManager is a certificate.Manager whose current certificate the test
// sets.
type fakeManager struct {
	mu   sync.Mutex
	cert *tls.Certificate
}

func (m *fakeManager) Start()              {}
func (m *fakeManager) Stop()               {}
func (m *fakeManager) ServerHealthy() bool { return true }
func (m *fakeManager) Current() *tls.Certificate {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cert
}
func (m *fakeManager) set(c *tls.Certificate) {
	m.mu.Lock()
	m.cert = c
	m.mu.Unlock()
}

// whoServer is an API server stand-in that requires client certificates
// of ca: /who answers the serial of the request's certificate, /watch
// streams it, a line every 20 ms, until the client goes.
func whoServer(t *testing.T, ca *testCA) *httptest.Server {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		serial := r.TLS.PeerCertificates[0].SerialNumber.String()
		if r.URL.Path != "/watch" {
			fmt.Fprint(w, serial)
			return
		}
		for r.Context().Err() == nil {
			fmt.Fprintln(w, serial)
			w.(http.Flusher).Flush()
			time.Sleep(20 * time.Millisecond)
		}
	}))
	srv.EnableHTTP2 = true
	srv.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv
}

// TestRotationKeepsWatches checks that a new certificate is presented by
// new requests while a watch opened before goes on, until the old
// certificate expires.
func TestRotationKeepsWatches(t *testing.T) {
	ca := newTestCA(t)
	srv := whoServer(t, ca)
	now := time.Now()
	old := ca.client(t, "system:node:a", 2, now.Add(-time.Hour), now.Add(time.Hour))
	renewed := ca.client(t, "system:node:a", 3, now.Add(-time.Minute), now.Add(2*time.Hour))
	m := &fakeManager{cert: old.tls}
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{CAData: srvCA(srv)}}
	rt, err := newRotatingTransport(cfg, m, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer rt.closeAll()
	client := &http.Client{Transport: rt}
	who := func() string {
		t.Helper()
		resp, err := client.Get(srv.URL + "/who")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		_, _ = bufio.NewReader(resp.Body).WriteTo(&b)
		return b.String()
	}
	if got := who(); got != "2" {
		t.Fatalf("before rotation the server sees serial %s, want 2", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/watch", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.ProtoMajor != 2 {
		t.Errorf("protocol %s, want HTTP/2 as the API server's clients", resp.Proto)
	}
	watch := bufio.NewScanner(resp.Body)
	line := func() (string, bool) {
		ok := watch.Scan()
		return watch.Text(), ok
	}
	if got, ok := line(); !ok || got != "2" {
		t.Fatalf("watch: %q, %v", got, ok)
	}

	m.set(renewed.tls)
	rt.check(time.Now())
	if got := who(); got != "3" {
		t.Errorf("after rotation a new request shows serial %s, want 3", got)
	}
	for range 5 {
		if got, ok := line(); !ok || got != "2" {
			t.Fatalf("the watch opened before the rotation ended at it: %q, %v (%v)", got, ok, watch.Err())
		}
	}

	// The old certificate's expiry ends what is left of its connections.
	rt.check(old.tls.Leaf.NotAfter.Add(time.Second))
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := line(); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the watch over the expired certificate's connection goes on")
		}
	}
	if got := who(); got != "3" {
		t.Errorf("after the old certificate's expiry a request shows serial %s, want 3", got)
	}
}

func srvCA(srv *httptest.Server) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}

// TestNewClient checks the whole: a kubeconfig with certificate files, the
// manager starting from them, and client-go's clientset over the rotating
// transport (which client-go accepts only without TLS options of its own).
func TestNewClient(t *testing.T) {
	ca := newTestCA(t)
	srv := whoServer(t, ca)
	dir := t.TempDir()
	now := time.Now()
	kubeconfig := writeClientKubeconfig(t, dir, srv.URL, srvCA(srv), ca.client(t, "system:node:a", 7, now.Add(-time.Hour), now.Add(time.Hour)))
	// kubeadm init's node: the drop-in names a bootstrap kubeconfig that
	// kubeadm never writes there, as kubelet.conf has a certificate.
	missing := filepath.Join(dir, "bootstrap-kubelet.conf")
	c, err := NewClient(ClientConfig{Kubeconfig: kubeconfig, BootstrapKubeconfig: missing,
		CertDir: filepath.Join(dir, "pki"), NodeName: "a", Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	c.Start()
	defer c.Stop()
	if cur := c.Current(); cur == nil || cur.Leaf.SerialNumber.Int64() != 7 {
		t.Fatalf("the manager did not start from the kubeconfig's certificate: %v", cur)
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		t.Fatalf("clientset over the rotating transport: %v", err)
	}
	got, err := cs.Discovery().RESTClient().Get().AbsPath("/who").DoRaw(context.Background())
	if err != nil || string(got) != "7" {
		t.Errorf("request through the clientset: %q, %v; want serial 7", got, err)
	}

	// A bootstrap kubeconfig that exists but cannot be read is still an
	// error naming it.
	bad := filepath.Join(dir, "bad.conf")
	if err := os.WriteFile(bad, []byte("not: [yaml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := NewClient(ClientConfig{Kubeconfig: kubeconfig, BootstrapKubeconfig: bad,
		CertDir: filepath.Join(dir, "pki2"), NodeName: "a", Log: zerolog.Nop()}); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a bootstrap kubeconfig that does not parse: %v, want an error naming %s", err, bad)
	}
}
