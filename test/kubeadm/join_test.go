package kubeadm

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
	"github.com/actorlet/actorlet/test/env/systemdunit"
)

// dropIn is the shipped drop-in that the test runs actorlet through.
const dropIn = "../../deploy/systemd/kubelet.service.d/10-kubeadm.conf"

// installedBinary is where docs/install.md puts actorlet, and the drop-in
// runs it from.
const installedBinary = "/usr/local/bin/actorlet"

// TestJoin starts actorlet with exactly what "kubeadm join" v1.37.2 leaves
// on a worker node (joinFiles) and the command line systemd makes of the
// shipped drop-in and those files, below a directory standing for /, and
// sees the node join: TLS bootstrap with the token, a client certificate
// for system:node:NAME, the Node Ready, healthz answering where kubeadm
// waits for it, a static pod of kubeadm's staticPodPath running. The cluster's KubeletConfiguration sets cgroupDriver:
// cgroupfs, kubeadm's supported way of choosing the driver (a
// KubeletConfiguration document in "kubeadm init --config"; kubeadm's own
// default is systemd, which this machine, without systemd, refuses) and
// failCgroupV1: false, as this cgroup v1 machine needs;
// a "kubeadm join --patches" kubeletconfiguration patch moves the kubelet
// API and healthz to free ports, so that the test shares the machine.
func TestJoin(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	if e.BootstrapKubeconfig == "" {
		t.Fatal("the environment has no bootstrap kubeconfig (ACTORLET_BOOTSTRAP_KUBECONFIG): run hack/node-env up --with-apiserver from this checkout")
	}
	server, ca, token := bootstrapCredentials(t, e)
	// The node holds the runtime lock, and its cleanup deletes its Node, its
	// CSRs and its pods from the runtime; its own files and command line
	// are not used: kubeadm's are.
	n := agent.NewNode(t, kubelet.Binary, agent.Bootstrap(e.BootstrapKubeconfig), agent.NamePrefix("kubeadm-"))
	root := t.TempDir()
	// Whatever is left mounted below root (the root directory, which
	// upstream's kubelet bind-mounts on itself) is unmounted, so that the
	// temporary directory can go.
	n.AtCleanup(func() {
		for _, mp := range agent.MountsUnder(t, root) {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				t.Logf("cleanup: unmount %s: %v", mp, err)
			}
		}
	})
	port, healthz := agent.FreePort(t), agent.FreePort(t)
	// What both agents need on this machine: cgroup v1, as the harness's
	// configuration says it.
	cluster := kubeletconfigv1beta1.KubeletConfiguration{CgroupDriver: "cgroupfs", FailCgroupV1: ptr.To(false)}
	if kubelet.Upstream {
		// What upstream's kubelet needs besides (swap), as
		// agent.UpstreamKubeletConfig.
		cluster.FailSwapOn = ptr.To(false)
	}
	j := joinFiles{
		nodeName: n.Name, server: server, ca: ca, token: token, criSocket: e.RuntimeEndpoint,
		clusterKubelet: cluster,
		patch:          fmt.Sprintf("port: %d\nhealthzPort: %d\n", port, healthz),
		// The administrator's flags: the node's address on the machine's
		// loopback, and the upstream defaults of the root and certificate
		// directories made explicit, so that they are rooted below as the
		// other paths.
		extraArgs: `"--node-ip=127.0.0.1 --root-dir=/var/lib/kubelet --cert-dir=/var/lib/kubelet/pki"`,
	}
	if err := j.write(root); err != nil {
		t.Fatal(err)
	}
	u, err := systemdunit.Parse(dropIn)
	if err != nil {
		t.Fatal(err)
	}
	args, err := u.CommandLine(func(p string) string { return root + p })
	if err != nil {
		t.Fatal(err)
	}
	if len(args) == 0 || args[0] != installedBinary {
		t.Fatalf("the drop-in runs %q, want %s", args, installedBinary)
	}
	wantArgs := []string{
		"--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf", "--kubeconfig=/etc/kubernetes/kubelet.conf",
		"--config=/var/lib/kubelet/config.yaml", "--hostname-override=" + n.Name,
		"--node-ip=127.0.0.1", "--root-dir=/var/lib/kubelet", "--cert-dir=/var/lib/kubelet/pki",
	}
	if strings.Join(args[1:], " ") != strings.Join(wantArgs, " ") {
		t.Errorf("command line %q, want %q", args[1:], wantArgs)
	}
	args = rooted(root, args[1:])
	for _, f := range []string{"etc/kubernetes/bootstrap-kubelet.conf", "etc/kubernetes/pki/ca.crt", "var/lib/kubelet/config.yaml",
		"var/lib/kubelet/instance-config.yaml", "var/lib/kubelet/kubeadm-flags.env", "etc/default/kubelet"} {
		data, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(f, "bootstrap-kubelet.conf") { // holds the token
			t.Logf("/%s:\n%s", f, data)
		}
	}
	t.Logf("command line: %s %s", installedBinary, strings.Join(args, " "))
	// A static pod in kubeadm's staticPodPath, in kube-system as kubeadm's
	// control plane pods.
	const static = "kubeadm-static"
	manifest := fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: kube-system
spec:
  containers:
  - name: main
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "sleep 3600"]
`, static, e.BusyboxImage)
	if err := os.WriteFile(filepath.Join(root, "etc/kubernetes/manifests", static+".yaml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	mirror := static + "-" + n.Name

	started := time.Now()
	n.Proc = agent.Start(t, kubelet.Binary, args...)
	admin := e.AdminClient(t)
	agent.Eventually(t, "the node joined and is Ready", 2*time.Minute, func() error {
		if !n.Proc.Alive() {
			t.Fatalf("exited:\n%s", env.Tail(n.Proc.Logs(), 40))
		}
		node, err := admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				if c.Status != v1.ConditionTrue {
					return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
				}
				return nil
			}
		}
		return fmt.Errorf("no Ready condition")
	})
	t.Logf("Ready %v after start", time.Since(started).Round(100*time.Millisecond))
	n.AtCleanup(func() {
		_ = admin.CoreV1().Pods("kube-system").Delete(context.Background(), mirror, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
	})
	agent.Eventually(t, "the static pod's mirror pod Running", 2*time.Minute, func() error {
		pod, err := admin.CoreV1().Pods("kube-system").Get(context.Background(), mirror, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pod.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", pod.Status.Phase)
		}
		return nil
	})

	// kubeadm waits for http://127.0.0.1:<healthzPort>/healthz.
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", healthz))
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "ok" {
		t.Errorf("healthz: %d %q", resp.StatusCode, body)
	}

	// The node's identity: the client certificate the TLS bootstrap got, in
	// the kubeconfig kubeadm's drop-in names.
	cert := readCert(t, filepath.Join(root, "var/lib/kubelet/pki/kubelet-client-current.pem"))
	if cert.Subject.CommonName != "system:node:"+n.Name || len(cert.Subject.Organization) != 1 || cert.Subject.Organization[0] != "system:nodes" {
		t.Errorf("client certificate subject %v, want CN=system:node:%s O=system:nodes", cert.Subject, n.Name)
	}
	kc, err := clientcmd.LoadFromFile(filepath.Join(root, "etc/kubernetes/kubelet.conf"))
	if err != nil {
		t.Fatalf("the kubeconfig the bootstrap writes: %v", err)
	}
	if ctx := kc.Contexts[kc.CurrentContext]; ctx == nil || kc.AuthInfos[ctx.AuthInfo] == nil || kc.AuthInfos[ctx.AuthInfo].Token != "" {
		t.Errorf("kubelet.conf does not authenticate with the node's certificate: %+v", kc)
	}
	csrs := agent.NodeCSRs(context.Background(), admin, n.Name)
	issued := false
	for _, csr := range csrs {
		if csr.Spec.SignerName == certificatesv1.KubeAPIServerClientKubeletSignerName && len(csr.Status.Certificate) > 0 {
			issued = true
		}
	}
	if !issued {
		t.Errorf("no issued %s CSR for system:node:%s among %d", certificatesv1.KubeAPIServerClientKubeletSignerName, n.Name, len(csrs))
	}
	if !kubelet.Upstream && strings.Contains(n.Proc.Logs(), "cgroupDriver") {
		t.Errorf("cgroupDriver named in the log: it is implemented:\n%s", env.Tail(n.Proc.Logs(), 40))
	}
}

// bootstrapCredentials reads the API server's URL, the cluster CA and the
// bootstrap token from the environment's bootstrap kubeconfig: what
// kubeadm's token discovery finds in the cluster-info ConfigMap and is
// given with --token.
func bootstrapCredentials(t *testing.T, e *env.Env) (server string, ca []byte, token string) {
	t.Helper()
	kc, err := clientcmd.LoadFromFile(e.BootstrapKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if ctx == nil || kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		t.Fatalf("%s: no current context with a cluster and a user", e.BootstrapKubeconfig)
	}
	cluster, user := kc.Clusters[ctx.Cluster], kc.AuthInfos[ctx.AuthInfo]
	ca = cluster.CertificateAuthorityData
	if len(ca) == 0 {
		file := cluster.CertificateAuthority
		if file == "" {
			file = e.CAFile
		}
		if ca, err = os.ReadFile(file); err != nil {
			t.Fatal(err)
		}
	}
	token = user.Token
	if token == "" && user.TokenFile != "" {
		b, err := os.ReadFile(user.TokenFile)
		if err != nil {
			t.Fatal(err)
		}
		token = strings.TrimSpace(string(b))
	}
	if token == "" {
		t.Fatalf("%s: no bootstrap token", e.BootstrapKubeconfig)
	}
	return cluster.Server, ca, token
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var block *pem.Block
		if block, data = pem.Decode(data); block == nil {
			t.Fatalf("%s: no certificate", path)
		}
		if block.Type == "CERTIFICATE" {
			cert, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatal(err)
			}
			return cert
		}
	}
}
