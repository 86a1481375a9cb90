// Package kubeadm runs actorlet as kubeadm v1.37.2 runs the kubelet of a
// node that joins a cluster (issue #20): the files "kubeadm join" writes
// (cmd/kubeadm/app/cmd/phases/join/kubelet.go: bootstrap-kubelet.conf, the
// CA, config.yaml, instance-config.yaml, kubeadm-flags.env) and the command
// line systemd builds from the shipped drop-in
// deploy/systemd/kubelet.service.d/10-kubeadm.conf, against the
// environment's real kube-apiserver and kube-controller-manager; and
// kubeadm itself, "kubeadm init" of a one-node cluster by hack/cluster
// (TestInit, issue #35):
//
//	go test -timeout 30m ./test/kubeadm/
//
// KUBEADM_KUBELET=$(hack/node-env upstream-kubelet) runs the same test
// against upstream's kubelet.
package kubeadm

import (
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// KUBEADM_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "KUBEADM_KUBELET") }
