package errorpaths

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/fakecri"
)

// TestKillFailures fails one CRI call of a running pod's kill: the kill
// reports it, tells Stopped only once nothing runs, and a second kill on
// the healthy runtime leaves nothing of the pod.
func TestKillFailures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		method  string
		fault   fakecri.Fault
		err     []string
		stopped bool // Stopped was called
		left    int  // sandboxes and containers left after the failed kill
	}{{
		name: "StopContainer fails", method: "StopContainer", fault: fakecri.Fault{Err: unknown("ttrpc: closed")},
		err:  []string{"kill pod default/web: stop container app (container-2) with grace period 2s", "ttrpc: closed"},
		left: 2,
	}, {
		// containerd 1.6 may fail the stop of a container that exits by
		// itself meanwhile: the container is stopped all the same.
		name: "StopContainer fails as the container exits", method: "StopContainer",
		fault:   fakecri.Fault{Hook: func(r *fakecri.Runtime) { r.Exit("container-2", 0) }, Err: unknown("ttrpc: closed")},
		stopped: true,
	}, {
		name: "container removed before its stop", method: "StopContainer",
		fault:   fakecri.Fault{Hook: func(r *fakecri.Runtime) { r.Delete("container-2") }},
		stopped: true,
	}, {
		name: "StopPodSandbox fails", method: "StopPodSandbox", fault: fakecri.Fault{Err: unknown("failed to destroy network")},
		err:  []string{"kill pod default/web: stop sandbox sandbox-1", "failed to destroy network"},
		left: 2,
	}, {
		name: "RemoveContainer fails", method: "RemoveContainer", fault: fakecri.Fault{Err: unknown("device busy")},
		err:     []string{"kill pod default/web: remove container app (container-2)", "device busy"},
		stopped: true,
	}, {
		name: "RemovePodSandbox fails", method: "RemovePodSandbox", fault: fakecri.Fault{Err: unknown("device busy")},
		err:     []string{"kill pod default/web: remove sandbox sandbox-1", "device busy"},
		stopped: true, left: 1,
	}, {
		name: "listing the pod fails", method: "ListPodSandbox", fault: fakecri.Fault{Err: status.Error(codes.Unavailable, "connection refused")},
		err:  []string{"kill pod default/web: list sandboxes of pod default/web (uid-web)", "connection refused"},
		left: 2,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, 10*time.Second)
			pod := f.running(t)
			f.cri.Inject(tc.method, 1, tc.fault)

			stopped := false
			err := f.rt.Kill(context.Background(), podruntime.Kill{Pod: pod, UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
				Stopped: func(*podruntime.PodStatus) { stopped = true }})
			wantErr(t, err, tc.err...)
			if stopped != tc.stopped {
				t.Errorf("Stopped called: %v, want %v", stopped, tc.stopped)
			}
			if left := len(f.cri.Sandboxes()) + len(f.cri.Containers()); left != tc.left {
				t.Errorf("%d sandboxes and containers left, want %d", left, tc.left)
			}
			var want []string
			if tc.method != "ListPodSandbox" {
				want = append(want, "Normal Killing Stopping container app")
			}
			if tc.err != nil {
				// Upstream's FailedKillPod, with the kill's error.
				want = append(want, "Warning FailedKillPod error killing pod: "+tc.err[0])
			}
			got := f.takeEvents()
			wantEvents(t, got, want)
			if tc.err == nil && slices.ContainsFunc(got, func(e string) bool { return strings.Contains(e, "FailedKillPod") }) {
				t.Errorf("events %q: a FailedKillPod after a kill that succeeded", got)
			}

			if err := f.rt.KillPodWithSpec(context.Background(), pod, nil); err != nil {
				t.Fatalf("second kill: %v", err)
			}
			if sbs, cs := f.cri.Sandboxes(), f.cri.Containers(); len(sbs)+len(cs) != 0 {
				t.Errorf("after the second kill the runtime holds %v and %v", sbs, cs)
			}
		})
	}
}

// TestSyncStopFails fails the stop of a container whose definition
// changed: the pass reports why it stopped the container and starts no
// second instance beside the one still running.
func TestSyncStopFails(t *testing.T) {
	f := newFixture(t, 10*time.Second)
	pod := f.running(t)
	pod.Spec.Containers[0].Args = []string{"--changed"}
	f.cri.Inject("StopContainer", 1, fakecri.Fault{Err: unknown("ttrpc: closed")})

	res := f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	wantErr(t, res.Err, "Container app definition changed, will be restarted: stop container app (container-2)", "ttrpc: closed")
	wantEvents(t, f.takeEvents(), []string{"Normal Killing Container app definition changed, will be restarted"})
	if n := len(f.cri.Containers()); n != 1 || f.cri.Calls("CreateContainer") != 1 {
		t.Errorf("%d containers, %d created, want the first one only", n, f.cri.Calls("CreateContainer"))
	}

	res = f.rt.SyncPod(context.Background(), pod, nil, nil, nil)
	wantErr(t, res.Err)
	if state, _ := containerState(t, res.APIStatus); state != "Running" || res.APIStatus.ContainerStatuses[0].RestartCount != 1 {
		t.Errorf("after recovery: %q, restart count %d; want the second instance Running", state, res.APIStatus.ContainerStatuses[0].RestartCount)
	}
}
