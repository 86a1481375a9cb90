package tlsbootstrap

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// clientPair is upstream's current client certificate file in --cert-dir:
// a symbolic link to the dated file that holds the certificate and key.
const clientPair = "kubelet-client-current.pem"

// bootstrapEnv is the environment with the API server, failing the test
// when it has no bootstrap tokens (an environment from before #20).
func bootstrapEnv(t *testing.T) *env.Env {
	t.Helper()
	e := env.Require(t, env.WithAPIServer())
	if e.BootstrapKubeconfig == "" || e.BootstrapManualKubeconfig == "" {
		t.Fatal("the environment has no bootstrap kubeconfigs (ACTORLET_BOOTSTRAP_KUBECONFIG, ACTORLET_BOOTSTRAP_MANUAL_KUBECONFIG): " +
			"run hack/node-env up --with-apiserver from this checkout")
	}
	return e
}

// newBootstrapNode prepares a node that joins with only bootstrapKubeconfig
// (agent.Bootstrap), reachable by the API server, with opts (and what
// upstream's kubelet needs on this machine when the tests run against it);
// Up starts it and waits until it is Ready, Launch starts it without
// waiting.
func newBootstrapNode(t *testing.T, bootstrapKubeconfig string, opts ...agent.NodeOption) *agent.APIPods {
	t.Helper()
	base := []agent.NodeOption{agent.Bootstrap(bootstrapKubeconfig), agent.NamePrefix("boot-")}
	return agent.NewAPIPods(t, kubelet.Binary, append(kubelet.Options(base...), opts...)...)
}

// readCert reads the first certificate of a PEM file.
func readCert(path string) (*x509.Certificate, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, fmt.Errorf("%s: no certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// clientCert is the node's current client certificate and the dated file
// that kubelet-client-current.pem points at.
func clientCert(n *agent.Node) (*x509.Certificate, string, error) {
	link := filepath.Join(n.CertDir, clientPair)
	target, err := os.Readlink(link)
	if err != nil {
		return nil, "", err
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(n.CertDir, target)
	}
	cert, err := readCert(link)
	return cert, target, err
}

// csrsFor lists the node's CSRs (CN system:node:NAME) for signer, oldest
// first.
func csrsFor(admin kubernetes.Interface, node, signer string) []certificatesv1.CertificateSigningRequest {
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range agent.NodeCSRs(context.Background(), admin, node) {
		if csr.Spec.SignerName == signer {
			out = append(out, csr)
		}
	}
	return out
}

// pendingCSR waits for a CSR of the node for signer that has no condition
// yet and returns it.
func pendingCSR(t *testing.T, admin kubernetes.Interface, node, signer string, within time.Duration) certificatesv1.CertificateSigningRequest {
	t.Helper()
	var found certificatesv1.CertificateSigningRequest
	agent.Eventually(t, "a pending "+signer+" CSR of node "+node, within, func() error {
		for _, csr := range csrsFor(admin, node, signer) {
			if len(csr.Status.Conditions) == 0 {
				found = csr
				return nil
			}
		}
		return fmt.Errorf("none pending among %d", len(csrsFor(admin, node, signer)))
	})
	return found
}

// decideCSR approves or denies the CSR named name as the admin, with reason
// and message, as kubectl certificate approve/deny does.
func decideCSR(t *testing.T, admin kubernetes.Interface, name string, approve bool, reason, message string) {
	t.Helper()
	ctx := context.Background()
	csr, err := admin.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get CSR %s: %v", name, err)
	}
	typ := certificatesv1.CertificateDenied
	if approve {
		typ = certificatesv1.CertificateApproved
	}
	csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
		Type: typ, Status: v1.ConditionTrue, Reason: reason, Message: message, LastUpdateTime: metav1.Now(),
	})
	if _, err := admin.CertificatesV1().CertificateSigningRequests().UpdateApproval(ctx, name, csr, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("%s CSR %s: %v", typ, name, err)
	}
}

// approveCSR approves the CSR named name as the admin.
func approveCSR(t *testing.T, admin kubernetes.Interface, name string) {
	t.Helper()
	decideCSR(t, admin, name, true, "ApprovedByTest", "approved by "+t.Name())
}

// denyCSR denies the CSR named name as the admin with reason and message.
func denyCSR(t *testing.T, admin kubernetes.Interface, name, reason, message string) {
	t.Helper()
	decideCSR(t, admin, name, false, reason, message)
}
