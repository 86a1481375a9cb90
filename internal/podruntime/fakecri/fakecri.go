// Package fakecri is an in-memory CRI runtime for unit tests only: it lets
// podruntime's error paths (a call that fails, one that never answers, a
// container that vanishes between two calls) be tested without containerd.
// It is never used by the integration tests, which run against the real
// runtime, nor by actorlet itself.
//
// Runtime implements the CRI client interfaces podruntime calls
// (runtimeapi.RuntimeServiceClient and runtimeapi.ImageServiceClient) over
// maps of sandboxes, containers and images whose states follow containerd's
// closely enough for podruntime's sync and kill; Inject makes a method fail,
// block, or run a hook that changes the runtime first. ExecSync, for the
// prober's and lifecycle hooks' tests, runs commands through SetExec's
// ExecFunc.
package fakecri

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Runtime is the fake runtime. The CRI methods podruntime does not call are
// not implemented: the embedded nil interfaces make a call to one panic, so
// a test notices that podruntime started to depend on it.
type Runtime struct {
	runtimeapi.RuntimeServiceClient
	runtimeapi.ImageServiceClient

	mu         sync.Mutex
	sandboxes  map[string]*runtimeapi.PodSandboxStatus
	containers map[string]*container
	images     map[string]*runtimeapi.Image // by ID
	faults     map[string][]*injected
	calls      map[string]int
	seq        int
	lastTime   int64
	exec       ExecFunc
	// network is the NetworkReady condition Status reports when set.
	network *runtimeapi.RuntimeCondition
}

// SetNetworkNotReady makes Status report the network not ready for reason
// and message, as containerd before its CNI configuration is there.
func (r *Runtime) SetNetworkNotReady(reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.network = &runtimeapi.RuntimeCondition{Type: runtimeapi.NetworkReady, Reason: reason, Message: message}
}

// container is a container and the sandbox it belongs to, which its status
// does not carry.
type container struct {
	status    *runtimeapi.ContainerStatus
	sandboxID string
}

// New returns an empty runtime.
func New() *Runtime {
	return &Runtime{
		sandboxes:  map[string]*runtimeapi.PodSandboxStatus{},
		containers: map[string]*container{},
		images:     map[string]*runtimeapi.Image{},
		faults:     map[string][]*injected{},
		calls:      map[string]int{},
	}
}

// Fault is what a call does before, or instead of, its effect.
type Fault struct {
	// Hook runs first, outside the runtime's lock, so that it may change
	// the runtime through its methods (RemoveContainer, Exit, ...) as if
	// that had happened just before the call.
	Hook func(*Runtime)
	// Delay makes the call take this long before its effect, as a slow
	// runtime; it fails as Block does if its context is done first.
	Delay time.Duration
	// Block makes the call wait until its context is done and fail with
	// the context's error as a gRPC status (DeadlineExceeded, Canceled),
	// as a call to a runtime that does not answer.
	Block bool
	// Err, when not nil, is returned instead of the call's effect; make it
	// with status.Error so that podruntime sees a gRPC code.
	Err error
}

type injected struct {
	fault Fault
	left  int // calls left; <= 0: every call
}

// methods are the CRI methods the fake implements, by name.
var methods = map[string]bool{
	"Version": true, "Status": true,
	"RunPodSandbox": true, "StopPodSandbox": true, "RemovePodSandbox": true,
	"PodSandboxStatus": true, "ListPodSandbox": true,
	"CreateContainer": true, "StartContainer": true, "StopContainer": true,
	"RemoveContainer": true, "ListContainers": true, "ContainerStatus": true,
	"ListImages": true, "ImageStatus": true, "PullImage": true, "RemoveImage": true,
	"ExecSync": true,
}

// Inject makes the next times calls of the CRI method (its name, such as
// "RunPodSandbox") do f; times <= 0 makes every call do it until Clear.
// Faults injected for one method apply in the order injected. Inject
// panics on a method the fake does not implement: a misspelt name would
// otherwise inject nothing.
func (r *Runtime) Inject(method string, times int, f Fault) {
	if !methods[method] {
		panic("fakecri: no CRI method " + method)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.faults[method] = append(r.faults[method], &injected{fault: f, left: times})
}

// Clear removes the faults injected for method.
func (r *Runtime) Clear(method string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.faults, method)
}

// Calls returns how many times method was called, faults included.
func (r *Runtime) Calls(method string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls[method]
}

// enter counts a call of method and applies its next fault: a non-nil
// error is what the call returns instead of its effect.
func (r *Runtime) enter(ctx context.Context, method string) error {
	r.mu.Lock()
	r.calls[method]++
	var f *Fault
	if q := r.faults[method]; len(q) > 0 {
		f = &q[0].fault
		if q[0].left > 0 {
			if q[0].left--; q[0].left == 0 {
				r.faults[method] = q[1:]
			}
		}
	}
	r.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	if f == nil {
		return nil
	}
	if f.Hook != nil {
		f.Hook(r)
	}
	if f.Delay > 0 {
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
	if f.Block {
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	return f.Err
}

// begin is enter for a call that reads or changes the runtime: when it
// returns nil, it holds the runtime's lock, which the caller releases.
func (r *Runtime) begin(ctx context.Context, method string) error {
	if err := r.enter(ctx, method); err != nil {
		return err
	}
	r.mu.Lock()
	return nil
}

func (r *Runtime) sandbox(id string) (*runtimeapi.PodSandboxStatus, error) {
	if s, ok := r.sandboxes[id]; ok {
		return s, nil
	}
	return nil, status.Errorf(codes.NotFound, "sandbox %q: not found", id)
}

func (r *Runtime) container(id string) (*container, error) {
	if c, ok := r.containers[id]; ok {
		return c, nil
	}
	return nil, status.Errorf(codes.NotFound, "container %q: not found", id)
}

// now is a creation or state-change time, after every earlier one, so that
// podruntime's newest-first ordering is never a tie.
func (r *Runtime) now() int64 {
	t := time.Now().UnixNano()
	if t <= r.lastTime {
		t = r.lastTime + 1
	}
	r.lastTime = t
	return t
}

func (r *Runtime) nextID(kind string) string {
	r.seq++
	return fmt.Sprintf("%s-%d", kind, r.seq)
}

// matchLabels reports whether labels hold every pair of selector.
func matchLabels(labels, selector map[string]string) bool {
	for k, v := range selector {
		if l, ok := labels[k]; !ok || l != v {
			return false
		}
	}
	return true
}
