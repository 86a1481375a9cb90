package podmanager

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/messages"
)

func TestEvict(t *testing.T) {
	const msg = "The node was low on resource: memory. "
	evict := EvEvict{UID: "a", GracePeriod: 0, Reason: "Evicted", Message: msg}
	failed := func(cmds []Command) *v1.PodStatus {
		for _, c := range cmds {
			if r, ok := c.(CmdReportStatus); ok {
				return &r.Status
			}
		}
		return nil
	}
	tests := []struct {
		name       string
		before     []at
		ev         Event
		wantKill   bool
		wantFailed bool
		wantPhase  Phase
		wantFinish bool
	}{
		{"a running pod is killed at once and reported Failed", aRuns, evict, true, true, Ending, false},
		{"an unknown pod is ignored", ready, evict, false, false, 0, false},
		{"a pod being deleted is not evicted", then(aRuns, at{0, set(messages.SourceAPI, deleting(podA, 5))}), evict, false, false, Terminating, false},
		{"its later statuses stay Failed", then(aRuns, at{0, evict}), EvWorkerStatus{UID: "a", Status: running}, false, true, Ending, false},
		{"its worker done: finished, reported Failed with its containers terminated",
			then(aRuns, at{0, EvWorkerStatus{UID: "a", Status: v1.PodStatus{Phase: v1.PodRunning,
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}}, at{0, evict}),
			EvWorkerDone{UID: "a"}, false, true, Finished, true},
		{"the worker's last status repeated after it is done changes nothing",
			then(aRuns, at{0, EvWorkerStatus{UID: "a", Status: v1.PodStatus{Phase: v1.PodRunning,
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}}},
				at{0, evict}, at{0, EvWorkerDone{UID: "a"}}),
			EvWorkerStatus{UID: "a", Status: v1.PodStatus{Phase: v1.PodRunning,
				ContainerStatuses: []v1.ContainerStatus{{Name: "c", Ready: true, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}},
			false, false, Finished, false},
		{"the API's Failed echo starts nothing", then(aRuns, at{0, evict}),
			set(messages.SourceAPI, withPhase(podA.DeepCopy(), v1.PodFailed, "Evicted")), false, false, Ending, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTestMachine()
			for _, e := range tt.before {
				m.Step(e.ev, t0.Add(e.after))
			}
			cmds := m.Step(tt.ev, t0)
			var kill *messages.TerminatePod
			finished := false
			for _, c := range cmds {
				switch c := c.(type) {
				case CmdTell:
					if tp, ok := c.Message.(*messages.TerminatePod); ok {
						kill = tp
					}
				case CmdSpawnWorker:
					t.Errorf("spawned a worker: %+v", c)
				case CmdReportFinished:
					finished = true
				}
			}
			if (kill != nil) != tt.wantKill {
				t.Fatalf("kill = %+v, want one: %v (%s)", kill, tt.wantKill, describe(cmds))
			}
			if kill != nil && (kill.GracePeriod == nil || *kill.GracePeriod != 0 || kill.Pod == nil) {
				t.Errorf("kill = %+v, want grace 0 with the pod", kill)
			}
			st := failed(cmds)
			if (st != nil && st.Phase == v1.PodFailed) != tt.wantFailed {
				t.Fatalf("status = %+v, want Failed: %v", st, tt.wantFailed)
			}
			if st != nil && tt.wantFailed {
				if st.Reason != "Evicted" || st.Message != msg {
					t.Errorf("reason %q message %q", st.Reason, st.Message)
				}
				var disruption bool
				for _, c := range st.Conditions {
					disruption = disruption || c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet
				}
				if !disruption {
					t.Errorf("no DisruptionTarget condition: %+v", st.Conditions)
				}
				for _, c := range st.ContainerStatuses {
					if tt.wantFinish && (c.State.Terminated == nil || c.State.Terminated.Reason != "ContainerStatusUnknown" || c.Ready) {
						t.Errorf("container %+v, want terminated ContainerStatusUnknown", c)
					}
				}
			}
			if finished != tt.wantFinish {
				t.Errorf("finished reported: %v, want %v", finished, tt.wantFinish)
			}
			if p := m.Pod("a"); p != nil && p.Phase != tt.wantPhase {
				t.Errorf("phase %s, want %s", p.Phase, tt.wantPhase)
			}
		})
	}
}

// TestKillDeadline checks upstream's killPodNow timeout: an evicted pod's
// kill is given one and a half grace periods (at least 10 s), and when
// something of it still runs then, an ExceededGracePeriod event says so.
func TestKillDeadline(t *testing.T) {
	evict := func(grace int64) EvEvict {
		return EvEvict{UID: "a", GracePeriod: grace, Reason: "Evicted", Message: "low on memory"}
	}
	for _, tc := range []struct {
		name      string
		before    []at
		ev        Event
		wantAfter time.Duration // of a CmdKillDeadline; 0: none
		wantEvent bool
	}{
		{"an eviction arms one and a half grace periods", aRuns, evict(30), 45 * time.Second, false},
		{"at least 10 s", aRuns, evict(0), 10 * time.Second, false},
		{"still running at the deadline: the event", then(aRuns, at{0, evict(0)}), EvKillDeadline{UID: "a"}, 0, true},
		{"stopped before: no event", then(aRuns, at{0, evict(0)}, at{0, EvWorkerDone{UID: "a"}}), EvKillDeadline{UID: "a"}, 0, false},
		{"a pod not evicted: no event", aRuns, EvKillDeadline{UID: "a"}, 0, false},
		{"an unknown pod: no event", ready, EvKillDeadline{UID: "x"}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := newTestMachine()
			for _, e := range tc.before {
				m.Step(e.ev, t0.Add(e.after))
			}
			var after time.Duration
			event := false
			for _, c := range m.Step(tc.ev, t0) {
				switch c := c.(type) {
				case CmdKillDeadline:
					after = c.After
				case CmdEvent:
					if c.Reason == events.ExceededGracePeriod {
						event = c.Message == "Container runtime did not kill the pod within specified grace period." && c.Type == v1.EventTypeWarning
					}
				}
			}
			if after != tc.wantAfter || event != tc.wantEvent {
				t.Errorf("deadline after %s, event %v; want %s, %v", after, event, tc.wantAfter, tc.wantEvent)
			}
		})
	}
}
