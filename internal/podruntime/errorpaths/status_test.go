package errorpaths

import (
	"context"
	"testing"
	"time"

	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// TestStatusOfAChangingRuntime lists a running pod while the runtime
// changes under the listing: a sandbox or container removed between the
// listing and its status call is left out, as upstream's; any other failure
// of a status call fails the observation.
func TestStatusOfAChangingRuntime(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method string
		fault  fakecri.Fault
		err    []string
		// What the observation holds, when it succeeds.
		sandboxes, containers int
	}{{
		name: "container removed after the listing", method: "ContainerStatus",
		fault:     fakecri.Fault{Hook: func(r *fakecri.Runtime) { r.Delete("container-2") }},
		sandboxes: 1,
	}, {
		name: "sandbox removed after the listing", method: "PodSandboxStatus",
		fault: fakecri.Fault{Hook: func(r *fakecri.Runtime) { r.Delete("sandbox-1") }},
		// The container's listing was taken before its sandbox went; its
		// status call finds it gone too.
	}, {
		name: "container status fails", method: "ContainerStatus",
		fault: fakecri.Fault{Err: unknown("ttrpc: closed")},
		err:   []string{"status of container container-2 (app) of pod default/web", "ttrpc: closed"},
	}, {
		name: "sandbox status fails", method: "PodSandboxStatus",
		fault: fakecri.Fault{Err: unknown("ttrpc: closed")},
		err:   []string{"status of sandbox sandbox-1 of pod default/web", "ttrpc: closed"},
	}} {
		for _, list := range []string{"GetPodStatus", "ListPods"} {
			t.Run(tc.name+"/"+list, func(t *testing.T) {
				f := newFixture(t, 10*time.Second)
				pod := f.running(t)
				f.cri.Inject(tc.method, 1, tc.fault)

				var sandboxes, containers int
				var err error
				if list == "GetPodStatus" {
					ps, e := f.rt.GetPodStatus(context.Background(), pod.UID, pod.Name, pod.Namespace)
					if err = e; ps != nil {
						sandboxes, containers = len(ps.SandboxStatuses), len(ps.ContainerStatuses)
					}
				} else {
					pods, e := f.rt.ListPods(context.Background())
					if err = e; len(pods) == 1 {
						sandboxes, containers = len(pods[0].SandboxStatuses), len(pods[0].ContainerStatuses)
					} else if e == nil && (tc.sandboxes > 0 || tc.containers > 0) {
						t.Fatalf("ListPods found %d pods, want 1", len(pods))
					}
				}
				wantErr(t, err, tc.err...)
				if sandboxes != tc.sandboxes || containers != tc.containers {
					t.Errorf("observed %d sandboxes and %d containers, want %d and %d", sandboxes, containers, tc.sandboxes, tc.containers)
				}
			})
		}
	}
}

// TestSyncRecreatesAVanishedContainer removes the pod's container between
// the pass's listing and its status call: the pass does not fail, it sees
// the container missing and creates the next instance in the same sandbox.
func TestSyncRecreatesAVanishedContainer(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	pod := f.running(t)
	f.cri.Inject("ContainerStatus", 1, fakecri.Fault{Hook: func(r *fakecri.Runtime) { r.Delete("container-2") }})

	res := f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	wantErr(t, res.Err)
	if reason, _ := containerState(t, res.APIStatus); reason != "Running" {
		t.Errorf("container is %q, want Running", reason)
	}
	cs := f.cri.Containers()
	if len(cs) != 1 || cs[0].Id == "container-2" || len(f.cri.Sandboxes()) != 1 {
		t.Errorf("runtime holds containers %v and %d sandboxes, want a new instance in the sandbox", cs, len(f.cri.Sandboxes()))
	}
}
