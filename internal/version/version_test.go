package version

import (
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
