//go:build tools

// Package tools pins the CSI sidecars that the CSI tests run beside the
// project's own hostpath driver (issue #36): external-provisioner and
// external-attacher, built from their Go modules by test/csi's harness
// (hack/csi/build). A module of its own, so that neither, with its
// controller-runtime and gateway-api, enters the project's dependency graph.
package tools

import (
	_ "github.com/kubernetes-csi/external-attacher/v4/cmd/csi-attacher"
	_ "github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner"
)
