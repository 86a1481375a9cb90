// Package cluster runs actorlet against the environment's real
// kube-apiserver (Node and RBAC authorization, NodeRestriction) and
// containerd: node registration, lease, node and pod status.
package cluster

import (
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// CLUSTER_KUBELET names. Only the tests that say so are meant to run
// against upstream's (TestMirrorPodStatusIsRestored, TestDeletedPodsLastWord,
// TestNodeLogQuery):
//
//	CLUSTER_KUBELET=$(hack/node-env upstream-kubelet) go test -run TestMirrorPodStatusIsRestored ./test/cluster/
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "CLUSTER_KUBELET") }

// clusterNode is the environment's node (agent.ClusterNode), with this
// package's helpers.
type clusterNode struct {
	*agent.ClusterNode
}

// onPodNetwork makes the node's address (and its kubelet API's) the host's
// address on the pod network: see agent.OnPodNetwork.
var onPodNetwork = agent.OnPodNetwork

// withConfig appends lines to the KubeletConfiguration, e.g.
// "nodeStatusUpdateFrequency: 2s\n".
var withConfig = agent.WithConfig

func newClusterNode(t testing.TB, opts ...agent.NodeOption) *clusterNode {
	t.Helper()
	return &clusterNode{agent.NewClusterNode(t, kubelet.Binary, kubelet.Options(opts...)...)}
}

// startClusterNode is newClusterNode, started and Ready.
func startClusterNode(t testing.TB, opts ...agent.NodeOption) *clusterNode {
	t.Helper()
	n := newClusterNode(t, opts...)
	n.Start()
	eventually(t, "node Ready", 30*time.Second, n.Ready)
	return n
}

// eventually polls check until it returns nil, failing the test after within.
var eventually = agent.Eventually
