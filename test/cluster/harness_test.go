// Package cluster runs actorlet against the environment's real
// kube-apiserver (Node and RBAC authorization, NodeRestriction) and
// containerd: node registration, lease, node and pod status.
package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// clusterNode is the one actorlet of the environment's node (e.NodeName),
// joined to its API server with the node's credentials (agent.Node in
// cluster mode), with the API objects its tests make. Tests run one at a
// time: there is one node identity.
type clusterNode struct {
	*agent.Node
	admin kubernetes.Interface
	// namespaces are deleted at cleanup; pods tests create theirs here.
	namespaces []string
}

// onPodNetwork makes the node's address (and its kubelet API's) the host's
// address on the pod network: see agent.OnPodNetwork.
var onPodNetwork = agent.OnPodNetwork

// withConfig appends lines to the KubeletConfiguration, e.g.
// "nodeStatusUpdateFrequency: 2s\n".
var withConfig = agent.WithConfig

func newClusterNode(t testing.TB, opts ...agent.NodeOption) *clusterNode {
	t.Helper()
	n := &clusterNode{Node: agent.NewNode(t, binary, append([]agent.NodeOption{agent.InCluster()}, opts...)...)}
	n.admin = n.Env.AdminClient(t)
	n.Owns = n.owns
	n.AtCleanup(n.deleteAPIObjects)
	return n
}

// namespace creates a namespace for the test's pods, deleted at cleanup.
func (n *clusterNode) namespace(prefix string) string {
	n.T.Helper()
	ns, err := n.admin.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}, metav1.CreateOptions{})
	if err != nil {
		n.T.Fatalf("create namespace %s-: %v", prefix, err)
	}
	n.namespaces = append(n.namespaces, ns.Name)
	// Pods are refused until the namespace has its default ServiceAccount.
	// The controller-manager makes it, but after an API server restart (a
	// test of this package does one) its watches took over 90 s to come
	// back in one CI run; the harness makes it itself, as the controller
	// would.
	sa := &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns.Name}}
	eventually(n.T, "default ServiceAccount in "+ns.Name, 90*time.Second, func() error {
		_, err := n.admin.CoreV1().ServiceAccounts(ns.Name).Create(context.Background(), sa, metav1.CreateOptions{})
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
func (n *clusterNode) deleteAPIObjects() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	zero := int64(0)
	for _, ns := range n.namespaces {
		_ = n.admin.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &zero}, metav1.ListOptions{})
		_ = n.admin.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	// Mirror pods of this node's static pods live in any namespace.
	if pods, err := n.admin.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.Name}); err == nil {
		for _, p := range pods.Items {
			if _, mirror := p.Annotations["kubernetes.io/config.mirror"]; mirror {
				_ = n.admin.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
			}
		}
	}
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
	return agent.OfNode(n.Name)(sb)
}

// node reads this node's Node as the admin.
func (n *clusterNode) node() (*v1.Node, error) {
	return n.admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
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
