// Package containerenv runs actorlet as the environment's node against the
// real kube-apiserver and containerd with pods that take what a container
// gets from the cluster (issue #18): env from ConfigMaps, Secrets, the
// downward API and env files, the service variables, images pulled with
// the pod's pull secrets, the kubelet-managed /etc/hosts, and the pod's
// hostname and FQDN, each asserted from inside the container. Upstream
// kubelet v1.37.2 is the reference for every expectation:
//
//	CONTAINERENV_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/containerenv/
package containerenv

import (
	"strings"
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// CONTAINERENV_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "CONTAINERENV_KUBELET") }

// envNode is the environment's node (agent.APIPods) with one namespace for
// the test's pods. Its helpers take the subtest's t: the subtests of a
// test share the node.
type envNode struct {
	*agent.APIPods
}

// newEnvNode starts the environment's node and waits until it is Ready.
func newEnvNode(t *testing.T, opts ...agent.NodeOption) *envNode {
	t.Helper()
	n := &envNode{APIPods: kubelet.NewAPIPods(t, opts...)}
	n.Up(t, "env")
	return n
}

// noneTold fails the test for every line of actorlet's log and every event
// of the namespace that holds one of values (secrets, credentials).
func (n *envNode) noneTold(t *testing.T, values ...string) {
	t.Helper()
	evs, err := n.Events("")
	if err != nil {
		t.Fatal(err)
	}
	var told []string
	for _, ev := range evs {
		told = append(told, ev.Reason+": "+ev.Message)
	}
	told = append(told, strings.Split(n.Logs(), "\n")...)
	for _, line := range told {
		for _, v := range values {
			if strings.Contains(line, v) {
				t.Errorf("a secret value in: %s", line)
			}
		}
	}
}
