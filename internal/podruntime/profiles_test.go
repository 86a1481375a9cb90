package podruntime

import (
	"context"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/testutil"
)

// TestSeccompProfileLocalhostRoot checks that a Localhost seccomp profile
// reaches the runtime as the file below ROOT/seccomp that upstream's
// fieldSeccompProfile names, never as the name the pod gave (which the
// runtime resolved against its own working directory).
func TestSeccompProfileLocalhostRoot(t *testing.T) {
	const root = "/var/lib/kubelet/seccomp"
	localhost := func(name string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}
	}
	typ := func(t v1.SeccompProfileType) *v1.SeccompProfile { return &v1.SeccompProfile{Type: t} }
	unconfined := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	for _, tc := range []struct {
		name           string
		pod, container *v1.SeccompProfile
		want           *runtimeapi.SecurityProfile
		err            string
		seccompDefault bool
	}{
		{name: "none", want: unconfined},
		{name: "none with seccompDefault", seccompDefault: true,
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}},
		{name: "the pod's unconfined over seccompDefault", pod: typ(v1.SeccompProfileTypeUnconfined), seccompDefault: true, want: unconfined},
		{name: "the container's localhost over seccompDefault", container: localhost("c.json"), seccompDefault: true,
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: root + "/c.json"}},
		{name: "the pod's unconfined", pod: typ(v1.SeccompProfileTypeUnconfined), want: unconfined},
		{name: "the pod's runtime default", pod: typ(v1.SeccompProfileTypeRuntimeDefault),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}},
		{name: "the container's over the pod's", pod: typ(v1.SeccompProfileTypeRuntimeDefault), container: localhost("c.json"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: root + "/c.json"}},
		{name: "the pod's localhost", pod: localhost("profiles/audit.json"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: root + "/profiles/audit.json"}},
		// The API server refuses absolute names and "..": a name that
		// reached the node anyway is joined as upstream joins it.
		{name: "an absolute name lands below the root", pod: localhost("/etc/evil.json"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: root + "/etc/evil.json"}},
		{name: "dot-dot is cleaned as filepath.Join cleans it", pod: localhost("a/../../x.json"),
			want: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/var/lib/kubelet/x.json"}},
		{name: "localhost without a name", container: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost},
			err: "localhostProfile must be set if seccompProfile type is Localhost."},
		{name: "localhost with an empty name", container: localhost(""),
			err: "localhostProfile must be set if seccompProfile type is Localhost."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := seccompProfile(tc.pod, tc.container, root, tc.seccompDefault)
			if testutil.WantErrText(t, err, tc.err) {
				return
			}
			if !proto.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// TestContainerConfigSecurityProfiles checks the security profiles and
// the supplemental groups policy of the container and sandbox configs
// sent to the runtime: the seccomp Localhost file below the node's root
// directory, AppArmor from the fields and the deprecated annotation (as
// CRI's SecurityProfile and the deprecated apparmor_profile string), and
// supplementalGroupsPolicy.
func TestContainerConfigSecurityProfiles(t *testing.T) {
	rootDir := t.TempDir()
	name := func(s string) *string { return &s }
	strict, merge := v1.SupplementalGroupsPolicyStrict, v1.SupplementalGroupsPolicyMerge
	rd := &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	for _, tc := range []struct {
		name     string
		mutate   func(*v1.Pod)
		seccomp  *runtimeapi.SecurityProfile
		apparmor *runtimeapi.SecurityProfile
		// aaString is the deprecated apparmor_profile.
		aaString string
		policy   runtimeapi.SupplementalGroupsPolicy
		err      string
	}{
		{name: "nothing asked", mutate: func(*v1.Pod) {}},
		{name: "the pod's seccomp localhost", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: name("deny.json")}}
		}, seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(rootDir, "seccomp", "deny.json")}},
		{name: "the container's seccomp localhost", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: name("x/c.json")}}
		}, seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: filepath.Join(rootDir, "seccomp", "x", "c.json")}},
		{name: "the pod's apparmor runtime default", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}, apparmor: rd, aaString: "runtime/default"},
		{name: "the container's apparmor localhost over the pod's", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost, LocalhostProfile: name("k8s-deny-write")}}
		}, apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-deny-write"}, aaString: "localhost/k8s-deny-write"},
		{name: "apparmor unconfined", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
		}, apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}, aaString: "unconfined"},
		{name: "the deprecated annotation over the pod's field", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "localhost/k8s-x"}
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}, apparmor: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "k8s-x"}, aaString: "localhost/k8s-x"},
		{name: "another container's annotation", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "other": "runtime/default"}
		}},
		{name: "an unreadable annotation counts as none", mutate: func(p *v1.Pod) {
			p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "c": "bogus"}
		}},
		{name: "apparmor localhost without a name", mutate: func(p *v1.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeLocalhost}}
		}, err: "missing localhost apparmor profile name"},
		{name: "supplementalGroupsPolicy Strict", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &strict}
		}, policy: runtimeapi.SupplementalGroupsPolicy_Strict},
		{name: "supplementalGroupsPolicy Merge", mutate: func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &merge}
		}, policy: runtimeapi.SupplementalGroupsPolicy_Merge},
		{name: "an unknown supplementalGroupsPolicy", mutate: func(p *v1.Pod) {
			bogus := v1.SupplementalGroupsPolicy("Loose")
			p.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &bogus}
		}, err: "unsupported supplementalGroupsPolicy: Loose"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := basePod()
			tc.mutate(pod)
			cfg, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{RootDir: rootDir})
			if testutil.WantErrText(t, err, tc.err) {
				return
			}
			sc := cfg.Linux.SecurityContext
			wantSeccomp := tc.seccomp
			if wantSeccomp == nil {
				wantSeccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
			}
			if !proto.Equal(sc.Seccomp, wantSeccomp) {
				t.Errorf("seccomp %v, want %v", sc.Seccomp, wantSeccomp)
			}
			//lint:ignore SA1019 the deprecated string is what containerd 1.x reads
			aaString := sc.ApparmorProfile
			if !proto.Equal(sc.Apparmor, tc.apparmor) || aaString != tc.aaString {
				t.Errorf("apparmor %v %q, want %v %q", sc.Apparmor, aaString, tc.apparmor, tc.aaString)
			}
			if sc.SupplementalGroupsPolicy != tc.policy {
				t.Errorf("container's supplementalGroupsPolicy %s, want %s", sc.SupplementalGroupsPolicy, tc.policy)
			}
			sb, err := SandboxConfig(pod, 0, Options{RootDir: rootDir})
			if err != nil {
				t.Fatal(err)
			}
			// The sandbox runs under the runtime's default seccomp
			// profile, whatever the pod's, as upstream.
			if got := sb.Linux.SecurityContext; !proto.Equal(got.Seccomp, rd) || got.SupplementalGroupsPolicy != tc.policy {
				t.Errorf("sandbox seccomp %v, supplementalGroupsPolicy %s, want runtime default, %s", got.Seccomp, got.SupplementalGroupsPolicy, tc.policy)
			}
		})
	}
	t.Run("a localhost seccomp profile without a root directory", func(t *testing.T) {
		pod := basePod()
		pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: name("deny.json")}}
		if _, err := ContainerConfig(context.Background(), pod, &pod.Spec.Containers[0], 0, nil, "img", nil, Options{}); err != errNoSeccompRoot {
			t.Errorf("error %v, want %v", err, errNoSeccompRoot)
		}
	})
	t.Run("an unknown supplementalGroupsPolicy fails the sandbox", func(t *testing.T) {
		pod := basePod()
		bogus := v1.SupplementalGroupsPolicy("Loose")
		pod.Spec.SecurityContext = &v1.PodSecurityContext{SupplementalGroupsPolicy: &bogus}
		if _, err := SandboxConfig(pod, 0, Options{}); err == nil || err.Error() != "unsupported supplementalGroupsPolicy: Loose" {
			t.Errorf("error %v", err)
		}
	})
}

// TestContainerStatusUser checks containerStatuses[].user: the identity
// the runtime reports, as upstream shows it, and none when the runtime
// reports none.
func TestContainerStatusUser(t *testing.T) {
	for _, tc := range []struct {
		name string
		user *runtimeapi.ContainerUser
		want *v1.ContainerUser
	}{
		{name: "not reported"},
		{name: "reported without linux", user: &runtimeapi.ContainerUser{}, want: &v1.ContainerUser{}},
		{name: "linux", user: &runtimeapi.ContainerUser{Linux: &runtimeapi.LinuxContainerUser{Uid: 1000, Gid: 3000, SupplementalGroups: []int64{3000, 4000}}},
			want: &v1.ContainerUser{Linux: &v1.LinuxContainerUser{UID: 1000, GID: 3000, SupplementalGroups: []int64{3000, 4000}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := toContainerStatus(&runtimeapi.ContainerStatus{Id: "id", Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
				State: runtimeapi.ContainerState_CONTAINER_RUNNING, User: tc.user})
			got := toAPIContainerStatus(cs, false).User
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("user %+v, want %+v", got, tc.want)
			}
		})
	}
}
