//go:build tools

// Package tools pins the Kubernetes control-plane commands that
// hack/node-env builds (kube-apiserver, kube-controller-manager, kubectl).
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
