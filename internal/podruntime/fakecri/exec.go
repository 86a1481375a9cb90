package fakecri

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecFunc plays a command run by ExecSync in a running container: it
// returns the command's output and exit code. Its context ends at the
// request's timeout, as the runtime kills the command then.
type ExecFunc func(ctx context.Context, containerID string, cmd []string) (stdout, stderr []byte, exitCode int32)

// SetExec makes ExecSync run f; without one, every command exits 0 with
// no output.
func (r *Runtime) SetExec(f ExecFunc) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.exec = f
}

// ExecSync runs a command in a running container through the ExecFunc. A
// command still running at the request's timeout fails with
// DeadlineExceeded, as containerd's does.
func (r *Runtime) ExecSync(ctx context.Context, in *runtimeapi.ExecSyncRequest, _ ...grpc.CallOption) (*runtimeapi.ExecSyncResponse, error) {
	if err := r.begin(ctx, "ExecSync"); err != nil {
		return nil, err
	}
	c, err := r.container(in.ContainerId)
	if err == nil && c.status.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		err = status.Errorf(codes.FailedPrecondition, "container %q is %s, not running", in.ContainerId, c.status.State)
	}
	f := r.exec
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if f == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	if in.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(in.Timeout)*time.Second)
		defer cancel()
	}
	stdout, stderr, code := f(ctx, in.ContainerId, in.Cmd)
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	return &runtimeapi.ExecSyncResponse{Stdout: stdout, Stderr: stderr, ExitCode: code}, nil
}

// RunningContainer makes a sandbox and a running container "c" in it and
// returns the container's ID: what a test of a probe or hook runs against.
func (r *Runtime) RunningContainer(ctx context.Context) (string, error) {
	img := r.AddImage("img:1")
	sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}}})
	if err != nil {
		return "", err
	}
	c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: img}}})
	if err != nil {
		return "", err
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return "", err
	}
	return c.ContainerId, nil
}
