package containerenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// denyMkdir is a seccomp profile that lets everything through but mkdir,
// which fails with EPERM: a container under it shows that the profile is
// in force.
const denyMkdir = `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`

// TestSecurityProfiles runs pods with security profiles on the node (issue
// #33), each asserted from inside the container as upstream's kubelet
// gives them: a Localhost seccomp profile is the file below
// ROOT-DIR/seccomp that its name gives (never a name the runtime resolves
// against its own working directory), the pod's groups under the Merge
// policy, and an AppArmor profile of Unconfined, which a host without
// AppArmor runs.
func TestSecurityProfiles(t *testing.T) {
	n := newEnvNode(t)
	seccompRoot := filepath.Join(n.RootDir, "seccomp")
	if err := os.MkdirAll(filepath.Join(seccompRoot, "team"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seccompRoot, "team", "deny-mkdir.json"), []byte(denyMkdir), 0o644); err != nil {
		t.Fatal(err)
	}
	localhost := func(name string) *v1.SeccompProfile {
		return &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}
	}

	t.Run("a Localhost seccomp profile below ROOT-DIR/seccomp", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			mutate func(*v1.Pod)
		}{
			{name: "seccomp-pod", mutate: func(p *v1.Pod) {
				p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: localhost("team/deny-mkdir.json")}
			}},
			{name: "seccomp-container", mutate: func(p *v1.Pod) {
				p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: localhost("team/deny-mkdir.json")}
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := n.NewPod(tc.name, nil, n.Sleeper("c"))
				tc.mutate(p)
				n.Run(t, p)
				out, err := n.ShErr(tc.name, "c", "mkdir /tmp/d")
				if err == nil || !strings.Contains(err.Error(), "Operation not permitted") {
					t.Errorf("mkdir under the profile: output %q, error %v; want Operation not permitted", out, err)
				}
				n.Expect(t, tc.name, "c", "echo allowed > /tmp/f && cat /tmp/f", "allowed")
			})
		}
	})

	t.Run("a Localhost name is looked for below ROOT-DIR/seccomp only", func(t *testing.T) {
		// The profile exists at /DIR/outside.json; the pod names it as
		// DIR/outside.json (the API server takes only relative names).
		// The runtime would find it from / as its working directory; the
		// kubelet asks for ROOT-DIR/seccomp/DIR/outside.json, which does
		// not exist, and the container is not created.
		dir := t.TempDir()
		outside := filepath.Join(dir, "outside.json")
		if err := os.WriteFile(outside, []byte(denyMkdir), 0o644); err != nil {
			t.Fatal(err)
		}
		rel := strings.TrimPrefix(outside, "/")
		p := n.NewPod("seccomp-outside", nil, n.Sleeper("c"))
		p.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: localhost(rel)}
		n.Create(t, p)
		n.Waiting(t, "seccomp-outside", "c", "CreateContainerError", filepath.Join(seccompRoot, rel))
	})

	t.Run("the groups of a Merge pod", func(t *testing.T) {
		uid, gid, fsGroup := int64(1000), int64(3000), int64(2000)
		merge := v1.SupplementalGroupsPolicyMerge
		p := n.NewPod("groups-merge", nil, n.Sleeper("c"))
		p.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: &uid, RunAsGroup: &gid, FSGroup: &fsGroup,
			SupplementalGroups: []int64{4000}, SupplementalGroupsPolicy: &merge}
		p = n.Run(t, p)
		n.Expect(t, "groups-merge", "c", "id", "uid=1000 gid=3000 groups=2000,3000,4000")
		// The runtime's report of the process's identity, where it gives
		// one (containerd 2.0 and later); containerd 1.x gives none.
		ver, err := n.RT.Version(context.Background(), &runtimeapi.VersionRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if u := p.Status.ContainerStatuses[0].User; strings.HasPrefix(ver.RuntimeVersion, "1.") {
			if u != nil {
				t.Errorf("containerStatuses[0].user %+v from a runtime that reports none", u)
			}
		} else if u == nil || u.Linux == nil || u.Linux.UID != 1000 || u.Linux.GID != 3000 {
			t.Errorf("containerStatuses[0].user %+v, want uid 1000, gid 3000", u)
		}
	})

	t.Run("AppArmor unconfined runs on a host without AppArmor", func(t *testing.T) {
		p := n.NewPod("apparmor-unconfined", nil, n.Sleeper("c"), n.Sleeper("d"))
		p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
		p.Annotations = map[string]string{v1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix + "d": v1.DeprecatedAppArmorBetaProfileNameUnconfined}
		n.Run(t, p)
	})
}
