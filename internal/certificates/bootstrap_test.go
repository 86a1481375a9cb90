package certificates

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/actorlet/actorlet/internal/testutil"
)

// testCA signs certificates for the tests.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// sign issues a client certificate for the CSR's key and subject, valid
// from notBefore to notAfter.
func (ca *testCA) sign(t *testing.T, csrPEM []byte, serial int64, notBefore, notAfter time.Time) []byte {
	t.Helper()
	block, _ := pem.Decode(csrPEM)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: req.Subject, NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, req.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// writeBootstrapKubeconfig writes a kubeconfig with a token, as kubeadm's
// bootstrap-kubelet.conf.
func writeBootstrapKubeconfig(t *testing.T, path string, ca []byte) {
	t.Helper()
	cfg := clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"c": {Server: "https://127.0.0.1:6443", CertificateAuthorityData: ca}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"u": {Token: "abcdef.0123456789abcdef"}},
		Contexts:       map[string]*clientcmdapi.Context{"x": {Cluster: "c", AuthInfo: "u"}},
		CurrentContext: "x",
	}
	if err := clientcmd.WriteToFile(cfg, path); err != nil {
		t.Fatal(err)
	}
}

// signer plays the CSR controllers on a fake clientset: decide is called
// for each new CSR and says what to do with it.
func signer(ctx context.Context, t *testing.T, client kubernetes.Interface, decide func(*certificatesv1.CertificateSigningRequest) bool) {
	seen := map[string]bool{}
	for ctx.Err() == nil {
		list, err := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
		if err == nil {
			for i := range list.Items {
				csr := &list.Items[i]
				if seen[csr.Name] {
					continue
				}
				seen[csr.Name] = true
				if decide(csr) {
					if _, err := client.CertificatesV1().CertificateSigningRequests().UpdateStatus(ctx, csr, metav1.UpdateOptions{}); err != nil {
						t.Errorf("update CSR %s: %v", csr.Name, err)
					}
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestBootstrap(t *testing.T) {
	ca := newTestCA(t)
	tests := []struct {
		name    string
		decide  func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) bool
		wantErr []string // all in the error; nil: success
	}{
		{"approved and issued", func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) bool {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue}}
			csr.Status.Certificate = ca.sign(t, csr.Spec.Request, 2, time.Now().Add(-time.Minute), time.Now().Add(time.Hour))
			return true
		}, nil},
		{"denied", func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) bool {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateDenied,
				Status: corev1.ConditionTrue, Reason: "NotThisNode", Message: "no such machine"}}
			return true
		}, []string{"certificate signing request node-csr-", "denied", "NotThisNode", "no such machine"}},
		{"failed", func(t *testing.T, csr *certificatesv1.CertificateSigningRequest) bool {
			csr.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateFailed,
				Status: corev1.ConditionTrue, Reason: "SignerError", Message: "no key"}}
			return true
		}, []string{"certificate signing request node-csr-", "failed", "SignerError", "no key"}},
		{"never approved", func(*testing.T, *certificatesv1.CertificateSigningRequest) bool { return false },
			[]string{"certificate signing request node-csr-", "was not approved and issued within 300ms"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			certDir := filepath.Join(dir, "pki")
			kubeconfig := filepath.Join(dir, "kubelet.conf")
			bootstrap := filepath.Join(dir, "bootstrap-kubelet.conf")
			writeBootstrapKubeconfig(t, bootstrap, ca.pem)
			client := fake.NewClientset()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go signer(ctx, t, client, func(csr *certificatesv1.CertificateSigningRequest) bool { return tc.decide(t, csr) })

			var logs testutil.LockedBuffer
			done, err := Bootstrap(ctx, BootstrapConfig{
				Kubeconfig: kubeconfig, BootstrapKubeconfig: bootstrap, CertDir: certDir, NodeName: "node-a",
				Log:             zerolog.New(&logs),
				NewClient:       func(*rest.Config) (kubernetes.Interface, error) { return client, nil },
				ApprovalTimeout: 300 * time.Millisecond, ReportEvery: 100 * time.Millisecond,
			})
			if strings.Contains(logs.String(), "0123456789abcdef") {
				t.Errorf("the bootstrap token reached the log:\n%s", logs.String())
			}
			csrs, _ := client.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
			if len(csrs.Items) != 1 {
				t.Fatalf("%d CSRs, want 1", len(csrs.Items))
			}
			checkCSR(t, &csrs.Items[0])
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Bootstrap succeeded, want an error with %q", tc.wantErr)
				}
				for _, part := range tc.wantErr {
					if !strings.Contains(err.Error(), part) {
						t.Errorf("error %q lacks %q", err, part)
					}
				}
				if !strings.Contains(err.Error(), csrs.Items[0].Name) {
					t.Errorf("error %q does not name CSR %s", err, csrs.Items[0].Name)
				}
				if _, err := os.Stat(filepath.Join(certDir, tmpPrivateKeyFile)); err != nil {
					t.Errorf("the key of the unfinished bootstrap is not kept: %v", err)
				}
				if _, err := os.Stat(kubeconfig); !os.IsNotExist(err) {
					t.Errorf("kubeconfig written after a failed bootstrap: %v", err)
				}
				if tc.name == "never approved" && !strings.Contains(logs.String(), "waiting for approval of certificate signing request "+csrs.Items[0].Name) {
					t.Errorf("the wait for approval is not logged with the CSR's name:\n%s", logs.String())
				}
				return
			}
			if err != nil || !done {
				t.Fatalf("Bootstrap = %v, %v", done, err)
			}
			checkBootstrapped(t, kubeconfig, certDir, ca.pem)
			// The kubeconfig is valid now: a second run does nothing.
			if done, err := Bootstrap(ctx, BootstrapConfig{Kubeconfig: kubeconfig, BootstrapKubeconfig: bootstrap, CertDir: certDir,
				NodeName: "node-a", Log: zerolog.Nop(), NewClient: func(*rest.Config) (kubernetes.Interface, error) { return client, nil }}); done || err != nil {
				t.Errorf("second Bootstrap = %v, %v; want false, nil", done, err)
			}
		})
	}
}

// checkCSR checks the CSR is upstream's node client CSR.
func checkCSR(t *testing.T, csr *certificatesv1.CertificateSigningRequest) {
	t.Helper()
	if csr.Spec.SignerName != "kubernetes.io/kube-apiserver-client-kubelet" {
		t.Errorf("signer %q", csr.Spec.SignerName)
	}
	if !strings.HasPrefix(csr.Name, "node-csr-") {
		t.Errorf("CSR name %q, want upstream's node-csr-DIGEST", csr.Name)
	}
	block, _ := pem.Decode(csr.Spec.Request)
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if req.Subject.CommonName != "system:node:node-a" || len(req.Subject.Organization) != 1 || req.Subject.Organization[0] != "system:nodes" {
		t.Errorf("subject %v, want CN system:node:node-a, O system:nodes", req.Subject)
	}
	want := map[certificatesv1.KeyUsage]bool{certificatesv1.UsageDigitalSignature: true, certificatesv1.UsageClientAuth: true}
	if len(csr.Spec.Usages) != len(want) {
		t.Errorf("usages %v", csr.Spec.Usages)
	}
	for _, u := range csr.Spec.Usages {
		if !want[u] {
			t.Errorf("usage %q", u)
		}
	}
}

// checkBootstrapped checks the files a bootstrap leaves, as upstream's.
func checkBootstrapped(t *testing.T, kubeconfig, certDir string, ca []byte) {
	t.Helper()
	current := filepath.Join(certDir, "kubelet-client-current.pem")
	target, err := os.Readlink(current)
	if err != nil {
		t.Fatalf("kubelet-client-current.pem: %v", err)
	}
	if !strings.HasPrefix(filepath.Base(target), "kubelet-client-") || filepath.Base(target) == "kubelet-client-current.pem" {
		t.Errorf("kubelet-client-current.pem points at %s, want a dated file", target)
	}
	if _, err := os.Stat(filepath.Join(certDir, tmpPrivateKeyFile)); !os.IsNotExist(err) {
		t.Errorf("the bootstrap's key file is left: %v", err)
	}
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := cfg.Contexts[cfg.CurrentContext]
	if ctx == nil || ctx.Cluster != "default-cluster" || ctx.AuthInfo != "default-auth" {
		t.Fatalf("kubeconfig context %+v, want upstream's default-context", ctx)
	}
	if c := cfg.Clusters["default-cluster"]; c.Server != "https://127.0.0.1:6443" || string(c.CertificateAuthorityData) != string(ca) {
		t.Errorf("cluster %s, CA from the bootstrap kubeconfig: %v", c.Server, string(c.CertificateAuthorityData) == string(ca))
	}
	if a := cfg.AuthInfos["default-auth"]; a.ClientCertificate != current || a.ClientKey != current || a.Token != "" {
		t.Errorf("auth %+v, want client certificate and key %s and no token", a, current)
	}
	if ok, why, err := KubeconfigValid(kubeconfig); !ok || err != nil {
		t.Errorf("KubeconfigValid after the bootstrap = %v, %q, %v", ok, why, err)
	}
}
