// Package podresources serves the podresources API (k8s.io/kubelet
// pkg/apis/podresources/v1: List, GetAllocatableResources, Get) on
// <root-dir>/pod-resources/kubelet.sock, as upstream's server: the pods
// the node runs, their containers (app containers and sidecars) and the
// devices of each, for monitoring agents. CPU IDs and memory come from
// Managers, empty while actorlet has no CPU or memory manager; dynamic
// resources are empty (no DRA).
package podresources

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	api "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// SocketPath is the API's socket under the kubelet's root directory.
func SocketPath(rootDir string) string {
	return filepath.Join(rootDir, "pod-resources", "kubelet.sock")
}

// Upstream's rate limit on the API (podresources.DefaultQPS and
// DefaultBurstTokens), and its error past it.
const (
	qps   = 100
	burst = 10
)

var errLimit = status.Error(codes.ResourceExhausted, "rejected by rate limit")

// Source is what the API reports.
type Source interface {
	// Pods are the active pods (upstream's KubeletPodResourcesListUseActivePods,
	// on by default): admitted and not finished.
	Pods(ctx context.Context) ([]*v1.Pod, error)
	// Devices are each container's devices, by pod and container name,
	// and the allocatable devices.
	Devices(ctx context.Context) (map[types.UID]map[string][]*api.ContainerDevices, []*api.ContainerDevices, error)
}

// Managers are what a CPU or memory manager holds: a container's
// exclusive CPU IDs and memory blocks, and the node's allocatable ones.
// None runs in actorlet yet; one plugs in here.
type Managers interface {
	Container(pod *v1.Pod, container string) (cpus []int64, memory []*api.ContainerMemory)
	Allocatable() (cpus []int64, memory []*api.ContainerMemory)
}

// Server is the podresources server.
type Server struct {
	path string
	grpc *grpc.Server
	src  Source
	// managers is nil while no CPU or memory manager runs: the API's
	// CPU IDs and memory are empty, as upstream's with their policies none.
	managers Managers
	api.UnsafePodResourcesListerServer
}

// Serve serves the API at path, its directory made 0750 as upstream's (the
// directory, owned by the kubelet's user, is what keeps others out);
// managers may be nil.
func Serve(path string, src Source, managers Managers) (*Server, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return nil, err
	}
	limiter := rate.NewLimiter(qps, burst)
	s := &Server{path: path, src: src, managers: managers, grpc: grpc.NewServer(grpc.UnaryInterceptor(
		func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if !limiter.Allow() {
				return nil, errLimit
			}
			return h(ctx, req)
		}))}
	api.RegisterPodResourcesListerServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(ln) }()
	return s, nil
}

// Stop stops serving and removes the socket.
func (s *Server) Stop() {
	s.grpc.Stop()
	_ = os.Remove(s.path)
}

// List is every active pod's resources.
func (s *Server) List(ctx context.Context, _ *api.ListPodResourcesRequest) (*api.ListPodResourcesResponse, error) {
	pods, err := s.src.Pods(ctx)
	if err != nil {
		return nil, err
	}
	devices, _, err := s.src.Devices(ctx)
	if err != nil {
		return nil, err
	}
	out := &api.ListPodResourcesResponse{PodResources: []*api.PodResources{}}
	for _, p := range pods {
		out.PodResources = append(out.PodResources, s.podResources(p, devices[p.UID]))
	}
	return out, nil
}

// GetAllocatableResources is the node's healthy devices.
func (s *Server) GetAllocatableResources(ctx context.Context, _ *api.AllocatableResourcesRequest) (*api.AllocatableResourcesResponse, error) {
	_, allocatable, err := s.src.Devices(ctx)
	if err != nil {
		return nil, err
	}
	out := &api.AllocatableResourcesResponse{Devices: allocatable}
	if s.managers != nil {
		out.CpuIds, out.Memory = s.managers.Allocatable()
	}
	return out, nil
}

// Get is one pod's resources (KubeletPodResourcesGet, GA).
func (s *Server) Get(ctx context.Context, r *api.GetPodResourcesRequest) (*api.GetPodResourcesResponse, error) {
	pods, err := s.src.Pods(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.Name == r.PodName && p.Namespace == r.PodNamespace {
			devices, _, err := s.src.Devices(ctx)
			if err != nil {
				return nil, err
			}
			return &api.GetPodResourcesResponse{PodResources: s.podResources(p, devices[p.UID])}, nil
		}
	}
	return nil, fmt.Errorf("pod %s in namespace %s not found", r.PodName, r.PodNamespace)
}

// podResources lists the pod's sidecars, then its app containers, as
// upstream (init containers that run to completion are not listed).
func (s *Server) podResources(p *v1.Pod, devices map[string][]*api.ContainerDevices) *api.PodResources {
	out := &api.PodResources{Name: p.Name, Namespace: p.Namespace, Containers: []*api.ContainerResources{}}
	add := func(name string) {
		c := &api.ContainerResources{Name: name, Devices: devices[name]}
		if s.managers != nil {
			c.CpuIds, c.Memory = s.managers.Container(p, name)
		}
		out.Containers = append(out.Containers, c)
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			add(c.Name)
		}
	}
	for _, c := range p.Spec.Containers {
		add(c.Name)
	}
	return out
}
