// Package manifest turns a static pod manifest (a file in the static pod
// path, or the body served at the manifest URL) into the pod the kubelet
// runs, as upstream's pkg/kubelet/config/common.go does: decode, apply the
// defaults the API server would apply, give the pod its static identity
// (UID, node-suffixed name, config annotations), and validate it.
//
// Everything here is pure: no I/O, no clock (the caller passes the time the
// pod was seen), so that the config-source actor decides when to read and
// the tests decide what time it is.
package manifest
