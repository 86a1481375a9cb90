package fakecri

import (
	"context"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestExecSync(t *testing.T) {
	ctx := context.Background()
	r := New()
	img := r.AddImage("img:1")
	sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: img}}})
	if err != nil {
		t.Fatal(err)
	}
	exec := func(id string, timeout int64, cmd ...string) (*runtimeapi.ExecSyncResponse, error) {
		return r.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	}
	if _, err := exec(c.ContainerId, 0, "true"); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("exec in a created container: %v, want FailedPrecondition", err)
	}
	if _, err := exec("gone", 0, "true"); status.Code(err) != codes.NotFound {
		t.Errorf("exec in no container: %v, want NotFound", err)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Fatal(err)
	}
	if resp, err := exec(c.ContainerId, 0, "true"); err != nil || resp.ExitCode != 0 {
		t.Errorf("exec without an ExecFunc: %v, %v", resp, err)
	}
	r.SetExec(func(ctx context.Context, _ string, cmd []string) ([]byte, []byte, int32) {
		if cmd[0] == "hang" {
			<-ctx.Done()
			return nil, nil, 137
		}
		return []byte("out"), []byte("err"), 3
	})
	if resp, err := exec(c.ContainerId, 0, "x"); err != nil || resp.ExitCode != 3 || string(resp.Stdout) != "out" || string(resp.Stderr) != "err" {
		t.Errorf("exec: %v, %v", resp, err)
	}
	if _, err := exec(c.ContainerId, 1, "hang"); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("exec past its timeout: %v, want DeadlineExceeded", err)
	}
}
