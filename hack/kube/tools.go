//go:build tools

// Package tools pins the Kubernetes commands that hack/node-env builds:
// the control plane (kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl), the upstream kubelet for reference runs, the
// conformance suite (the e2e test package and the ginkgo CLI), and what a
// kubeadm cluster runs besides (kubeadm, kube-proxy, etcd, the sample API
// server of the aggregator's spec), and the e2e suite's sample device plugin.
package tools

import (
	_ "github.com/actorlet/actorlet/hack/kube/etcd"
	_ "github.com/onsi/ginkgo/v2/ginkgo"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-proxy"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubeadm"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
	_ "k8s.io/kubernetes/test/e2e"
	_ "k8s.io/kubernetes/test/images/agnhost"
	_ "k8s.io/kubernetes/test/images/nonewprivs"
	_ "k8s.io/kubernetes/test/images/sample-device-plugin"
	_ "k8s.io/sample-apiserver"
)
