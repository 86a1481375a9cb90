package podruntime

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestIntegrationSecurityProfiles runs containers with security profiles
// on this environment's containerd: a Localhost seccomp profile installed
// below ROOT/seccomp is enforced; the groups of a Merge pod are its
// runAsGroup, fsGroup and supplementalGroups; an AppArmor profile of
// Unconfined, sent as CRI's field and the deprecated string, runs on a host
// without AppArmor.
func TestIntegrationSecurityProfiles(t *testing.T) {
	e, r := newIntegration(t)
	r.Opts.RootDir = t.TempDir()
	ctx := context.Background()
	if err := os.MkdirAll(SeccompProfileRoot(r.Opts.RootDir), 0o755); err != nil {
		t.Fatal(err)
	}
	profile := `{"defaultAction": "SCMP_ACT_ALLOW", "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO"}]}`
	if err := os.WriteFile(filepath.Join(SeccompProfileRoot(r.Opts.RootDir), "deny-mkdir.json"), []byte(profile), 0o644); err != nil {
		t.Fatal(err)
	}
	// run starts the pod and runs script in its container main.
	run := func(t *testing.T, pod *v1.Pod, script string) *runtimeapi.ExecSyncResponse {
		t.Helper()
		res := syncUntil(t, r, pod, NewCrashLoopBackoff(0, nil), time.Minute, "Running", func(res SyncResult) bool {
			return res.APIStatus.Phase == v1.PodRunning
		})
		if res.Err != nil {
			t.Fatalf("sync: %v", res.Err)
		}
		cs := res.Status.FindContainer("main")
		if cs == nil {
			t.Fatal("no container main")
		}
		out, err := r.RT.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: cs.ID, Cmd: []string{"sh", "-c", script}, Timeout: 30})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}

	t.Run("a Localhost seccomp profile below ROOT/seccomp", func(t *testing.T) {
		pod := testPod(t, r, busybox(e, "main", "sleep", "3600"))
		name := "deny-mkdir.json"
		pod.Spec.SecurityContext = &v1.PodSecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost, LocalhostProfile: &name}}
		out := run(t, pod, "mkdir /tmp/d")
		if out.ExitCode == 0 || !strings.Contains(string(out.Stderr), "Operation not permitted") {
			t.Errorf("mkdir under the profile: exit %d, stderr %q", out.ExitCode, out.Stderr)
		}
	})
	t.Run("the groups of a Merge pod", func(t *testing.T) {
		pod := testPod(t, r, busybox(e, "main", "sleep", "3600"))
		merge := v1.SupplementalGroupsPolicyMerge
		pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptrTo[int64](1000), RunAsGroup: ptrTo[int64](3000),
			FSGroup: ptrTo[int64](2000), SupplementalGroups: []int64{4000}, SupplementalGroupsPolicy: &merge}
		out := run(t, pod, "id")
		if got := strings.TrimSpace(string(out.Stdout)); got != "uid=1000 gid=3000 groups=2000,3000,4000" {
			t.Errorf("id: %q (stderr %q)", got, out.Stderr)
		}
	})
	t.Run("AppArmor unconfined", func(t *testing.T) {
		c := busybox(e, "main", "sleep", "3600")
		c.SecurityContext = &v1.SecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeUnconfined}}
		pod := testPod(t, r, c)
		if out := run(t, pod, "echo ok"); strings.TrimSpace(string(out.Stdout)) != "ok" {
			t.Errorf("exec: %+v", out)
		}
	})
}
