package version

import (
	"regexp"
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
)

func TestNodeVersionIsTheCompatibleKubelet(t *testing.T) {
	v, err := utilversion.ParseSemantic(NodeVersion())
	if err != nil {
		t.Fatalf("NodeVersion %q is not semver: %v", NodeVersion(), err)
	}
	want := utilversion.MustParseSemantic(KubeletCompatible)
	if v.Major() != want.Major() || v.Minor() != want.Minor() || v.Patch() != want.Patch() || v.PreRelease() != "" {
		t.Errorf("NodeVersion %q does not compare as %s", NodeVersion(), KubeletCompatible)
	}
	if got, want := String(), "actorlet v"+Version+" (kubelet v1.37.2 compatible)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// kubeadmKubeletVersion is kubeadm v1.37.2's pattern for `kubelet
// --version` (cmd/kubeadm/app/preflight/utils.go), which its KubeletVersion
// and SystemVerification pre-flight checks parse.
var kubeadmKubeletVersion = regexp.MustCompile(`^\s*Kubernetes v((0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)([-\w.+]*)?)\s*$`)

func TestFlagParsesAsKubeadmReadsTheKubelet(t *testing.T) {
	m := kubeadmKubeletVersion.FindStringSubmatch(Flag() + "\n")
	if m == nil {
		t.Fatalf("--version prints %q, which kubeadm's pre-flight cannot parse", Flag())
	}
	v, err := utilversion.ParseSemantic(m[1])
	if err != nil {
		t.Fatalf("kubeadm reads version %q: %v", m[1], err)
	}
	if want := utilversion.MustParseSemantic(KubeletCompatible); v.Major() != want.Major() || v.Minor() != want.Minor() || v.Patch() != want.Patch() || v.PreRelease() != "" {
		t.Errorf("kubeadm reads %q as %s, want %s", Flag(), v, KubeletCompatible)
	}
}
