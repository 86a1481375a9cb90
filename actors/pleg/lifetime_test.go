package pleg

import (
	"context"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/supervision"
)

// hangingRuntime is a runtime whose ListPodSandbox answers only when its
// context ends, and tells when that was.
type hangingRuntime struct {
	runtimeapi.RuntimeServiceClient
	called, ended chan struct{}
}

func (r *hangingRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest, _ ...grpc.CallOption) (*runtimeapi.ListPodSandboxResponse, error) {
	close(r.called)
	<-ctx.Done()
	close(r.ended)
	return nil, ctx.Err()
}

// TestStoppingPLEGCancelsItsRelist: a relist under way when the actor stops
// is cancelled at once, not left to run for its timeout.
func TestStoppingPLEGCancelsItsRelist(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	rt := &hangingRuntime{called: make(chan struct{}), ended: make(chan struct{})}
	pid, err := system.Root.SpawnNamed(system.Registry.Props(Kind, New(Params{Runtime: rt, Period: time.Second, Timeout: time.Hour,
		PodManager: actor.NewPID(system.Address(), "nobody"), Log: zerolog.Nop()}), nil), Kind)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-rt.called:
	case <-time.After(5 * time.Second):
		t.Fatal("no relist started")
	}
	system.Root.Stop(pid)
	select {
	case <-rt.ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the relist's context was not cancelled when the actor stopped")
	}
}
