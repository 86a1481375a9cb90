// Package cluster runs actorlet against the environment's real
// kube-apiserver (Node and RBAC authorization, NodeRestriction) and
// containerd: node registration, lease, node and pod status.
package cluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// clusterNode is the one actorlet of the environment's node (e.NodeName),
// joined to its API server with the node's credentials. Tests run one at a
// time: there is one node identity.
type clusterNode struct {
	t         testing.TB
	env       *env.Env
	name      string
	admin     kubernetes.Interface
	manifests string
	rootDir   string
	config    string
	readOnly  int
	healthz   int
	port      int    // the kubelet API (10250)
	nodeIP    string // the node's address, where its kubelet API listens
	rt        runtimeapi.RuntimeServiceClient
	// namespaces are deleted at cleanup; pods tests create theirs here.
	namespaces []string

	proc *agent.Process
}

// nodeOption changes the configuration newClusterNode writes.
type nodeOption func(*nodeConfig)

type nodeConfig struct {
	// extra is appended to the KubeletConfiguration YAML.
	extra string
	// onPodNetwork puts the node on the pod network's bridge address.
	onPodNetwork bool
}

// onPodNetwork makes the node's address (and its kubelet API's) the host's
// address on the pod network instead of loopback: kube-apiserver's
// nodes/proxy refuses to proxy to loopback.
func onPodNetwork() nodeOption {
	return func(c *nodeConfig) { c.onPodNetwork = true }
}

// withConfig appends lines to the KubeletConfiguration, e.g.
// "nodeStatusUpdateFrequency: 2s\n".
func withConfig(yaml string) nodeOption {
	return func(c *nodeConfig) { c.extra += yaml }
}

func newClusterNode(t testing.TB, opts ...nodeOption) *clusterNode {
	t.Helper()
	e := env.Require(t, env.WithAPIServer())
	rt, _ := e.CRI(t)
	dir := t.TempDir()
	n := &clusterNode{
		t: t, env: e, rt: rt, name: e.NodeName, admin: e.AdminClient(t),
		manifests: filepath.Join(dir, "manifests"),
		rootDir:   filepath.Join(dir, "root"),
		config:    filepath.Join(dir, "config.yaml"),
		readOnly:  agent.FreePort(t),
		healthz:   agent.FreePort(t),
		port:      agent.FreePort(t),
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	var c nodeConfig
	for _, o := range opts {
		o(&c)
	}
	n.nodeIP = "127.0.0.1"
	if c.onPodNetwork {
		n.nodeIP = e.BridgeIP
	}
	// A short file check and crash-loop cap keep the tests quick; the
	// behaviours are the same as with upstream's defaults.
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 2s
readOnlyPort: %d
healthzPort: %d
port: %d
authentication:
  x509:
    clientCAFile: %s
crashLoopBackOff:
  maxContainerRestartPeriod: 2s
%s`, n.manifests, n.readOnly, n.healthz, n.port, e.CAFile, c.extra)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.cleanup)
	return n
}

// start runs actorlet joined to the API server and waits until its healthz
// port listens.
func (n *clusterNode) start() {
	n.t.Helper()
	n.proc = agent.Start(n.t, binary, "--config", n.config, "--kubeconfig", n.env.NodeKubeconfig,
		"--container-runtime-endpoint", n.env.RuntimeEndpoint, "--hostname-override", n.name,
		"--node-ip", n.nodeIP, "--root-dir", n.rootDir, "--cert-dir", filepath.Join(n.rootDir, "pki"), "--address", n.nodeIP, "-v", "2")
	eventually(n.t, "actorlet listens on its healthz port", 30*time.Second, func() error {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.healthz), time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
}

// stop ends actorlet with sig and waits for it to exit.
func (n *clusterNode) stop(sig syscall.Signal) { n.proc.Stop(sig) }

func (n *clusterNode) logs() string { return n.proc.Logs() }

// namespace creates a namespace for the test's pods, deleted at cleanup.
func (n *clusterNode) namespace(prefix string) string {
	n.t.Helper()
	ns, err := n.admin.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		n.t.Fatalf("create namespace %s-: %v", prefix, err)
	}
	n.namespaces = append(n.namespaces, ns.Name)
	// Pods are refused until the namespace has its default ServiceAccount.
	// The controller-manager makes it, but after an API server restart (a
	// test of this package does one) its watches took over 90 s to come
	// back in one CI run; the harness makes it itself, as the controller
	// would.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
	eventually(n.t, "default ServiceAccount in "+ns.Name, 90*time.Second, func() error {
		_, err := n.admin.CoreV1().ServiceAccounts(ns.Name).Create(context.Background(), sa, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	return ns.Name
}

// cleanup stops actorlet, deletes the test's namespaces (pods first, with
// grace 0, so that nothing waits for a kubelet that is gone) and removes
// every pod sandbox of this node from the runtime.
func (n *clusterNode) cleanup() {
	n.stop(syscall.SIGKILL)
	if n.t.Failed() {
		n.t.Logf("actorlet log:\n%s", n.logs())
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	for _, ns := range n.namespaces {
		_ = n.admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = n.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	// Mirror pods of this node's static pods live in any namespace.
	if pods, err := n.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name}); err == nil {
		for _, p := range pods.Items {
			if _, mirror := p.Annotations["kubernetes.io/config.mirror"]; mirror {
				_ = n.admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}
		}
	}
	agent.RemoveSandboxes(n.t, n.rt, n.owns)
}

// owns tells this test's sandboxes: its namespaces' pods and this node's
// static pods (named with the node's suffix).
func (n *clusterNode) owns(sb *runtimeapi.PodSandbox) bool {
	ns := sb.Labels["io.kubernetes.pod.namespace"]
	if ns == "" {
		return false
	}
	for _, own := range n.namespaces {
		if ns == own {
			return true
		}
	}
	return agent.OfNode(n.name)(sb)
}

// node reads this node's Node as the admin.
func (n *clusterNode) node() (*v1.Node, error) {
	return n.admin.CoreV1().Nodes().Get(context.Background(), n.name, metav1.GetOptions{})
}

// ready returns nil once the Node's Ready condition is True.
func (n *clusterNode) ready() error {
	node, err := n.node()
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status != v1.ConditionTrue {
				return fmt.Errorf("Ready=%s: %s: %s", c.Status, c.Reason, c.Message)
			}
			return nil
		}
	}
	return fmt.Errorf("no Ready condition")
}

// eventually polls check until it returns nil, failing the test after within.
var eventually = agent.Eventually

func (n *clusterNode) writeManifest(file, content string) {
	n.t.Helper()
	agent.WriteManifest(n.t, n.manifests, file, content)
}

func (n *clusterNode) removeManifest(file string) {
	n.t.Helper()
	agent.RemoveManifest(n.t, n.manifests, file)
}
