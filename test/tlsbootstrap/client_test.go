package tlsbootstrap

import (
	"bytes"
	"crypto/x509"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/actorlet/actorlet/test/agent"
)

const clientSigner = certificatesv1.KubeAPIServerClientKubeletSignerName

// checkNodeClientCert checks a certificate is the node's client
// certificate, issued by the environment's CA: CN system:node:NAME, O
// system:nodes.
func checkNodeClientCert(t *testing.T, n *agent.APIPods, cert *x509.Certificate) {
	t.Helper()
	if cert.Subject.CommonName != "system:node:"+n.Name || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate subject %v, want CN system:node:%s, O system:nodes", cert.Subject, n.Name)
	}
	ca, err := readCert(n.Env.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := cert.CheckSignatureFrom(ca); err != nil {
		t.Errorf("client certificate not issued by the cluster CA: %v", err)
	}
}

// TestBootstrapJoins starts a node with only a bootstrap kubeconfig (a
// token whose CSRs kube-controller-manager approves, as kubeadm's): it gets
// its client certificate, writes its kubeconfig as upstream does, joins,
// is Ready and runs a pod.
func TestBootstrapJoins(t *testing.T) {
	e := bootstrapEnv(t)
	n := newBootstrapNode(t, e.BootstrapKubeconfig)
	if _, err := os.Stat(n.Kubeconfig); !os.IsNotExist(err) {
		t.Fatalf("the kubeconfig %s exists before the start: %v", n.Kubeconfig, err)
	}
	started := time.Now()
	n.Up(t, "boot")
	t.Logf("joined and Ready %v after the start", time.Since(started).Round(time.Millisecond))

	cert, file, err := clientCert(n.Node)
	if err != nil {
		t.Fatal(err)
	}
	checkNodeClientCert(t, n, cert)
	if !strings.HasPrefix(filepath.Base(file), "kubelet-client-") || filepath.Dir(file) != n.CertDir {
		t.Errorf("%s points at %s, want a dated kubelet-client-*.pem in %s", clientPair, file, n.CertDir)
	}
	csrs := csrsFor(n.Admin, n.Name, clientSigner)
	if len(csrs) != 1 || !strings.HasPrefix(csrs[0].Spec.Username, "system:bootstrap:") {
		t.Errorf("client CSRs of the node: %d, first by %q; want one, by the bootstrap token", len(csrs), firstUser(csrs))
	}

	// The kubeconfig: the bootstrap kubeconfig's server and CA, the client
	// certificate and key in the current file.
	got, err := clientcmd.LoadFromFile(n.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig written by the bootstrap: %v", err)
	}
	boot, err := clientcmd.LoadFromFile(e.BootstrapKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := got.Contexts[got.CurrentContext]
	if ctx == nil || got.Clusters[ctx.Cluster] == nil || got.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("kubeconfig %s: no complete current context", n.Kubeconfig)
	}
	bootCluster := boot.Clusters[boot.Contexts[boot.CurrentContext].Cluster]
	cluster, auth := got.Clusters[ctx.Cluster], got.AuthInfos[ctx.AuthInfo]
	if cluster.Server != bootCluster.Server {
		t.Errorf("kubeconfig server %s, want the bootstrap kubeconfig's %s", cluster.Server, bootCluster.Server)
	}
	if cluster.CertificateAuthority != bootCluster.CertificateAuthority || !bytes.Equal(cluster.CertificateAuthorityData, bootCluster.CertificateAuthorityData) {
		t.Errorf("kubeconfig CA %q (%d bytes), want the bootstrap kubeconfig's %q (%d bytes)", cluster.CertificateAuthority,
			len(cluster.CertificateAuthorityData), bootCluster.CertificateAuthority, len(bootCluster.CertificateAuthorityData))
	}
	current := filepath.Join(n.CertDir, clientPair)
	if auth.ClientCertificate != current || auth.ClientKey != current || auth.Token != "" {
		t.Errorf("kubeconfig user: certificate %q, key %q, token set %v; want %s for both and no token",
			auth.ClientCertificate, auth.ClientKey, auth.Token != "", current)
	}
	if !kubelet.Upstream && !strings.Contains(n.Logs(), "tls-bootstrap") {
		t.Errorf("no tls-bootstrap step in the log:\n%s", n.Logs())
	}
	if strings.Contains(n.Logs(), bootstrapToken(t, e.BootstrapKubeconfig)) {
		t.Error("the bootstrap token reached the log")
	}

	n.Run(t, n.NewPod("joined", nil, n.Sleeper("c")))

	// A restart with the kubeconfig valid does not bootstrap again.
	n.Stop(syscall.SIGTERM)
	n.Start()
	agent.Eventually(t, "node Ready after a restart", 30*time.Second, n.Ready)
	if again := csrsFor(n.Admin, n.Name, clientSigner); len(again) != len(csrs) {
		t.Errorf("a restart with a valid kubeconfig made %d new client CSRs", len(again)-len(csrs))
	}
}

// TestBootstrapApprovedByHand starts a node whose CSR nobody approves but
// the test: it waits, saying which CSR it waits for, and joins once the
// test approves it.
func TestBootstrapApprovedByHand(t *testing.T) {
	e := bootstrapEnv(t)
	n := newBootstrapNode(t, e.BootstrapManualKubeconfig)
	n.Launch()
	csr := pendingCSR(t, n.Admin, n.Name, clientSigner, 60*time.Second)
	if !kubelet.Upstream {
		agent.Eventually(t, "the wait for the CSR logged", 10*time.Second, func() error {
			if !strings.Contains(n.Logs(), csr.Name) {
				return fmt.Errorf("no %s in the log", csr.Name)
			}
			return nil
		})
	}
	agent.Consistently(t, "no kubeconfig before the approval", 3*time.Second, 500*time.Millisecond, func() error {
		if _, err := os.Stat(n.Kubeconfig); !os.IsNotExist(err) {
			return fmt.Errorf("kubeconfig: %v", err)
		}
		if !n.Proc.Alive() {
			return fmt.Errorf("exited:\n%s", n.Logs())
		}
		return nil
	})
	approveCSR(t, n.Admin, csr.Name)
	agent.Eventually(t, "node Ready after the approval", 60*time.Second, n.Ready)
	cert, _, err := clientCert(n.Node)
	if err != nil {
		t.Fatal(err)
	}
	checkNodeClientCert(t, n, cert)
}

// TestBootstrapDenied denies the node's CSR: start-up fails with exit code
// 1 and one line naming the step, the CSR, the reason and the message.
func TestBootstrapDenied(t *testing.T) {
	e := bootstrapEnv(t)
	n := newBootstrapNode(t, e.BootstrapManualKubeconfig)
	n.Launch()
	csr := pendingCSR(t, n.Admin, n.Name, clientSigner, 60*time.Second)
	reason, message := "NotOurMachine", fmt.Sprintf("no machine %s in the inventory", n.Name)
	denyCSR(t, n.Admin, csr.Name, reason, message)
	code, exited := n.Proc.ExitCode(30 * time.Second)
	if !exited {
		t.Fatalf("still running 30 s after its CSR %s was denied:\n%s", csr.Name, n.Logs())
	}
	if code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if kubelet.Upstream {
		return
	}
	var line string
	for _, l := range strings.Split(n.Logs(), "\n") {
		if strings.Contains(l, csr.Name) && strings.Contains(l, "denied") {
			line = l
		}
	}
	for _, part := range []string{"TLS bootstrap", csr.Name, reason, message} {
		if !strings.Contains(line, part) {
			t.Errorf("the error line %q lacks %q; log:\n%s", line, part, n.Logs())
		}
	}
	if _, err := os.Stat(n.Kubeconfig); !os.IsNotExist(err) {
		t.Errorf("a kubeconfig was written though the CSR was denied: %v", err)
	}
}

// TestClientRotation lets the node's client certificate (short-lived:
// the environment's signing duration) come due: the node renews it
// through a CSR with its current certificate, stores it as a new dated
// file, and goes on with it without going NotReady, without restarting
// its pod, with its watches working, and past the old certificate's
// expiry.
func TestClientRotation(t *testing.T) {
	e := bootstrapEnv(t)
	if e.CSRSigningDuration <= 0 || e.CSRSigningDuration > 10*time.Minute {
		t.Fatalf("the environment's CSR signing duration %v is not short: rotation would not come within the test", e.CSRSigningDuration)
	}
	n := newBootstrapNode(t, e.BootstrapKubeconfig, agent.WithConfig("rotateCertificates: true\n"))
	n.Up(t, "rotate")
	first, firstFile, err := clientCert(n.Node)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("first client certificate: serial %s, %s to %s", first.SerialNumber, first.NotBefore.Format(time.TimeOnly), first.NotAfter.Format(time.TimeOnly))
	before := n.Run(t, n.NewPod("before", nil, n.Sleeper("c")))
	containerID := before.Status.ContainerStatuses[0].ContainerID

	// stillFine fails the test once the node is not Ready or the pod
	// restarted.
	stillFine := func(when string) {
		t.Helper()
		if err := n.Ready(); err != nil {
			t.Fatalf("%s: node not Ready: %v", when, err)
		}
		p, err := n.Get("before")
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].ContainerID != containerID || cs[0].RestartCount != 0 {
			t.Fatalf("%s: pod before restarted: %+v", when, cs)
		}
	}

	var renewed *x509.Certificate
	var renewedFile string
	agent.Eventually(t, "client certificate renewed", time.Until(first.NotAfter)+30*time.Second, func() error {
		stillFine("waiting for the renewal")
		cert, file, err := clientCert(n.Node)
		if err != nil {
			return err
		}
		if cert.SerialNumber.Cmp(first.SerialNumber) == 0 {
			return fmt.Errorf("still serial %s, valid until %s", first.SerialNumber, first.NotAfter.Format(time.TimeOnly))
		}
		renewed, renewedFile = cert, file
		return nil
	})
	elapsed := time.Since(first.NotBefore)
	lifetime := first.NotAfter.Sub(first.NotBefore)
	t.Logf("renewed at %.0f %% of the first certificate's lifetime: serial %s, file %s", 100*elapsed.Seconds()/lifetime.Seconds(),
		renewed.SerialNumber, filepath.Base(renewedFile))
	checkNodeClientCert(t, n, renewed)
	if renewedFile == firstFile {
		t.Errorf("%s still points at %s", clientPair, firstFile)
	}
	if _, err := os.Stat(firstFile); err != nil {
		t.Errorf("the first certificate's file: %v", err)
	}
	csrs := csrsFor(n.Admin, n.Name, clientSigner)
	if len(csrs) < 2 || csrs[len(csrs)-1].Spec.Username != "system:node:"+n.Name {
		t.Errorf("client CSRs of the node: %d, the last by %q; want a renewal by system:node:%s", len(csrs), lastUser(csrs), n.Name)
	}
	if !kubelet.Upstream {
		// The transport looks for a new certificate every 10 s, as upstream's.
		agent.Eventually(t, "the rotation logged", 15*time.Second, func() error {
			if !strings.Contains(n.Logs(), "client certificate rotated") {
				return fmt.Errorf("not yet")
			}
			return nil
		})
	}

	// The watches work: a pod made after the rotation starts.
	n.Run(t, n.NewPod("after", nil, n.Sleeper("c")))
	stillFine("after the rotation")

	// Past the first certificate's expiry, the connections it authenticated
	// are gone; the node goes on with the renewed one.
	if wait := time.Until(first.NotAfter.Add(15 * time.Second)); wait > 0 {
		agent.Consistently(t, "node Ready and pod not restarted until the first certificate expired", wait, 5*time.Second, func() error {
			stillFine("until the first certificate's expiry")
			return nil
		})
	}
	n.Run(t, n.NewPod("after-expiry", nil, n.Sleeper("c")))
	stillFine("after the first certificate's expiry")
}

func firstUser(csrs []certificatesv1.CertificateSigningRequest) string {
	if len(csrs) == 0 {
		return ""
	}
	return csrs[0].Spec.Username
}

func lastUser(csrs []certificatesv1.CertificateSigningRequest) string {
	if len(csrs) == 0 {
		return ""
	}
	return csrs[len(csrs)-1].Spec.Username
}

// bootstrapToken is the token of a bootstrap kubeconfig, to make sure it
// is never logged.
func bootstrapToken(t *testing.T, path string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range cfg.AuthInfos {
		if a.Token != "" {
			return a.Token
		}
	}
	t.Fatalf("%s has no token", path)
	return ""
}
