package fakecri

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version is the runtime's name and version.
func (r *Runtime) Version(ctx context.Context, _ *runtimeapi.VersionRequest, _ ...grpc.CallOption) (*runtimeapi.VersionResponse, error) {
	if err := r.enter(ctx, "Version"); err != nil {
		return nil, err
	}
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "0", RuntimeApiVersion: "v1"}, nil
}

// Status reports the runtime and its network ready, with no runtime
// handler: as a runtime that does not support user namespaces.
func (r *Runtime) Status(ctx context.Context, _ *runtimeapi.StatusRequest, _ ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	if err := r.enter(ctx, "Status"); err != nil {
		return nil, err
	}
	network := &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Status: true}
	r.mu.Lock()
	if r.network != nil {
		network = r.network
	}
	r.mu.Unlock()
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: true},
		network,
	}}}, nil
}

// RunPodSandbox creates a ready sandbox with an IP of its own, unless it
// is in the node's network namespace.
func (r *Runtime) RunPodSandbox(ctx context.Context, in *runtimeapi.RunPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RunPodSandboxResponse, error) {
	if err := r.begin(ctx, "RunPodSandbox"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	cfg := in.GetConfig()
	if cfg.GetMetadata() == nil {
		return nil, status.Error(codes.InvalidArgument, "sandbox config without metadata")
	}
	id := r.nextID("sandbox")
	// A sandbox in the node's network namespace has no IP of its own, as
	// containerd reports it.
	ip := fmt.Sprintf("10.88.%d.%d", r.seq/250, r.seq%250+1)
	if cfg.GetLinux().GetSecurityContext().GetNamespaceOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		ip = ""
	}
	r.sandboxes[id] = &runtimeapi.PodSandboxStatus{
		Id:             id,
		Metadata:       proto.Clone(cfg.Metadata).(*runtimeapi.PodSandboxMetadata),
		State:          runtimeapi.PodSandboxState_SANDBOX_READY,
		CreatedAt:      r.now(),
		Network:        &runtimeapi.PodSandboxNetworkStatus{Ip: ip},
		Labels:         maps.Clone(cfg.Labels),
		Annotations:    maps.Clone(cfg.Annotations),
		RuntimeHandler: in.GetRuntimeHandler(),
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

// StopPodSandbox stops the sandbox's running containers (SIGKILL) and
// makes it not ready.
func (r *Runtime) StopPodSandbox(ctx context.Context, in *runtimeapi.StopPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.StopPodSandboxResponse, error) {
	if err := r.begin(ctx, "StopPodSandbox"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	s, err := r.sandbox(in.PodSandboxId)
	if err != nil {
		return nil, err
	}
	for _, c := range r.containers {
		if c.sandboxID == s.Id {
			r.exit(c.status, 137)
		}
	}
	s.State = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

// RemovePodSandbox removes the sandbox and its containers; removing one
// that is gone succeeds, as the CRI asks.
func (r *Runtime) RemovePodSandbox(ctx context.Context, in *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	if err := r.begin(ctx, "RemovePodSandbox"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	r.delete(in.PodSandboxId)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

// PodSandboxStatus returns the sandbox's status, NotFound once it is gone.
func (r *Runtime) PodSandboxStatus(ctx context.Context, in *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := r.begin(ctx, "PodSandboxStatus"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	s, err := r.sandbox(in.PodSandboxId)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: proto.Clone(s).(*runtimeapi.PodSandboxStatus)}, nil
}

// ListPodSandbox lists the sandboxes the filter selects, oldest first.
func (r *Runtime) ListPodSandbox(ctx context.Context, in *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := r.begin(ctx, "ListPodSandbox"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	f := in.GetFilter()
	out := &runtimeapi.ListPodSandboxResponse{}
	for _, s := range r.sortedSandboxes() {
		if (f.GetId() != "" && f.Id != s.Id) || (f.GetState() != nil && f.State.State != s.State) ||
			!matchLabels(s.Labels, f.GetLabelSelector()) {
			continue
		}
		out.Items = append(out.Items, &runtimeapi.PodSandbox{
			Id: s.Id, Metadata: proto.Clone(s.Metadata).(*runtimeapi.PodSandboxMetadata), State: s.State, CreatedAt: s.CreatedAt,
			Labels: maps.Clone(s.Labels), Annotations: maps.Clone(s.Annotations),
		})
	}
	return out, nil
}

// CreateContainer creates a container in a ready sandbox from an image
// the runtime holds.
func (r *Runtime) CreateContainer(ctx context.Context, in *runtimeapi.CreateContainerRequest, _ ...grpc.CallOption) (*runtimeapi.CreateContainerResponse, error) {
	if err := r.begin(ctx, "CreateContainer"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	cfg := in.GetConfig()
	if cfg.GetMetadata() == nil {
		return nil, status.Error(codes.InvalidArgument, "container config without metadata")
	}
	s, err := r.sandbox(in.PodSandboxId)
	if err != nil {
		return nil, err
	}
	if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.FailedPrecondition, "sandbox %q is not ready", s.Id)
	}
	img := r.findImage(cfg.GetImage().GetImage())
	if img == nil {
		return nil, status.Errorf(codes.NotFound, "image %q: not found", cfg.GetImage().GetImage())
	}
	// An image volume's image must be held, as a runtime that mounts it
	// needs it.
	for _, m := range cfg.Mounts {
		if ref := m.GetImage().GetImage(); ref != "" && r.findImage(ref) == nil {
			return nil, status.Errorf(codes.NotFound, "image volume at %s: image %q: not found", m.ContainerPath, ref)
		}
	}
	id := r.nextID("container")
	r.containers[id] = &container{sandboxID: s.Id, status: &runtimeapi.ContainerStatus{
		Id:          id,
		Metadata:    proto.Clone(cfg.Metadata).(*runtimeapi.ContainerMetadata),
		State:       runtimeapi.ContainerState_CONTAINER_CREATED,
		CreatedAt:   r.now(),
		Image:       &runtimeapi.ImageSpec{Image: img.Id, UserSpecifiedImage: cfg.Image.UserSpecifiedImage},
		ImageRef:    img.Id,
		Labels:      maps.Clone(cfg.Labels),
		Annotations: maps.Clone(cfg.Annotations),
		Mounts:      cloneMounts(cfg.Mounts),
		LogPath:     cfg.LogPath,
	}}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer starts a created container.
func (r *Runtime) StartContainer(ctx context.Context, in *runtimeapi.StartContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StartContainerResponse, error) {
	if err := r.begin(ctx, "StartContainer"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	c, err := r.container(in.ContainerId)
	if err != nil {
		return nil, err
	}
	if c.status.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		return nil, status.Errorf(codes.FailedPrecondition, "container %q is %s, not created", c.status.Id, c.status.State)
	}
	c.status.State = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.status.StartedAt = r.now()
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer stops a running container at once, as if it ignored
// SIGTERM and was killed; a container not running stays as it is.
func (r *Runtime) StopContainer(ctx context.Context, in *runtimeapi.StopContainerRequest, _ ...grpc.CallOption) (*runtimeapi.StopContainerResponse, error) {
	if err := r.begin(ctx, "StopContainer"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	c, err := r.container(in.ContainerId)
	if err != nil {
		return nil, err
	}
	r.exit(c.status, 137)
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes a container, running or not; removing one that
// is gone succeeds, as the CRI asks.
func (r *Runtime) RemoveContainer(ctx context.Context, in *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	if err := r.begin(ctx, "RemoveContainer"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	delete(r.containers, in.ContainerId)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ContainerStatus returns the container's status, NotFound once it is
// gone.
func (r *Runtime) ContainerStatus(ctx context.Context, in *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	if err := r.begin(ctx, "ContainerStatus"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	c, err := r.container(in.ContainerId)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatusResponse{Status: proto.Clone(c.status).(*runtimeapi.ContainerStatus)}, nil
}

// ListContainers lists the containers the filter selects, oldest first.
func (r *Runtime) ListContainers(ctx context.Context, in *runtimeapi.ListContainersRequest, _ ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	if err := r.begin(ctx, "ListContainers"); err != nil {
		return nil, err
	}
	defer r.mu.Unlock()
	f := in.GetFilter()
	out := &runtimeapi.ListContainersResponse{}
	for _, c := range r.sortedContainers() {
		s := c.status
		if (f.GetId() != "" && f.Id != s.Id) || (f.GetPodSandboxId() != "" && f.PodSandboxId != c.sandboxID) ||
			(f.GetState() != nil && f.State.State != s.State) || !matchLabels(s.Labels, f.GetLabelSelector()) {
			continue
		}
		out.Containers = append(out.Containers, &runtimeapi.Container{
			Id: s.Id, PodSandboxId: c.sandboxID, Metadata: proto.Clone(s.Metadata).(*runtimeapi.ContainerMetadata),
			Image: proto.Clone(s.Image).(*runtimeapi.ImageSpec), ImageRef: s.ImageRef, State: s.State, CreatedAt: s.CreatedAt,
			Labels: maps.Clone(s.Labels), Annotations: maps.Clone(s.Annotations),
		})
	}
	return out, nil
}

// Exit makes a running container exit by itself with code, as a process
// that ends; it reports whether there was such a container.
func (r *Runtime) Exit(id string, code int32) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containers[id]
	if ok {
		r.exit(c.status, code)
	}
	return ok
}

// Delete removes a container, or a sandbox and its containers, without a
// CRI call: something else removed it (container GC, an operator's crictl).
func (r *Runtime) Delete(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.delete(id)
}

// Sandboxes returns the status of every sandbox, oldest first.
func (r *Runtime) Sandboxes() []*runtimeapi.PodSandboxStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.PodSandboxStatus
	for _, s := range r.sortedSandboxes() {
		out = append(out, proto.Clone(s).(*runtimeapi.PodSandboxStatus))
	}
	return out
}

// Containers returns the status of every container, oldest first.
func (r *Runtime) Containers() []*runtimeapi.ContainerStatus {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*runtimeapi.ContainerStatus
	for _, c := range r.sortedContainers() {
		out = append(out, proto.Clone(c.status).(*runtimeapi.ContainerStatus))
	}
	return out
}

// exit ends a running (or created) container with code, as containerd
// reports it: reason Completed for 0, Error otherwise.
func (r *Runtime) exit(s *runtimeapi.ContainerStatus, code int32) {
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		return
	}
	s.State = runtimeapi.ContainerState_CONTAINER_EXITED
	s.FinishedAt = r.now()
	s.ExitCode = code
	s.Reason = "Error"
	if code == 0 {
		s.Reason = "Completed"
	}
}

func (r *Runtime) delete(id string) {
	delete(r.containers, id)
	if _, ok := r.sandboxes[id]; !ok {
		return
	}
	delete(r.sandboxes, id)
	for cid, c := range r.containers {
		if c.sandboxID == id {
			delete(r.containers, cid)
		}
	}
}

func (r *Runtime) sortedSandboxes() []*runtimeapi.PodSandboxStatus {
	return slices.SortedFunc(maps.Values(r.sandboxes), func(a, b *runtimeapi.PodSandboxStatus) int {
		return cmp.Compare(a.CreatedAt, b.CreatedAt)
	})
}

func (r *Runtime) sortedContainers() []*container {
	return slices.SortedFunc(maps.Values(r.containers), func(a, b *container) int {
		return cmp.Compare(a.status.CreatedAt, b.status.CreatedAt)
	})
}

// cloneMounts copies a container's mounts for its status, which shows them
// as they were asked, as containerd's does.
func cloneMounts(in []*runtimeapi.Mount) []*runtimeapi.Mount {
	var out []*runtimeapi.Mount
	for _, m := range in {
		out = append(out, proto.Clone(m).(*runtimeapi.Mount))
	}
	return out
}
