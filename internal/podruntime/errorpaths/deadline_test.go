package errorpaths

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
)

// TestSyncActiveDeadline: a pass before the pod's active deadline asks to
// be woken at it; the pass past it starts nothing, stops the pod, and
// reports it Failed with upstream's reason, message and event.
func TestSyncActiveDeadline(t *testing.T) {
	f := newFixture(t, time.Second)
	pod := newPod()
	deadline := int64(30)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	res := f.rt.SyncNewPod(context.Background(), pod, nil, nil, nil)
	wantErr(t, res.Err)
	if res.RetryAfter < 29*time.Second || res.RetryAfter > 31*time.Second {
		t.Errorf("first pass: RetryAfter %v, want the deadline, 30 s", res.RetryAfter)
	}
	f.takeEvents()

	pod.Status = res.APIStatus
	started := metav1.NewTime(time.Now().Add(-20 * time.Second))
	pod.Status.StartTime = &started
	res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	if res.RetryAfter < 9*time.Second || res.RetryAfter > 11*time.Second || res.APIStatus.Phase != v1.PodRunning {
		t.Errorf("20 s in: phase %s, RetryAfter %v, want Running and 10 s", res.APIStatus.Phase, res.RetryAfter)
	}

	started = metav1.NewTime(time.Now().Add(-31 * time.Second))
	pod.Status = res.APIStatus
	pod.Status.StartTime = &started
	res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	wantErr(t, res.Err)
	api := res.APIStatus
	if api.Phase != v1.PodFailed || api.Reason != podruntime.ReasonDeadlineExceeded || api.Message != podruntime.MessageDeadlineExceeded || res.RetryAfter != 0 {
		t.Errorf("past the deadline: %s %q %q, RetryAfter %v", api.Phase, api.Reason, api.Message, res.RetryAfter)
	}
	if state, reason := containerState(t, api); state != "Terminated" || reason != "Error" {
		t.Errorf("container after the deadline: %s %s", state, reason)
	}
	wantEvents(t, f.takeEvents(), []string{"Normal DeadlineExceeded Pod was active on the node longer than the specified deadline", "Normal Killing Stopping container app"})
	sandboxes, containers := states(f.cri)
	if len(sandboxes) != 1 || sandboxes[0] != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || len(containers) != 1 || containers[0] != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Errorf("runtime after the deadline: sandboxes %v, containers %v; want one of each, stopped and kept", sandboxes, containers)
	}

	// Another pass, before the worker terminates the pod, starts nothing
	// again and records no second event.
	pod.Status = api
	res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	if res.APIStatus.Phase != v1.PodFailed || len(f.takeEvents()) != 0 {
		t.Errorf("a second pass: phase %s", res.APIStatus.Phase)
	}
	if _, containers := states(f.cri); len(containers) != 1 {
		t.Errorf("a second pass started a container: %v", containers)
	}

	// The worker's kill that follows keeps what is left, as for any pod
	// that ran to completion: its status says so.
	pod.Status = res.APIStatus
	if err := f.rt.KillPodWithSpec(context.Background(), pod, nil); err != nil {
		t.Fatalf("kill: %v", err)
	}
	if sandboxes, containers := states(f.cri); len(sandboxes) != 1 || len(containers) != 1 {
		t.Errorf("the kill removed the pod's dead container or sandbox: %v %v", sandboxes, containers)
	}
}
