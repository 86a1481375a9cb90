// Package lifecycle runs actorlet as the environment's node against the
// real kube-apiserver and containerd with pods that exercise a container's
// whole life (issue #19): probes, lifecycle hooks, sidecars, termination,
// deadlines and ephemeral containers, observed from the API and from
// outside the pod. Upstream kubelet v1.37.2 is the reference for every
// expectation:
//
//	LIFECYCLE_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/lifecycle/
package lifecycle

import (
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// LIFECYCLE_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "LIFECYCLE_KUBELET") }

// lifeNode is the environment's node (agent.APIPods) with one namespace for
// the test's pods. Its helpers take the subtest's t: the subtests of a
// test share the node, and may run in parallel.
type lifeNode struct {
	*agent.APIPods
}

// newLifeNode starts the environment's node and waits until it is Ready.
func newLifeNode(t *testing.T, namespace string, opts ...agent.NodeOption) *lifeNode {
	t.Helper()
	n := &lifeNode{APIPods: kubelet.NewAPIPods(t, opts...)}
	n.Up(t, namespace)
	return n
}
