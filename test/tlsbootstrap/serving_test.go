package tlsbootstrap

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/actorlet/actorlet/test/agent"
)

// TestServingCertificateBootstrap: with serverTLSBootstrap the kubelet API
// serves nothing — no self-signed certificate either — until the node's
// kubernetes.io/kubelet-serving CSR, with its addresses as SANs, is
// approved (here by the test, as nobody approves serving CSRs on a kubeadm
// cluster) and signed by kube-controller-manager; then it serves that
// certificate, chained to the cluster CA, and before it expires it asks
// for the next one, which is served from the next connection on. The
// healthz port is plain HTTP and answers throughout.
func TestServingCertificateBootstrap(t *testing.T) {
	n := agent.NewNode(t, kubelet.Binary, kubelet.Options(agent.InCluster(), agent.WithConfig("serverTLSBootstrap: true\n"))...)
	if kubelet.Upstream {
		// Upstream's kubelet makes its root directory a (shared) bind
		// mount of itself (once per start), which outlives it and keeps
		// the test's temporary directory from being removed.
		n.AtCleanup(func() {
			for range 5 {
				if syscall.Unmount(n.RootDir, syscall.MNT_DETACH) != nil {
					return
				}
			}
		})
	}
	admin := n.Env.AdminClient(t)
	ctx := context.Background()
	csrs := admin.CertificatesV1().CertificateSigningRequests()
	user := "system:node:" + n.Name

	// The node identity is shared by the package's tests, and by earlier
	// runs: only CSRs that were not there before count.
	before := sets.New[string]()
	if list, err := csrs.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	} else {
		for _, c := range list.Items {
			before.Insert(c.Name)
		}
	}
	ours := sets.New[string]()
	n.AtCleanup(func() {
		for name := range ours {
			_ = csrs.Delete(context.Background(), name, metav1.DeleteOptions{})
		}
	})
	// pending is the node's new serving CSR that nobody approved yet.
	pending := func() (*certificatesv1.CertificateSigningRequest, error) {
		list, err := csrs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, err
		}
		for i := range list.Items {
			c := &list.Items[i]
			if before.Has(c.Name) || c.Spec.SignerName != certificatesv1.KubeletServingSignerName || c.Spec.Username != user {
				continue
			}
			ours.Insert(c.Name)
			if len(c.Status.Conditions) == 0 {
				return c, nil
			}
		}
		return nil, fmt.Errorf("no pending %s CSR of %s among %d", certificatesv1.KubeletServingSignerName, user, len(list.Items))
	}

	n.Start()
	apiAddr := net.JoinHostPort(n.NodeIP, strconv.Itoa(n.Port))
	roots := x509.NewCertPool()
	caPEM, err := os.ReadFile(n.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots.AppendCertsFromPEM(caPEM)
	// served is the certificate a new connection to the kubelet API gets,
	// verified against the cluster CA for the node's IP.
	served := func() (*x509.Certificate, error) {
		d := &net.Dialer{Timeout: 5 * time.Second}
		conn, err := tls.DialWithDialer(d, "tcp", apiAddr, &tls.Config{RootCAs: roots})
		if err != nil {
			return nil, err
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0], nil
	}
	healthz := func() error {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.Healthz))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(b) != "ok" {
			return fmt.Errorf("healthz: %d %q", resp.StatusCode, b)
		}
		return nil
	}

	// Before the approval: the CSR comes (once the node has reported its
	// addresses), the handshake fails, healthz answers.
	var csr *certificatesv1.CertificateSigningRequest
	n.Eventually("the node's kubelet-serving CSR", 60*time.Second, func() (err error) {
		csr, err = pending()
		return err
	})
	checkServingCSR(t, csr, n.Name, n.NodeIP)
	if cert, err := served(); err == nil {
		t.Fatalf("before the CSR is approved, the kubelet API serves a certificate for %v (issuer %v)", cert.Subject, cert.Issuer)
	} else if !strings.Contains(err.Error(), "tls: internal error") {
		// The server's GetCertificate failed: the client sees an alert.
		t.Errorf("before the CSR is approved: handshake error %v, want the server's alert", err)
	}
	n.Eventually("healthz answers ok", 10*time.Second, healthz)

	first := approveAndServed(t, n, csrs, csr, served)

	// An authorized request with kube-apiserver's client certificate,
	// verifying the node's certificate.
	client := kubeletClient(t, n, roots)
	resp, err := client.Get("https://" + apiAddr + "/pods")
	if err != nil {
		t.Fatalf("GET /pods with the issued serving certificate: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"kind":"PodList"`) {
		t.Errorf("GET /pods: %d %q, want 200 and a PodList", resp.StatusCode, b)
	}
	// Upstream's gauge of the certificate's time to live.
	if ttl := metricValue(t, client, "https://"+apiAddr+"/metrics", "kubelet_certificate_manager_server_ttl_seconds"); ttl <= 0 || ttl > time.Until(first.NotAfter).Seconds()+1 {
		t.Errorf("kubelet_certificate_manager_server_ttl_seconds = %v, want the %v left", ttl, time.Until(first.NotAfter).Round(time.Second))
	}

	// Rotation: the certificate lives CSRSigningDuration (plus the
	// signer's backdating); the manager asks again at 70-90 % of it.
	life := first.NotAfter.Sub(first.NotBefore)
	t.Logf("first certificate: serial %v, %v to %v (%v)", first.SerialNumber, first.NotBefore, first.NotAfter, life)
	if life > 15*time.Minute {
		t.Skipf("the certificate lives %v: too long to see it rotate in a test (ACTORLET_CSR_SIGNING_DURATION is %v)", life, n.Env.CSRSigningDuration)
	}
	within := time.Until(first.NotBefore.Add(life*9/10)) + 30*time.Second
	n.Eventually("a second kubelet-serving CSR, for the rotation", within, func() (err error) {
		csr, err = pending()
		return err
	})
	checkServingCSR(t, csr, n.Name, n.NodeIP)
	// Until the new certificate is issued the old one is still served.
	if cert, err := served(); err != nil || cert.SerialNumber.Cmp(first.SerialNumber) != 0 {
		t.Errorf("while the renewal is pending: %v, %v; want the first certificate", cert, err)
	}
	second := approveAndServed(t, n, csrs, csr, served)
	if second.SerialNumber.Cmp(first.SerialNumber) == 0 {
		t.Fatalf("after the rotation the same certificate is served (serial %v)", first.SerialNumber)
	}
	n.Eventually("healthz answers ok", 10*time.Second, healthz)
	if !n.Proc.Alive() {
		t.Fatal("actorlet exited")
	}

	// Restarted, the node serves the stored certificate without waiting
	// for a CSR (whether it asks for the next one at once depends on where
	// the random rotation point falls).
	n.Stop(syscall.SIGTERM)
	n.Start()
	n.Eventually("the stored certificate served after a restart", 30*time.Second, func() error {
		cert, err := served()
		if err != nil {
			return err
		}
		if cert.SerialNumber.Cmp(second.SerialNumber) != 0 {
			return fmt.Errorf("serial %v served, want %v", cert.SerialNumber, second.SerialNumber)
		}
		return nil
	})
}

// metricValue reads one unlabelled sample from a Prometheus text page.
func metricValue(t *testing.T, client *http.Client, url, name string) float64 {
	t.Helper()
	code, body := agent.Get(t, client, url)
	for line := range strings.SplitSeq(body, "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", name, line, err)
			}
			return f
		}
	}
	t.Fatalf("GET %s: %d, no %s", url, code, name)
	return 0
}

// checkServingCSR checks the request as upstream's kubelet makes it.
func checkServingCSR(t *testing.T, csr *certificatesv1.CertificateSigningRequest, nodeName, nodeIP string) {
	t.Helper()
	block, _ := pem.Decode(csr.Spec.Request)
	if block == nil {
		t.Fatalf("CSR %s: no PEM request", csr.Name)
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatalf("CSR %s: %v", csr.Name, err)
	}
	if req.Subject.CommonName != "system:node:"+nodeName || !slices.Equal(req.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("CSR %s: subject %v, want CN=system:node:%s, O=system:nodes", csr.Name, req.Subject, nodeName)
	}
	if !slices.Contains(req.DNSNames, nodeName) || !slices.ContainsFunc(req.IPAddresses, net.ParseIP(nodeIP).Equal) {
		t.Errorf("CSR %s: SANs %q %v, want the node's host name %s and IP %s", csr.Name, req.DNSNames, req.IPAddresses, nodeName, nodeIP)
	}
	usages := sets.New(csr.Spec.Usages...)
	if !usages.Has(certificatesv1.UsageServerAuth) || !usages.Has(certificatesv1.UsageDigitalSignature) || usages.Has(certificatesv1.UsageClientAuth) {
		t.Errorf("CSR %s: usages %v, want digital signature and server auth", csr.Name, csr.Spec.Usages)
	}
}

// approveAndServed approves csr as the admin and waits until the kubelet
// API serves the certificate kube-controller-manager issues for it.
func approveAndServed(t *testing.T, n *agent.Node, csrs interface {
	UpdateApproval(context.Context, string, *certificatesv1.CertificateSigningRequest, metav1.UpdateOptions) (*certificatesv1.CertificateSigningRequest, error)
	Get(context.Context, string, metav1.GetOptions) (*certificatesv1.CertificateSigningRequest, error)
}, csr *certificatesv1.CertificateSigningRequest, served func() (*x509.Certificate, error)) *x509.Certificate {
	t.Helper()
	ctx := context.Background()
	csr = csr.DeepCopy()
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: certificatesv1.CertificateApproved, Status: v1.ConditionTrue,
		Reason: "TestApproved", Message: "approved by " + t.Name(),
	})
	if _, err := csrs.UpdateApproval(ctx, csr.Name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("approve CSR %s: %v", csr.Name, err)
	}
	var issued *x509.Certificate
	n.Eventually("kube-controller-manager signs CSR "+csr.Name, 60*time.Second, func() error {
		c, err := csrs.Get(ctx, csr.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		block, _ := pem.Decode(c.Status.Certificate)
		if block == nil {
			return fmt.Errorf("CSR %s not issued yet: %v", csr.Name, c.Status.Conditions)
		}
		issued, err = x509.ParseCertificate(block.Bytes)
		return err
	})
	var cert *x509.Certificate
	n.Eventually("the kubelet API serves the issued certificate", 60*time.Second, func() (err error) {
		if cert, err = served(); err != nil {
			return err
		}
		if cert.SerialNumber.Cmp(issued.SerialNumber) != 0 {
			return fmt.Errorf("serial %v served, want %v", cert.SerialNumber, issued.SerialNumber)
		}
		return nil
	})
	return cert
}

// kubeletClient calls the kubelet API with kube-apiserver's client
// certificate (authorized through system:kubelet-api-admin), verifying the
// node's serving certificate against the cluster CA.
func kubeletClient(t *testing.T, n *agent.Node, roots *x509.CertPool) *http.Client {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(n.Env.StateDir+"/pki/apiserver-kubelet-client.crt", n.Env.StateDir+"/pki/apiserver-kubelet-client.key")
	if err != nil {
		t.Fatal(err)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}}}
}
