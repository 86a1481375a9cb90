package gc

import (
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/messages"
)

// fakeRuntime is a RuntimeServiceClient with fixed lists that records removals.
type fakeRuntime struct {
	runtimeapi.RuntimeServiceClient
	mu         sync.Mutex
	containers []*runtimeapi.Container
	sandboxes  []*runtimeapi.PodSandbox
	logPaths   map[string]string
	// mounts are the containers' mounts, which their statuses show.
	mounts   map[string][]*runtimeapi.Mount
	removed  []string
	reopened []string
	// listErr fails ListContainers.
	listErr error
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ListContainersRequest, ...grpc.CallOption) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.listErr != nil {
		return nil, f.listErr
	}
	return &runtimeapi.ListContainersResponse{Containers: slices.Clone(f.containers)}, nil
}

func (f *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.ListPodSandboxRequest, ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ListPodSandboxResponse{Items: slices.Clone(f.sandboxes)}, nil
}

func (f *fakeRuntime) ContainerStatus(_ context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId, LogPath: f.logPaths[r.ContainerId],
		Mounts: f.mounts[r.ContainerId]}}, nil
}

func (f *fakeRuntime) RemoveContainer(_ context.Context, r *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, r.ContainerId)
	f.containers = slices.DeleteFunc(f.containers, func(c *runtimeapi.Container) bool { return c.Id == r.ContainerId })
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *fakeRuntime) RemovePodSandbox(_ context.Context, r *runtimeapi.RemovePodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.removed = append(f.removed, r.PodSandboxId)
	f.sandboxes = slices.DeleteFunc(f.sandboxes, func(s *runtimeapi.PodSandbox) bool { return s.Id == r.PodSandboxId })
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (f *fakeRuntime) ReopenContainerLog(_ context.Context, r *runtimeapi.ReopenContainerLogRequest, _ ...grpc.CallOption) (*runtimeapi.ReopenContainerLogResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reopened = append(f.reopened, r.ContainerId)
	if err := os.WriteFile(f.logPaths[r.ContainerId], nil, 0o644); err != nil {
		return nil, err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest, ...grpc.CallOption) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Info: map[string]string{"config": `{"sandboxImage":"registry.k8s.io/pause:3.10"}`}}, nil
}

func (f *fakeRuntime) removedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.removed)
}

// TestActorAsksPodManager runs the actor with a fake pod-manager and runtime:
// a pass removes the older dead instance of the known pod and everything of
// the unknown one, and the actor answers HealthRequest.
func TestActorAsksPodManager(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	mk := func(c *runtimeapi.Container, ago time.Duration) *runtimeapi.Container {
		c.CreatedAt = old.Add(-ago).UnixNano()
		return c
	}
	rt := &fakeRuntime{
		containers: []*runtimeapi.Container{
			mk(ctr("a1", "a", "app", "sa", exited, 0), 2*time.Minute),
			mk(ctr("a2", "a", "app", "sa", exited, 0), time.Minute),
			mk(ctr("x1", "x", "app", "sx", exited, 0), time.Minute),
		},
		sandboxes: []*runtimeapi.PodSandbox{sb("sa", "a", ready, 0), sb("sx", "x", notReady, 0)},
	}
	rt.sandboxes[0].CreatedAt, rt.sandboxes[1].CreatedAt = old.UnixNano(), old.UnixNano()

	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	pm := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.ListPods); ok {
			c.Respond(&messages.PodList{Pods: []v1.Pod{{ObjectMeta: metav1.ObjectMeta{UID: "a"}}}, SourcesReady: true})
		}
	}))
	pid := system.Root.Spawn(actor.PropsFromProducer(New(Params{
		Runtime: rt, PodManager: pm, ContainerGCPeriod: 20 * time.Millisecond, ImageGCPeriod: time.Hour,
		MaxPerPodContainer: 1, MaxContainers: -1, PodLogsDir: t.TempDir(), Log: zerolog.Nop(),
	})))
	deadline := time.Now().Add(10 * time.Second)
	want := []string{"a1", "x1", "sx"}
	for !slices.Equal(rt.removedIDs(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("removed %v, want %v", rt.removedIDs(), want)
		}
		time.Sleep(10 * time.Millisecond)
	}
	res, err := system.Root.RequestFuture(pid, &messages.HealthRequest{}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	h := res.(*messages.HealthReport)
	if !h.Healthy || !strings.Contains(h.Detail, "removed 2 containers, 1 sandboxes") {
		t.Errorf("health = %+v", h)
	}
}

func TestRotate(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	if err := os.WriteFile(path, make([]byte, 2048), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, ts := range []string{"20260101-000001", "20260101-000002", "20260101-000003"} {
		if err := os.WriteFile(path+"."+ts, []byte("rotated at "+ts+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	rt := &fakeRuntime{logPaths: map[string]string{"c": path}}
	p := logRotation{Runtime: rt, MaxSize: 1024, MaxFiles: 3, Log: zerolog.Nop()}
	now := time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
	rotated, removed, err := p.rotate(context.Background(), "c", now)
	if err != nil || !rotated || removed != 2 {
		t.Fatalf("rotate = %v, %d, %v", rotated, removed, err)
	}
	// MaxFiles 3: the live log plus two rotated ones, all but the newest
	// rotated one compressed.
	want := []string{path + ".20260101-000003.gz", path + ".20260102-000000"}
	if got := rotatedLogs(path); !slices.Equal(got, want) {
		t.Errorf("rotated = %v, want %v", got, want)
	}
	if got := gunzip(t, want[0]); got != "rotated at 20260101-000003\n" {
		t.Errorf("compressed rotated log holds %q", got)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 || !slices.Equal(rt.reopened, []string{"c"}) {
		t.Errorf("live log after rotation: %v %v, reopened %v", fi, err, rt.reopened)
	}
	// Under the limit: nothing.
	if rotated, _, err := p.rotate(context.Background(), "c", now.Add(time.Second)); rotated || err != nil {
		t.Errorf("rotated a small log: %v %v", rotated, err)
	}
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}

// TestWaitsForSourcesReady: until the pod-manager's sources are all ready,
// a pod it does not know is left alone; the pass after they are comes
// within seconds, not a period later.
func TestWaitsForSourcesReady(t *testing.T) {
	old := time.Now().Add(-time.Hour).UnixNano()
	rt := &fakeRuntime{containers: []*runtimeapi.Container{ctr("x1", "x", "app", "sx", exited, 0)}}
	rt.containers[0].CreatedAt = old
	var mu sync.Mutex
	answers := 0
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	pm := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.ListPods); ok {
			mu.Lock()
			answers++
			ready := answers > 1
			mu.Unlock()
			c.Respond(&messages.PodList{SourcesReady: ready})
		}
	}))
	system.Root.Spawn(actor.PropsFromProducer(New(Params{
		Runtime: rt, PodManager: pm, ContainerGCPeriod: time.Hour, ImageGCPeriod: time.Hour,
		MaxPerPodContainer: 1, MaxContainers: -1, PodLogsDir: t.TempDir(), Log: zerolog.Nop(),
	})))
	deadline := time.Now().Add(3 * 2 * firstReadyRetry)
	for !slices.Equal(rt.removedIDs(), []string{"x1"}) {
		if time.Now().After(deadline) {
			t.Fatalf("removed %v, want x1 once the sources are ready", rt.removedIDs())
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if answers != 2 {
		t.Errorf("the pod-manager was asked %d times, want 2 (not ready, then ready)", answers)
	}
}
