// Package version says which actorlet this is and which upstream kubelet it
// is compatible with.
package version

// Version is actorlet's own semantic version, without a leading "v". Release
// builds set it with -ldflags "-X github.com/actorlet/actorlet/version.Version=X.Y.Z".
var Version = "0.1.0"

// KubeletCompatible is the upstream kubelet version whose behaviour,
// configuration and API actorlet follows.
const KubeletCompatible = "v1.37.2"

// String names actorlet and the kubelet it follows, for its logs.
func String() string {
	return "actorlet v" + Version + " (kubelet " + KubeletCompatible + " compatible)"
}

// NodeVersion is what the node reports as nodeInfo.kubeletVersion. The
// actorlet version is semver build metadata, which version-skew checks
// ignore, so the control plane treats the node as the compatible kubelet.
func NodeVersion() string {
	return KubeletCompatible + "+actorlet." + Version
}

// Flag is what --version prints: upstream's "Kubernetes vX.Y.Z" with
// actorlet's version as build metadata, so that tools which parse
// `kubelet --version` (kubeadm's pre-flight among them) read the
// compatible kubelet's version when actorlet is installed as kubelet.
func Flag() string {
	return "Kubernetes " + NodeVersion()
}

// UserAgent identifies actorlet to the API server.
func UserAgent() string {
	return "actorlet/v" + Version
}
