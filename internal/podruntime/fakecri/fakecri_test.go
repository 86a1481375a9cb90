package fakecri

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestInject checks the order and the count of injected faults.
func TestInject(t *testing.T) {
	errA, errB := status.Error(codes.Unknown, "a"), status.Error(codes.Internal, "b")
	for _, tc := range []struct {
		name   string
		inject func(r *Runtime)
		want   []error // what successive calls return
	}{
		{name: "none", inject: func(*Runtime) {}, want: []error{nil, nil}},
		{name: "once", inject: func(r *Runtime) { r.Inject("Version", 1, Fault{Err: errA}) }, want: []error{errA, nil}},
		{name: "in order", inject: func(r *Runtime) {
			r.Inject("Version", 2, Fault{Err: errA})
			r.Inject("Version", 1, Fault{Err: errB})
		}, want: []error{errA, errA, errB, nil}},
		{name: "every call", inject: func(r *Runtime) { r.Inject("Version", 0, Fault{Err: errA}) }, want: []error{errA, errA, errA}},
		{name: "cleared", inject: func(r *Runtime) {
			r.Inject("Version", 0, Fault{Err: errA})
			r.Clear("Version")
		}, want: []error{nil}},
		{name: "another method", inject: func(r *Runtime) { r.Inject("Status", 1, Fault{Err: errA}) }, want: []error{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := New()
			tc.inject(r)
			for i, want := range tc.want {
				if _, err := r.Version(context.Background(), &runtimeapi.VersionRequest{}); !errors.Is(err, want) {
					t.Errorf("call %d: %v, want %v", i, err, want)
				}
			}
			if n := r.Calls("Version"); n != len(tc.want) {
				t.Errorf("%d calls counted, want %d", n, len(tc.want))
			}
		})
	}
}

func TestInjectUnknownMethodPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Inject of a misspelt method did not panic")
		}
	}()
	New().Inject("RunPodSandBox", 1, Fault{})
}

func TestBlockEndsWithTheContext(t *testing.T) {
	r := New()
	r.Inject("ListContainers", 1, Fault{Block: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("blocked call: %v, want DeadlineExceeded", err)
	}
}

// TestLifecycle runs a sandbox and a container through their states, as
// podruntime sees them.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	r := New()
	img := r.AddImage("img:1")
	sb, err := r.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p"}, Labels: map[string]string{"pod": "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "c"}, Image: &runtimeapi.ImageSpec{Image: img},
		Labels: map[string]string{"pod": "p"}}
	c, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	state := func() runtimeapi.ContainerState {
		t.Helper()
		resp, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Status.State
	}
	if s := state(); s != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("created container is %v", s)
	}
	if _, err := r.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil || state() != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("start: %v, %v", err, state())
	}
	list, _ := r.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: map[string]string{"pod": "q"}}})
	if len(list.Containers) != 0 {
		t.Errorf("label selector of another pod lists %v", list.Containers)
	}
	if _, err := r.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil || state() != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("stop sandbox: %v, container %v", err, state())
	}
	if _, err := r.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, Config: cfg}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("create in a stopped sandbox: %v", err)
	}
	if _, err := r.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.PodSandboxId}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.ContainerId}); status.Code(err) != codes.NotFound {
		t.Errorf("container of a removed sandbox: %v, want NotFound", err)
	}
	if _, err := r.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ContainerId}); err != nil {
		t.Errorf("removing a removed container: %v", err)
	}
}
