// Package errorpaths tests podruntime's error paths against fakecri, the
// in-memory CRI runtime: CRI calls that fail, time out, or find the runtime
// changed since the previous call. It holds tests only, apart from
// podruntime's own package so that they need no containerd and run in
// make unit; podruntime's tests against the real runtime stay there.
package errorpaths

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
	"github.com/actorlet/actorlet/internal/testutil"
)

const image = "registry.test/app:1"

// clock is a settable clock for the backoffs.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Step(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// fixture is a podruntime.Runtime over a fake runtime that holds the
// test image, recording its events.
type fixture struct {
	cri    *fakecri.Runtime
	rt     *podruntime.Runtime
	clock  *clock
	events *record.FakeRecorder
}

func newFixture(t *testing.T, timeout time.Duration) *fixture {
	t.Helper()
	f := &fixture{cri: fakecri.New(), clock: &clock{t: time.Now()}, events: record.NewFakeRecorder(100)}
	f.cri.AddImage(image)
	f.rt = &podruntime.Runtime{RT: f.cri, Img: f.cri, Opts: podruntime.Options{
		PodLogsDir: t.TempDir(), NodeName: "node", NodeIP: "192.0.2.1", NodeMemoryCapacity: 8 << 30,
		RuntimeRequestTimeout: timeout, PullBackoff: podruntime.NewImagePullBackoff(func() time.Time { return f.clock.Now() }),
		// A cluster DNS, as a cluster has: its pods are ClusterFirst.
		ClusterDNS: []string{"10.96.0.10"}, Recorder: f.events,
	}}
	return f
}

// takeEvents returns the events recorded since the last call, each as
// "TYPE REASON MESSAGE".
func (f *fixture) takeEvents() []string { return testutil.Events(f.events) }

func newPod() *v1.Pod {
	grace := int64(1)
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web"},
		Spec: v1.PodSpec{
			NodeName:                      "node",
			RestartPolicy:                 v1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "app", Image: image, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	}
}

func unknown(msg string) error { return status.Error(codes.Unknown, msg) }

// running runs a pod to its running state and returns it.
func (f *fixture) running(t *testing.T) *v1.Pod {
	t.Helper()
	pod := newPod()
	if res := f.rt.SyncNewPod(context.Background(), pod, nil, nil, nil); res.Err != nil {
		t.Fatalf("start pod: %v", res.Err)
	}
	f.takeEvents()
	return pod
}

// nextPass returns a pod and the sync of its next pass: SyncNewPod for a
// new pod, or SyncPod once it runs.
func (f *fixture) nextPass(t *testing.T, running bool) (*v1.Pod, func(context.Context, *v1.Pod, *podruntime.Backoff) podruntime.SyncResult) {
	t.Helper()
	if running {
		return f.running(t), func(ctx context.Context, pod *v1.Pod, b *podruntime.Backoff) podruntime.SyncResult {
			return f.rt.SyncPod(ctx, pod, nil, b, nil)
		}
	}
	return newPod(), func(ctx context.Context, pod *v1.Pod, b *podruntime.Backoff) podruntime.SyncResult {
		return f.rt.SyncNewPod(ctx, pod, nil, b, nil)
	}
}

// containerState is the API state of the pod's container app: its
// waiting reason, else Running or Terminated.
func containerState(t *testing.T, api v1.PodStatus) (state, message string) {
	t.Helper()
	if len(api.ContainerStatuses) != 1 {
		t.Fatalf("container statuses: %+v", api.ContainerStatuses)
	}
	s := api.ContainerStatuses[0].State
	switch {
	case s.Waiting != nil:
		return s.Waiting.Reason, s.Waiting.Message
	case s.Running != nil:
		return "Running", ""
	case s.Terminated != nil:
		return "Terminated", s.Terminated.Reason
	}
	return "", ""
}

// wantEvents fails unless each of want is a prefix of one of got, in order.
func wantEvents(t *testing.T, got, want []string) {
	t.Helper()
	i := 0
	for _, g := range got {
		if i < len(want) && strings.HasPrefix(g, want[i]) {
			i++
		}
	}
	if i < len(want) {
		t.Errorf("events %q\nwant, in order, events starting with %q", got, want)
	}
}

// wantErr fails unless err holds every one of parts; no parts wants nil.
func wantErr(t *testing.T, err error, parts ...string) {
	t.Helper()
	if len(parts) == 0 {
		if err != nil {
			t.Errorf("error: %v, want none", err)
		}
		return
	}
	if err == nil {
		t.Errorf("no error, want one with %q", parts)
		return
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

// states is the state of every sandbox and container of the fake runtime.
func states(cri *fakecri.Runtime) (sandboxes []runtimeapi.PodSandboxState, containers []runtimeapi.ContainerState) {
	for _, s := range cri.Sandboxes() {
		sandboxes = append(sandboxes, s.State)
	}
	for _, c := range cri.Containers() {
		containers = append(containers, c.State)
	}
	return sandboxes, containers
}
