package probe

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/test/env"
)

// TestExecAgainstContainerd runs exec probes in a real container: it checks
// the one thing the fake cannot, that containerd's answer to a command past
// its timeout reads as upstream's timeout failure rather than an error.
func TestExecAgainstContainerd(t *testing.T) {
	e := env.Require(t)
	env.HoldRuntime(t)
	rt, _ := e.CRI(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	uid := fmt.Sprintf("prober-%d", time.Now().UnixNano())
	sbCfg := env.SandboxConfig("prober-exec", uid, "prober-test", t.TempDir(), nil)
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sbCfg})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, _ = rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId})
		_, _ = rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId})
	})
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sbCfg,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "c"},
			Image:    &runtimeapi.ImageSpec{Image: e.BusyboxImage},
			Command:  []string{"sleep", "600"},
		}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatal(err)
	}

	exec := func(cmd string) *v1.Probe {
		return &v1.Probe{TimeoutSeconds: 1, ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", cmd}}}}
	}
	for _, tc := range []probeCase{
		{name: "exit 0", kind: results.Liveness, probe: exec("true"), want: results.Success},
		{name: "exit 1 with output", kind: results.Liveness, probe: exec("echo out; echo err >&2; exit 1"), want: results.Failure,
			wantEvent: "Warning Unhealthy Liveness probe failed: out\nerr\n"},
		{name: "past its timeout", kind: results.Readiness, probe: exec("sleep 5"), want: results.Failure,
			wantEvent: `Warning Unhealthy Readiness probe failed: command timed out: "sh -c sleep 5" timed out after 1s`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			tc.run(t, &Runner{RT: rt}, c.ContainerId)
			if d := time.Since(start); strings.Contains(tc.name, "timeout") && d > 4*time.Second {
				t.Errorf("the probe took %v, past its timeout of 1s", d)
			}
		})
	}
}
