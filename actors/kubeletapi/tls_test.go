package kubeletapi

import (
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	certutil "k8s.io/client-go/util/cert"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/certificates"
	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
	"github.com/actorlet/actorlet/internal/testutil"
)

func TestParseTLSOptions(t *testing.T) {
	cases := []struct {
		name       string
		minVersion string
		suites     []string
		curves     []int32
		want       TLSOptions
		warning    string // in one of the warnings; "" wants none
		err        string // "": valid
	}{
		{name: "defaults", want: TLSOptions{MinVersion: tls.VersionTLS12}},
		{name: "TLS 1.3", minVersion: "VersionTLS13", want: TLSOptions{MinVersion: tls.VersionTLS13}},
		{name: "suites", suites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want: TLSOptions{MinVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}},
		{name: "insecure suite", suites: []string{"TLS_RSA_WITH_AES_128_CBC_SHA"},
			want:    TLSOptions{MinVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_RSA_WITH_AES_128_CBC_SHA}},
			warning: "insecure cipher suite TLS_RSA_WITH_AES_128_CBC_SHA"},
		{name: "suites with TLS 1.3", minVersion: "VersionTLS13", suites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"},
			want:    TLSOptions{MinVersion: tls.VersionTLS13, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}},
			warning: "TLS 1.3 cipher suites are not configurable"},
		{name: "curves", curves: []int32{int32(tls.X25519)},
			want: TLSOptions{MinVersion: tls.VersionTLS12, CurvePreferences: []tls.CurveID{tls.X25519}}},
		{name: "bad version", minVersion: "1.3", err: `tlsMinVersion: unknown tls version "1.3"`},
		{name: "bad suite", suites: []string{"TLS_NOPE"}, err: "tlsCipherSuites: Cipher suite TLS_NOPE not supported"},
		{name: "bad curve", curves: []int32{0}, err: "tlsCurvePreferences: curve preference 0 is out of range"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, warnings, err := ParseTLSOptions(c.minVersion, c.suites, c.curves)
			if testutil.WantErr(t, err, c.err) {
				return
			}
			if got.MinVersion != c.want.MinVersion || !slices.Equal(got.CipherSuites, c.want.CipherSuites) || !slices.Equal(got.CurvePreferences, c.want.CurvePreferences) {
				t.Errorf("options = %+v, want %+v", got, c.want)
			}
			joined := strings.Join(warnings, "\n")
			if c.warning == "" && joined != "" || !strings.Contains(joined, c.warning) {
				t.Errorf("warnings = %q, want %q", warnings, c.warning)
			}
		})
	}
}

// alwaysAllow is an auth filter that lets everyone in: TLS is what these
// tests are about.
func alwaysAllow(t *testing.T) *auth.Filter {
	t.Helper()
	filter, err := auth.New(auth.Config{
		Authentication: kubeletconfigv1beta1.KubeletAuthentication{
			Anonymous: kubeletconfigv1beta1.KubeletAnonymousAuthentication{Enabled: new(true)}},
		Authorization: kubeletconfigv1beta1.KubeletAuthorization{Mode: kubeletconfigv1beta1.KubeletAuthorizationModeAlwaysAllow},
		NodeName:      "node-a", Log: zerolog.Nop(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return filter
}

// writePair writes a new self-signed certificate for name, and its key, to
// certFile and keyFile, each replaced at once (renamed over the old one).
func writePair(t *testing.T, certFile, keyFile, name string) {
	t.Helper()
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey(name, []net.IP{net.ParseIP("127.0.0.1")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		tmp := path + ".new"
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
}

// serveAPI serves the kubelet API as listen does, on a loopback port, and
// returns its address. p.Auth nil allows every request.
func serveAPI(t *testing.T, p Params) string {
	t.Helper()
	p.Port, p.NodeName, p.Log = 10250, "node-a", zerolog.Nop()
	if p.Auth == nil {
		p.Auth = alwaysAllow(t)
	}
	a := New(p)().(*Actor)
	tlsConfig, handler, err := a.secureAPI()
	if err != nil {
		t.Fatal(err)
	}
	addr, err := a.serveOn("kubelet API", "127.0.0.1:0", handler, tlsConfig, streaming)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.shutdown)
	return addr.String()
}

// handshake connects to addr with client's settings and returns the
// connection's state, or the handshake's error.
func handshake(addr string, client *tls.Config) (tls.ConnectionState, error) {
	client = client.Clone()
	client.InsecureSkipVerify = true
	d := &net.Dialer{Timeout: 10 * time.Second}
	conn, err := tls.DialWithDialer(d, "tcp", addr, client)
	if err != nil {
		return tls.ConnectionState{}, err
	}
	defer conn.Close()
	return conn.ConnectionState(), nil
}

// TestAPIHonoursTLSSettings: tlsMinVersion, tlsCipherSuites and
// tlsCurvePreferences apply to the kubelet API's listener: a client below
// the minimum version, or offering only suites or curves outside the
// configured ones, is refused in the handshake.
func TestAPIHonoursTLSSettings(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	writePair(t, certFile, keyFile, "node-a")
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	parse := func(minVersion string, suites []string, curves []int32) TLSOptions {
		o, _, err := ParseTLSOptions(minVersion, suites, curves)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	tls13 := serveAPI(t, Params{ServingCert: &cert, TLS: parse("VersionTLS13", nil, nil)})
	defaults := serveAPI(t, Params{ServingCert: &cert})
	oneSuite := serveAPI(t, Params{ServingCert: &cert, TLS: parse("", []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}, nil)})
	oneCurve := serveAPI(t, Params{ServingCert: &cert, TLS: parse("", nil, []int32{int32(tls.CurveP384)})})

	tls12 := &tls.Config{MaxVersion: tls.VersionTLS12}
	cases := []struct {
		name    string
		addr    string
		client  *tls.Config
		refused string // in the handshake's error; "" wants it to succeed
	}{
		{"TLS 1.2 client, tlsMinVersion VersionTLS13", tls13, tls12, "protocol version not supported"},
		{"TLS 1.3 client, tlsMinVersion VersionTLS13", tls13, &tls.Config{MinVersion: tls.VersionTLS13}, ""},
		{"TLS 1.1 client, default minimum", defaults, &tls.Config{MinVersion: tls.VersionTLS11, MaxVersion: tls.VersionTLS11}, "protocol version not supported"},
		{"TLS 1.2 client, default minimum", defaults, tls12, ""},
		{"suite not in tlsCipherSuites", oneSuite,
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}}, "handshake failure"},
		{"suite in tlsCipherSuites", oneSuite,
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256}}, ""},
		{"suite allowed by default", defaults,
			&tls.Config{MaxVersion: tls.VersionTLS12, CipherSuites: []uint16{tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384}}, ""},
		{"curve not in tlsCurvePreferences", oneCurve, &tls.Config{CurvePreferences: []tls.CurveID{tls.X25519}}, "handshake failure"},
		{"curve in tlsCurvePreferences", oneCurve, &tls.Config{CurvePreferences: []tls.CurveID{tls.CurveP384}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			state, err := handshake(c.addr, c.client)
			switch {
			case c.refused == "" && err != nil:
				t.Errorf("handshake failed: %v", err)
			case c.refused != "" && err == nil:
				t.Errorf("handshake succeeded (version %s, suite %s); want it refused", tls.VersionName(state.Version), tls.CipherSuiteName(state.CipherSuite))
			case c.refused != "" && !strings.Contains(err.Error(), c.refused):
				t.Errorf("handshake error %v, want %q", err, c.refused)
			}
		})
	}
}

// TestAPIServesReplacedCertificateFiles: with the certificate read from
// files (tlsCertFile/tlsPrivateKeyFile, or the self-signed pair), new files
// renamed over the old ones are served from a later handshake on, within
// three of upstream's refresh periods; files that do not make a pair leave
// the last good certificate served.
func TestAPIServesReplacedCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	writePair(t, certFile, keyFile, "first")
	files, err := certificates.NewFileServing(certFile, keyFile, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	files.Start()
	t.Cleanup(files.Stop)
	addr := serveAPI(t, Params{GetServingCert: files.GetCertificate})

	served := func() string {
		state, err := handshake(addr, &tls.Config{})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		return state.PeerCertificates[0].Subject.CommonName
	}
	waitFor := func(prefix string) {
		t.Helper()
		deadline := time.Now().Add(3 * certificates.FileRefreshPeriod)
		for {
			cn := served()
			if strings.HasPrefix(cn, prefix) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("served %q after %v, want %q", cn, 3*certificates.FileRefreshPeriod, prefix)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitFor("first")
	writePair(t, certFile, keyFile, "second")
	waitFor("second")

	// A key that is not the certificate's: still the second.
	_, otherKey, err := certutil.GenerateSelfSignedCertKey("other", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, otherKey, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond)
	if cn := served(); !strings.HasPrefix(cn, "second") {
		t.Errorf("with a key that is not the certificate's: served %q, want the last good one", cn)
	}
	writePair(t, certFile, keyFile, "third")
	waitFor("third")
}
