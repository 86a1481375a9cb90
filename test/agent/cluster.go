package agent

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"sort"
	"syscall"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/streaming/pkg/httpstream"
)

// ClusterNode is the one actorlet of the environment's node (e.NodeName),
// joined to its API server with the node's credentials (a Node made with
// InCluster), with the API objects its test makes. Tests run one at a
// time: there is one node identity.
type ClusterNode struct {
	*Node
	// Admin is a client of the environment's admin (system:masters).
	Admin kubernetes.Interface
	// namespaces are deleted at cleanup; tests create their pods there.
	namespaces []string
}

// NewClusterNode prepares the environment's node running binary, joined
// to the API server (InCluster) with opts; Start runs it. Its cleanup
// deletes the namespaces made with Namespace and the mirror pods of the
// node's static pods, and removes their sandboxes from the runtime.
func NewClusterNode(t testing.TB, binary string, opts ...NodeOption) *ClusterNode {
	t.Helper()
	n := &ClusterNode{Node: NewNode(t, binary, append([]NodeOption{InCluster()}, opts...)...)}
	n.Admin = n.Env.AdminClient(t)
	n.Owns = n.owns
	n.forgetRuntimeFeatures()
	n.AtCleanup(n.deleteAPIObjects)
	// Whatever is left mounted under the root directory (a failed test's
	// tmpfs, or the root directory that upstream's kubelet bind-mounts on
	// itself) is unmounted, so that the temporary directory can go.
	n.AtCleanup(func() {
		for _, mp := range MountsUnder(t, n.RootDir) {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				t.Logf("cleanup: unmount %s: %v", mp, err)
			}
		}
	})
	return n
}

// forgetRuntimeFeatures clears the shared Node's status.features before
// the agent starts. They describe the runtime of the agent that last ran
// as this node, and the environment may have switched containerd since: a
// runtime that reports no features (containerd 1.x) leaves the Node's as
// they are, as upstream's NodeFeatures setter does, so admission would
// read another runtime's support for supplementalGroupsPolicy: Strict.
func (n *ClusterNode) forgetRuntimeFeatures() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := n.Admin.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType,
		[]byte(`{"status":{"features":null}}`), metav1.PatchOptions{}, "status")
	if err != nil && !apierrors.IsNotFound(err) {
		n.T.Fatalf("clear the status.features of node %s: %v", n.Name, err)
	}
}

// Namespace creates a namespace for the test's pods, deleted at cleanup.
func (n *ClusterNode) Namespace(prefix string) string {
	n.T.Helper()
	ns, err := n.Admin.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		n.T.Fatalf("create namespace %s-: %v", prefix, err)
	}
	n.namespaces = append(n.namespaces, ns.Name)
	// Pods are refused until the namespace has its default ServiceAccount.
	// The controller-manager makes it, but after an API server restart (a
	// test of the cluster package does one) its watches took over 90 s to
	// come back in one CI run; the harness makes it itself, as the
	// controller would.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
	Eventually(n.T, "default ServiceAccount in "+ns.Name, 90*time.Second, func() error {
		_, err := n.Admin.CoreV1().ServiceAccounts(ns.Name).Create(context.Background(), sa, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
	return ns.Name
}

// deleteAPIObjects deletes the test's namespaces (pods first, with grace
// 0, so that nothing waits for a kubelet that is gone) and the mirror pods
// of this node's static pods; the node's cleanup runs it once actorlet is
// stopped.
func (n *ClusterNode) deleteAPIObjects() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	for _, ns := range n.namespaces {
		_ = n.Admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = n.Admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	// Mirror pods of this node's static pods live in any namespace.
	if pods, err := n.Admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name}); err == nil {
		for _, p := range pods.Items {
			if _, mirror := p.Annotations["kubernetes.io/config.mirror"]; mirror {
				_ = n.Admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}
		}
	}
}

// owns tells this test's sandboxes: its namespaces' pods and this node's
// static pods (named with the node's suffix).
func (n *ClusterNode) owns(sb *runtimeapi.PodSandbox) bool {
	ns := sb.Labels["io.kubernetes.pod.namespace"]
	if ns == "" {
		return false
	}
	for _, own := range n.namespaces {
		if ns == own {
			return true
		}
	}
	return OfNode(n.Name)(sb)
}

// NodeObject reads this node's Node as the admin.
func (n *ClusterNode) NodeObject() (*v1.Node, error) {
	return n.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
}

// Ready returns nil once the Node's Ready condition is True.
func (n *ClusterNode) Ready() error {
	node, err := n.NodeObject()
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			if c.Status != v1.ConditionTrue {
				return fmt.Errorf("node Ready=%s: %s: %s", c.Status, c.Reason, c.Message)
			}
			return nil
		}
	}
	return fmt.Errorf("no Ready condition")
}

// ExecOptions say what Exec runs and where its streams go.
type ExecOptions struct {
	Namespace, Pod, Container string
	Command                   []string
	Stdin                     io.Reader // nil: no stdin
	TTY                       bool
	Stdout, Stderr            io.Writer // nil: not asked for
}

// Exec runs a command in a pod's container through the API server's
// pods/exec as cfg's user, with kubectl's executor: WebSockets first, SPDY
// as fallback. The node must be reachable by the API server
// (OnPodNetwork). A command that exits non-zero is an error
// (exec.CodeExitError).
func Exec(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, o ExecOptions) error {
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(o.Namespace).Name(o.Pod).SubResource("exec").
		VersionedParams(&v1.PodExecOptions{Container: o.Container, Command: o.Command, Stdin: o.Stdin != nil,
			Stdout: o.Stdout != nil, Stderr: o.Stderr != nil, TTY: o.TTY}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
	if err != nil {
		return err
	}
	sp, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return err
	}
	// As kubectl: SPDY only when the WebSocket upgrade itself failed, so
	// that a command that ran and failed is not run a second time.
	exe, err := remotecommand.NewFallbackExecutor(ws, sp, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return exe.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: o.Stdin, Stdout: o.Stdout, Stderr: o.Stderr, Tty: o.TTY})
}

// deleteNodeObjects deletes the Node named name and the CSRs made for it
// (those whose request's CN is system:node:NAME: client and serving), as
// the admin, once a bootstrapped node is stopped.
func deleteNodeObjects(admin kubernetes.Interface, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = admin.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
	for _, csr := range NodeCSRs(ctx, admin, name) {
		_ = admin.CertificatesV1().CertificateSigningRequests().Delete(ctx, csr.Name, metav1.DeleteOptions{})
	}
}

// NodeCSRs lists the CertificateSigningRequests whose request's CN is
// system:node:NAME, oldest first.
func NodeCSRs(ctx context.Context, admin kubernetes.Interface, name string) []certificatesv1.CertificateSigningRequest {
	list, err := admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		block, _ := pem.Decode(csr.Spec.Request)
		if block == nil {
			continue
		}
		req, err := x509.ParseCertificateRequest(block.Bytes)
		if err == nil && req.Subject.CommonName == "system:node:"+name {
			out = append(out, csr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreationTimestamp.Before(&out[j].CreationTimestamp) })
	return out
}
