package certificates

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/actorlet/actorlet/internal/metrics"
)

func TestServingTemplate(t *testing.T) {
	ip := func(s string) net.IP { return net.ParseIP(s) }
	tests := []struct {
		name         string
		addresses    []v1.NodeAddress
		allowDNSOnly bool
		wantNil      bool
		wantDNS      []string
		wantIPs      []net.IP
	}{
		{name: "no addresses yet", wantNil: true},
		{name: "host name only", addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "node-a"}}, wantNil: true},
		{name: "host name only, AllowDNSOnlyNodeCSR", allowDNSOnly: true,
			addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "node-a"}}, wantDNS: []string{"node-a"}},
		{name: "AllowDNSOnlyNodeCSR needs a name too", allowDNSOnly: true, wantNil: true},
		{name: "as actorlet reports them",
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}},
			wantDNS:   []string{"node-a"}, wantIPs: []net.IP{ip("10.0.0.5")}},
		{name: "every type, duplicates once, sorted",
			addresses: []v1.NodeAddress{
				{Type: v1.NodeExternalIP, Address: "203.0.113.7"},
				{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
				{Type: v1.NodeInternalIP, Address: "10.0.0.5"},
				{Type: v1.NodeHostName, Address: "node-a"},
				{Type: v1.NodeInternalDNS, Address: "node-a"},
				{Type: v1.NodeExternalDNS, Address: "a.example.com"},
				{Type: v1.NodeInternalIP, Address: "fd00::5"},
			},
			wantDNS: []string{"a.example.com", "node-a"}, wantIPs: []net.IP{ip("10.0.0.5"), ip("203.0.113.7"), ip("fd00::5")}},
		{name: "a host name that is an IP is an IP",
			addresses: []v1.NodeAddress{{Type: v1.NodeHostName, Address: "10.0.0.9"}}, wantIPs: []net.IP{ip("10.0.0.9")}},
		{name: "empty and malformed addresses are skipped",
			addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ""}, {Type: v1.NodeInternalIP, Address: "not-an-ip"},
				{Type: v1.NodeHostName, Address: ""}, {Type: v1.NodeExternalIP, Address: "10.0.0.5"}},
			wantIPs: []net.IP{ip("10.0.0.5")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := servingTemplate("node-a", tt.addresses, tt.allowDNSOnly)
			if tt.wantNil {
				if got != nil {
					t.Fatalf("template = %+v, want none", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no template")
			}
			if got.Subject.CommonName != "system:node:node-a" || !reflect.DeepEqual(got.Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("subject = %v, want CN=system:node:node-a, O=system:nodes", got.Subject)
			}
			if !reflect.DeepEqual(got.DNSNames, tt.wantDNS) {
				t.Errorf("DNS names = %q, want %q", got.DNSNames, tt.wantDNS)
			}
			if !slices.EqualFunc(got.IPAddresses, tt.wantIPs, net.IP.Equal) {
				t.Errorf("IPs = %v, want %v", got.IPAddresses, tt.wantIPs)
			}
		})
	}
}

// issue signs a certificate for the public key and names of csrPEM (or of
// the template, when csrPEM is nil, with a key of its own) valid from
// notBefore to notAfter; it returns the certificate's and key's PEM.
func (ca *testCA) issue(t *testing.T, csrPEM []byte, tmpl *x509.Certificate) (certPEM, keyPEM []byte) {
	t.Helper()
	var pub any
	if csrPEM != nil {
		block, _ := pem.Decode(csrPEM)
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err != nil {
			t.Error(err)
			return nil, nil
		}
		pub = req.PublicKey
		tmpl.Subject, tmpl.DNSNames, tmpl.IPAddresses = req.Subject, req.DNSNames, req.IPAddresses
	} else {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		pub = &key.PublicKey
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
	}
	tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, pub, ca.key)
	if err != nil {
		t.Error(err)
		return nil, nil
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM
}

// servingSigningClient is a fake API server whose CSRs are approved and issued as
// they are created, as kube-controller-manager's would be once approved.
// The created CSRs go to csrs.
func servingSigningClient(t *testing.T, ca *testCA, lifetime time.Duration, objects ...runtime.Object) (*fake.Clientset, chan *certificatesv1.CertificateSigningRequest) {
	client := fake.NewClientset(objects...)
	csrs := make(chan *certificatesv1.CertificateSigningRequest, 10)
	serial := int64(100)
	client.PrependReactor("create", "certificatesigningrequests", func(action k8stesting.Action) (bool, runtime.Object, error) {
		csr := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.CertificateSigningRequest).DeepCopy()
		serial++
		if csr.Name == "" {
			// The fake API server does not generate names.
			csr.Name = fmt.Sprintf("%scsr-%d", csr.GenerateName, serial)
		}
		certPEM, _ := ca.issue(t, csr.Spec.Request, &x509.Certificate{SerialNumber: big.NewInt(serial),
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(lifetime)})
		csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{
			Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue, Reason: "Test"}}
		csr.Status.Certificate = certPEM
		csrs <- csr.DeepCopy()
		// The tracker stores the object with its status, as if the
		// approval and the signature had come right after.
		err := client.Tracker().Create(certificatesv1.SchemeGroupVersion.WithResource("certificatesigningrequests"), csr, "")
		return true, csr, err
	})
	return client, csrs
}

// storeServingCurrent stores a pair in dir as the file store does: a dated file
// that kubelet-server-current.pem points at.
func storeServingCurrent(t *testing.T, dir string, certPEM, keyPEM []byte) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "kubelet-server-2000-01-01-00-00-00.pem"), append(certPEM, keyPEM...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("kubelet-server-2000-01-01-00-00-00.pem", filepath.Join(dir, "kubelet-server-current.pem")); err != nil {
		t.Fatal(err)
	}
}

func TestServingManagerRequestsAndServes(t *testing.T) {
	ca := newTestCA(t)
	addresses := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}}
	client, csrs := servingSigningClient(t, ca, time.Hour)
	dir := t.TempDir()
	m, err := NewServingManager(ServingConfig{NodeName: "node-a", CertDir: dir, Kube: client,
		Addresses: func() []v1.NodeAddress { return addresses }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.GetCertificate(nil); !errors.Is(err, ErrNoServingCertificate) {
		t.Fatalf("before any request: GetCertificate error = %v, want %v", err, ErrNoServingCertificate)
	}
	m.Start()
	defer m.Stop()

	var csr *certificatesv1.CertificateSigningRequest
	select {
	case csr = <-csrs:
	case <-time.After(30 * time.Second):
		t.Fatal("no CSR created")
	}
	if csr.Spec.SignerName != certificatesv1.KubeletServingSignerName {
		t.Errorf("signer = %q, want %q", csr.Spec.SignerName, certificatesv1.KubeletServingSignerName)
	}
	// The manager's keys are ECDSA: no key encipherment, as upstream.
	wantUsages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageServerAuth}
	if !reflect.DeepEqual(csr.Spec.Usages, wantUsages) {
		t.Errorf("usages = %v, want %v", csr.Spec.Usages, wantUsages)
	}

	var cert *tls.Certificate
	deadline := time.Now().Add(30 * time.Second)
	for cert == nil && time.Now().Before(deadline) {
		cert, _ = m.GetCertificate(nil)
		time.Sleep(50 * time.Millisecond)
	}
	if cert == nil || cert.Leaf == nil {
		t.Fatal("no certificate served after the CSR was issued")
	}
	if cert.Leaf.Subject.CommonName != "system:node:node-a" || !slices.Equal(cert.Leaf.DNSNames, []string{"node-a"}) ||
		len(cert.Leaf.IPAddresses) != 1 || !cert.Leaf.IPAddresses[0].Equal(net.ParseIP("10.0.0.5")) {
		t.Errorf("served certificate: CN %q, DNS %q, IPs %v; want system:node:node-a, node-a, 10.0.0.5",
			cert.Leaf.Subject.CommonName, cert.Leaf.DNSNames, cert.Leaf.IPAddresses)
	}
	if _, err := os.Stat(filepath.Join(dir, "kubelet-server-current.pem")); err != nil {
		t.Errorf("the issued certificate is not stored: %v", err)
	}
}

func TestServingManagerStoredCertificates(t *testing.T) {
	ca := newTestCA(t)
	valid := func() *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:node-a"},
			NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)}
	}
	expired := func() *x509.Certificate {
		return &x509.Certificate{SerialNumber: big.NewInt(8), Subject: pkix.Name{CommonName: "system:node:node-a"},
			NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	}
	tests := []struct {
		name string
		// current is stored as kubelet-server-current.pem; files is
		// given as tlsCertFile/tlsPrivateKeyFile.
		current, files func() *x509.Certificate
		wantSerial     int64 // 0: no certificate
	}{
		{name: "nothing stored"},
		{name: "stored certificate", current: valid, wantSerial: 7},
		{name: "expired stored certificate", current: expired},
		{name: "tlsCertFile while nothing is stored", files: valid, wantSerial: 7},
		{name: "the stored certificate before tlsCertFile", current: valid, files: expired, wantSerial: 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			c := ServingConfig{NodeName: "node-a", CertDir: dir, Log: zerolog.Nop()}
			if tt.current != nil {
				certPEM, keyPEM := ca.issue(t, nil, tt.current())
				storeServingCurrent(t, dir, certPEM, keyPEM)
			}
			if tt.files != nil {
				certPEM, keyPEM := ca.issue(t, nil, tt.files())
				c.CertFile, c.KeyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
				if err := os.WriteFile(c.CertFile, certPEM, 0o600); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(c.KeyFile, keyPEM, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			m, err := NewServingManager(c)
			if err != nil {
				t.Fatal(err)
			}
			// Standalone (no client): started, it never requests one.
			m.Start()
			defer m.Stop()
			cert, err := m.GetCertificate(&tls.ClientHelloInfo{})
			if tt.wantSerial == 0 {
				if !errors.Is(err, ErrNoServingCertificate) || cert != nil {
					t.Fatalf("GetCertificate = %v, %v; want %v", cert, err, ErrNoServingCertificate)
				}
				if err.Error() != "no serving certificate available for the kubelet" {
					t.Errorf("error text %q is not upstream's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cert.Leaf.SerialNumber.Int64() != tt.wantSerial {
				t.Errorf("serial = %v, want %d", cert.Leaf.SerialNumber, tt.wantSerial)
			}
		})
	}
}

// TestServingManagerRotates: a certificate near the end of its life is
// replaced through a new CSR, and the next GetCertificate serves the new
// one.
func TestServingManagerRotates(t *testing.T) {
	ca := newTestCA(t)
	client, csrs := servingSigningClient(t, ca, time.Hour)
	dir := t.TempDir()
	// Stored: a certificate past 90% of its life, so the rotation deadline
	// has passed.
	certPEM, keyPEM := ca.issue(t, nil, &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:node-a"},
		DNSNames: []string{"node-a"}, IPAddresses: []net.IP{net.ParseIP("10.0.0.5")},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Minute)})
	storeServingCurrent(t, dir, certPEM, keyPEM)
	addresses := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}}
	m, err := NewServingManager(ServingConfig{NodeName: "node-a", CertDir: dir, Kube: client,
		Addresses: func() []v1.NodeAddress { return addresses }, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	if cert, err := m.GetCertificate(nil); err != nil || cert.Leaf.SerialNumber.Int64() != 7 {
		t.Fatalf("before rotation: %v, %v; want serial 7", cert, err)
	}
	m.Start()
	defer m.Stop()
	select {
	case <-csrs:
	case <-time.After(30 * time.Second):
		t.Fatal("no CSR to rotate the certificate")
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if cert, err := m.GetCertificate(nil); err == nil && cert.Leaf.SerialNumber.Int64() != 7 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the rotated certificate is not served")
}

func TestServingManagerStopTwice(t *testing.T) {
	m, err := NewServingManager(ServingConfig{NodeName: "node-a", CertDir: t.TempDir(), Kube: fake.NewClientset(), Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	m.Start()
	m.Stop()
	m.Stop()
	m.Start() // no effect after Stop
}

// TestServingMetrics: upstream's three serving certificate metrics are on
// /metrics once a manager exists; the TTL is the started manager's
// certificate's, +Inf without one.
func TestServingMetrics(t *testing.T) {
	ca := newTestCA(t)
	dir := t.TempDir()
	certPEM, keyPEM := ca.issue(t, nil, &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: "system:node:node-a"},
		NotBefore: time.Now().Add(-time.Minute), NotAfter: time.Now().Add(time.Hour)})
	storeServingCurrent(t, dir, certPEM, keyPEM)
	m, err := NewServingManager(ServingConfig{NodeName: "node-a", CertDir: dir, Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ttl := func() float64 {
		t.Helper()
		families, err := metrics.Registry.Gather()
		if err != nil {
			t.Fatal(err)
		}
		found := map[string]float64{}
		for _, f := range families {
			for _, s := range f.GetMetric() {
				switch {
				case s.GetGauge() != nil:
					found[f.GetName()] = s.GetGauge().GetValue()
				default:
					found[f.GetName()] = 0
				}
			}
		}
		for _, name := range []string{"kubelet_server_expiration_renew_errors", "kubelet_certificate_manager_server_rotation_seconds"} {
			if _, ok := found[name]; !ok {
				t.Errorf("%s is not registered", name)
			}
		}
		v, ok := found["kubelet_certificate_manager_server_ttl_seconds"]
		if !ok {
			t.Fatal("kubelet_certificate_manager_server_ttl_seconds is not registered")
		}
		return v
	}
	if v := ttl(); !math.IsInf(v, 1) {
		t.Errorf("TTL before Start = %v, want +Inf", v)
	}
	m.Start()
	if v := ttl(); v < 3500 || v > 3600 {
		t.Errorf("TTL = %v, want about 3600", v)
	}
	m.Stop()
	if v := ttl(); !math.IsInf(v, 1) {
		t.Errorf("TTL after Stop = %v, want +Inf", v)
	}
}
