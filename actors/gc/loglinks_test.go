package gc

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

// statesRuntime answers ContainerStatus from a map of states, NotFound for
// the rest, and removes containers.
type statesRuntime struct {
	runtimeapi.RuntimeServiceClient
	states map[string]runtimeapi.ContainerState
	labels map[string]string
}

func (f *statesRuntime) ContainerStatus(_ context.Context, r *runtimeapi.ContainerStatusRequest, _ ...grpc.CallOption) (*runtimeapi.ContainerStatusResponse, error) {
	st, ok := f.states[r.ContainerId]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "container %s not found", r.ContainerId)
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: r.ContainerId, State: st, Labels: f.labels}}, nil
}

func (f *statesRuntime) RemoveContainer(_ context.Context, r *runtimeapi.RemoveContainerRequest, _ ...grpc.CallOption) (*runtimeapi.RemoveContainerResponse, error) {
	delete(f.states, r.ContainerId)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func TestRemoveDanglingLogLinks(t *testing.T) {
	dir, logs := t.TempDir(), t.TempDir()
	live := filepath.Join(logs, "0.log")
	if err := os.WriteFile(live, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(logs, "gone.log")
	rt := &statesRuntime{states: map[string]runtimeapi.ContainerState{
		"running0001": runtimeapi.ContainerState_CONTAINER_RUNNING,
		"exited00001": runtimeapi.ContainerState_CONTAINER_EXITED,
		"created0001": runtimeapi.ContainerState_CONTAINER_CREATED,
	}}
	tests := []struct {
		name, target string
		kept         bool
	}{
		{"web_default_app-livelink0001.log", live, true}, // its log is there
		{"web_default_app-running0001.log", gone, true},  // log being rotated
		{"web_default_app-created0001.log", gone, true},  // not exited either
		{"web_default_app-exited00001.log", gone, false}, // exited: its log is gone for good
		{"web_default_app-removed0001.log", gone, false}, // the runtime does not know it
		{"web_default_app-abc.log", gone, false},         // no usable ID
		{"not-a-log-link.txt", gone, true},               // not *.log: not looked at
	}
	for _, tt := range tests {
		if err := os.Symlink(tt.target, filepath.Join(dir, tt.name)); err != nil {
			t.Fatal(err)
		}
	}
	containerPass{Runtime: rt, ContainerLogsDir: dir, Log: zerolog.Nop()}.removeDanglingLogLinks(context.Background())
	for _, tt := range tests {
		_, err := os.Lstat(filepath.Join(dir, tt.name))
		if kept := err == nil; kept != tt.kept {
			t.Errorf("%s: kept %v, want %v", tt.name, kept, tt.kept)
		}
	}
}

func TestRemoveContainerRemovesLogLink(t *testing.T) {
	dir := t.TempDir()
	id := "0123456789abcdef"
	rt := &statesRuntime{
		states: map[string]runtimeapi.ContainerState{id: runtimeapi.ContainerState_CONTAINER_EXITED},
		labels: map[string]string{podruntime.LabelPodName: "web", podruntime.LabelPodNamespace: "default", podruntime.LabelContainerName: "app"},
	}
	link := podruntime.LogSymlink(dir, "web", "default", "app", id)
	if err := os.Symlink("/nonexistent/0.log", link); err != nil {
		t.Fatal(err)
	}
	if err := (containerPass{Runtime: rt, ContainerLogsDir: dir, Log: zerolog.Nop()}).removeContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(link); !os.IsNotExist(err) {
		t.Errorf("link %s left: %v", link, err)
	}
}
