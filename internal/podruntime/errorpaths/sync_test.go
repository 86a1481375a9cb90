package errorpaths

import (
	"context"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// TestSyncFailures fails one CRI call of a new pod's first pass: the pass
// reports the error, the container's waiting reason and upstream's events,
// and the next pass, with the runtime healthy again, runs the pod.
func TestSyncFailures(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		fault  fakecri.Fault
		// What the failed pass reports.
		err     []string
		waiting string
		message string
		events  []string
		// What it left in the runtime.
		sandboxes  []runtimeapi.PodSandboxState
		containers []runtimeapi.ContainerState
	}{{
		name: "RunPodSandbox fails", method: "RunPodSandbox", fault: fakecri.Fault{Err: unknown("failed to set up network")},
		err:     []string{"create sandbox of pod default/web (attempt 0)", "failed to set up network"},
		waiting: podruntime.ReasonContainerCreating,
		events:  []string{"Warning FailedCreatePodSandBox Failed to create pod sandbox: rpc error: code = Unknown desc = failed to set up network"},
	}, {
		name: "status of the new sandbox fails", method: "PodSandboxStatus", fault: fakecri.Fault{Err: unknown("task not found")},
		err:       []string{"status of new sandbox sandbox-1 of pod default/web", "task not found"},
		waiting:   podruntime.ReasonContainerCreating,
		sandboxes: []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY},
	}, {
		name: "image status fails", method: "ImageStatus", fault: fakecri.Fault{Err: unknown("image store closed")},
		err:       []string{`inspect image "registry.test/app:1" for container app of pod default/web`, "image store closed"},
		waiting:   podruntime.ReasonErrImageInspect,
		events:    []string{`Warning InspectFailed Failed to inspect image "registry.test/app:1"`, "Warning Failed Error: ImageInspectError"},
		sandboxes: []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY},
	}, {
		name: "CreateContainer fails", method: "CreateContainer", fault: fakecri.Fault{Err: unknown("no space left on device")},
		err:       []string{"create container app of pod default/web", "no space left on device"},
		waiting:   podruntime.ReasonCreateContainerError,
		message:   "create container app of pod default/web: rpc error: code = Unknown desc = no space left on device",
		events:    []string{"Normal Pulled", "Warning Failed Error: no space left on device"},
		sandboxes: []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY},
	}, {
		name: "StartContainer fails", method: "StartContainer", fault: fakecri.Fault{Err: unknown("exec: no such file")},
		err:        []string{"start container app of pod default/web", "exec: no such file"},
		waiting:    podruntime.ReasonRunContainerError,
		message:    "start container app of pod default/web: rpc error: code = Unknown desc = exec: no such file",
		events:     []string{"Normal Created", "Warning Failed Error: exec: no such file"},
		sandboxes:  []runtimeapi.PodSandboxState{runtimeapi.PodSandboxState_SANDBOX_READY},
		containers: []runtimeapi.ContainerState{runtimeapi.ContainerState_CONTAINER_CREATED},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 10*time.Second)
			pod := newPod()
			f.cri.Inject(tc.method, 1, tc.fault)

			res := f.rt.SyncNewPod(context.Background(), pod, nil, nil, nil)
			wantErr(t, res.Err, tc.err...)
			if res.Settled {
				t.Error("a failed pass is settled")
			}
			if res.RetryAfter != 0 {
				t.Errorf("RetryAfter %v, want none: the worker retries failed passes", res.RetryAfter)
			}
			if reason, message := containerState(t, res.APIStatus); reason != tc.waiting || (tc.message != "" && message != tc.message) {
				t.Errorf("container waits with %q (%q), want %q (%q)", reason, message, tc.waiting, tc.message)
			}
			wantEvents(t, f.takeEvents(), tc.events)
			sandboxes, containers := states(f.cri)
			if !slices.Equal(sandboxes, tc.sandboxes) || !slices.Equal(containers, tc.containers) {
				t.Errorf("runtime holds sandboxes %v, containers %v; want %v, %v", sandboxes, containers, tc.sandboxes, tc.containers)
			}

			res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
			wantErr(t, res.Err)
			if reason, _ := containerState(t, res.APIStatus); reason != "Running" {
				t.Errorf("after recovery the container is %q, want Running", reason)
			}
			wantEvents(t, f.takeEvents(), []string{"Normal Created", "Normal Started"})
		})
	}
}
