package stats

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// fakeCRI answers the CRI calls the statistics make from canned
// responses, for the pure assembly tests; the integration test talks to
// the real containerd.
type fakeCRI struct {
	mu         sync.Mutex
	sandboxes  []*runtimeapi.PodSandbox
	containers []*runtimeapi.Container
	stats      []*runtimeapi.ContainerStats
	imageFs    []*runtimeapi.FilesystemUsage
	images     []*runtimeapi.Image
	pids       map[string]int   // sandbox ID → pid in its verbose info
	fail       map[string]error // CRI method → its error
	calls      map[string]int
}

func (f *fakeCRI) call(method string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[method]++
	return f.fail[method]
}

func (f *fakeCRI) callCount(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

func (f *fakeCRI) setStats(stats []*runtimeapi.ContainerStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stats = stats
}

func (f *fakeCRI) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	if err := f.call("ListPodSandbox"); err != nil {
		return nil, err
	}
	return &runtimeapi.ListPodSandboxResponse{Items: f.sandboxes}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, in *runtimeapi.PodSandboxStatusRequest, _ ...grpc.CallOption) (*runtimeapi.PodSandboxStatusResponse, error) {
	if err := f.call("PodSandboxStatus"); err != nil {
		return nil, err
	}
	pid, ok := f.pids[in.PodSandboxId]
	if !ok {
		return nil, fmt.Errorf("sandbox %s not found", in.PodSandboxId)
	}
	return &runtimeapi.PodSandboxStatusResponse{
		Status: &runtimeapi.PodSandboxStatus{Id: in.PodSandboxId},
		Info:   map[string]string{"info": fmt.Sprintf(`{"pid":%d,"processStatus":"running","image":"registry.k8s.io/pause:3.10"}`, pid)},
	}, nil
}

func (f *fakeCRI) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	if err := f.call("ListContainers"); err != nil {
		return nil, err
	}
	return &runtimeapi.ListContainersResponse{Containers: f.containers}, nil
}

func (f *fakeCRI) ListContainerStats(context.Context, *runtimeapi.ListContainerStatsRequest, ...grpc.CallOption) (*runtimeapi.ListContainerStatsResponse, error) {
	if err := f.call("ListContainerStats"); err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListContainerStatsResponse{Stats: f.stats}, nil
}

func (f *fakeCRI) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest, ...grpc.CallOption) (*runtimeapi.ImageFsInfoResponse, error) {
	if err := f.call("ImageFsInfo"); err != nil {
		return nil, err
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: f.imageFs}, nil
}

func (f *fakeCRI) ListImages(context.Context, *runtimeapi.ListImagesRequest, ...grpc.CallOption) (*runtimeapi.ListImagesResponse, error) {
	if err := f.call("ListImages"); err != nil {
		return nil, err
	}
	return &runtimeapi.ListImagesResponse{Images: f.images}, nil
}
