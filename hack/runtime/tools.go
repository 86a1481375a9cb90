//go:build tools

// Package tools pins the container runtime that hack/node-env builds when
// ACTORLET_CONTAINERD=2.4 (issue #36): containerd v2 with its runc shim,
// and runc. A module of its own, so that neither enters the project's
// dependency graph nor moves hack/kube's.
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
	_ "github.com/opencontainers/runc"
)
