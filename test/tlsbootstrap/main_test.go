// Package tlsbootstrap runs actorlet against the environment's real
// kube-apiserver and kube-controller-manager as a node that joins the way
// kubeadm's kubelet does (issue #20): TLS bootstrap with a bootstrap token,
// client certificate rotation through CertificateSigningRequests, and the
// serving certificate from a kubelet-serving CSR. Upstream kubelet v1.37.2
// is the reference for every expectation:
//
//	TLSBOOTSTRAP_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/tlsbootstrap/
package tlsbootstrap

import (
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// TLSBOOTSTRAP_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "TLSBOOTSTRAP_KUBELET") }
