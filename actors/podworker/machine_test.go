package podworker

import (
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
	"github.com/actorlet/actorlet/messages"
)

func pod(image string, grace int64) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: &grace,
			Containers:                    []v1.Container{{Name: "c", Image: image}},
		},
	}
}

func i64(v int64) *int64 { return &v }

// observed is a settled pass's observation: sandbox s1 ready, container c1
// running, c2 exited (a previous instance kept for its logs).
var observed = map[string]string{"s1": "SANDBOX_READY", "c1": "CONTAINER_RUNNING", "c2": "CONTAINER_EXITED"}

func started(id string) messages.PodLifecycleEvent {
	return messages.PodLifecycleEvent{Type: messages.ContainerStarted, ID: id, State: "CONTAINER_RUNNING"}
}

func died(id string) messages.PodLifecycleEvent {
	return messages.PodLifecycleEvent{Type: messages.ContainerDied, ID: id, State: "CONTAINER_EXITED"}
}

func ready(id string) messages.PodLifecycleEvent {
	return messages.PodLifecycleEvent{Type: messages.SandboxChanged, ID: id, State: "SANDBOX_READY"}
}

func removed(id string) messages.PodLifecycleEvent {
	return messages.PodLifecycleEvent{Type: messages.ContainerRemoved, ID: id}
}

var (
	running = &v1.PodStatus{Phase: v1.PodRunning}
	podA    = pod("a", 30)
	podB    = pod("b", 30)
	errBoom = errors.New("errBoom")
	// podV has a volume; vols is it set up.
	podV = withVolume(podA)
	vols = messages.PodVolumes{"v": {Name: "v", Path: "/v"}}
)

// podC has a ResourceClaim, podC2 is a newer spec of it; devs are its
// container's CDI devices.
var (
	podC  = withClaim(podA)
	podC2 = withClaim(podB)
	devs  = map[string][]string{"c": {"example.com/gpu=0"}}
)

func withClaim(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	name := "claim"
	p.Spec.ResourceClaims = []v1.PodResourceClaim{{Name: "gpu", ResourceClaimName: &name}}
	p.Spec.Containers[0].Resources.Claims = []v1.ResourceClaim{{Name: "gpu"}}
	return p
}

// podP has a readiness probe; probedStatus shows its container c1 running.
var (
	podP         = withProbe(podA)
	probedStatus = &v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://c1"}}}
)

// readyStatus shows podP's container c1 running, started and ready;
// notReadyStatus is it after a readiness failure at tNow, readyAgainStatus
// after a success since.
var (
	tNow           = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	readyStatus    = probeStatus(true, nil)
	notReadyStatus = probeStatus(false, []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [c]", LastTransitionTime: metav1.NewTime(tNow)},
		{Type: v1.ContainersReady, Status: v1.ConditionFalse, Reason: "ContainersNotReady", Message: "containers with unready status: [c]", LastTransitionTime: metav1.NewTime(tNow)}})
	// failedStatus is a terminated pod's: its container killed.
	failedStatus = &v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://c1",
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Reason: "Error"}}}}}
	readyAgainStatus = probeStatus(true, []v1.PodCondition{
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(tNow)},
		{Type: v1.ContainersReady, Status: v1.ConditionTrue, LastTransitionTime: metav1.NewTime(tNow)}})
)

func probeStatus(ready bool, conds []v1.PodCondition) *v1.PodStatus {
	yes := true
	return &v1.PodStatus{Phase: v1.PodRunning, Conditions: conds, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://c1",
		Ready: ready, Started: &yes, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}}
}

func withProbe(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.Containers[0].ReadinessProbe = &v1.Probe{}
	return p
}

func withVolume(p *v1.Pod) *v1.Pod {
	p = p.DeepCopy()
	p.Spec.Volumes = []v1.Volume{{Name: "v"}}
	return p
}

// TestStep drives the machine through a sequence of events and checks the
// commands of the last event and the phase reached. Generation numbers count
// every operation and timer started, from 1.
func TestStep(t *testing.T) {
	for _, tc := range []struct {
		name   string
		events []Event
		want   []Command
		phase  Phase
	}{
		// Volumes.
		{"a pod with volumes not ready is only observed", []Event{EvUpdate{podV}},
			[]Command{CmdStartSync{Gen: 1, Pod: podV, WaitingForVolumes: true}}, Syncing},
		{"and observed again on runtime changes", []Event{EvUpdate{podV}, EvSynced{Gen: 1}, EvRuntimeChanged{}},
			[]Command{CmdStartSync{Gen: 2, Pod: podV, WaitingForVolumes: true}}, Syncing},
		{"volumes ready start the real sync", []Event{EvUpdate{podV}, EvSynced{Gen: 1}, EvVolumesReady{vols}},
			[]Command{CmdStartSync{Gen: 2, Pod: podV, Volumes: vols}}, Syncing},
		{"volumes ready during the observation sync after it", []Event{EvUpdate{podV}, EvVolumesReady{vols}, EvSynced{Gen: 1}},
			[]Command{CmdStartSync{Gen: 2, Pod: podV, Volumes: vols}}, Syncing},
		{"volumes ready before the pod", []Event{EvVolumesReady{vols}, EvUpdate{podV}},
			[]Command{CmdStartSync{Gen: 1, Pod: podV, Volumes: vols}}, Syncing},
		{"volumes ready again change nothing", []Event{EvUpdate{podV}, EvVolumesReady{vols}, EvSynced{Gen: 2}, EvVolumesReady{vols}},
			nil, Syncing},
		{"volumes ready for a terminating pod start nothing", []Event{EvUpdate{podV}, EvTerminate{}, EvVolumesReady{vols}},
			nil, Terminating},
		{"a pod without volumes never waits", []Event{EvUpdate{podA}},
			[]Command{CmdStartSync{Gen: 1, Pod: podA}}, Syncing},

		// ResourceClaims.
		{"a pod with claims asks for them and is only observed", []Event{EvUpdate{podC}},
			[]Command{CmdPrepareClaims{podC}, CmdStartSync{Gen: 1, Pod: podC, WaitingForVolumes: true}}, Syncing},
		{"prepared claims start the real sync with the devices", []Event{EvUpdate{podC}, EvSynced{Gen: 1}, EvClaimsPrepared{devs}},
			[]Command{CmdStartSync{Gen: 2, Pod: podC, Devices: devs}}, Syncing},
		{"a newer pod is asked for until the claims are prepared", []Event{EvUpdate{podC}, EvSynced{Gen: 1}, EvUpdate{podC2}},
			[]Command{CmdPrepareClaims{podC2}, CmdStartSync{Gen: 2, Pod: podC2, WaitingForVolumes: true}}, Syncing},
		{"but not once they are", []Event{EvUpdate{podC}, EvClaimsPrepared{devs}, EvSynced{Gen: 1}, EvUpdate{podC2}},
			nil, Syncing},
		{"the claims are unprepared once the kill ended", []Event{EvUpdate{podC}, EvSynced{Gen: 1}, EvTerminate{}, EvKilled{Gen: 2}},
			[]Command{CmdUnprepareClaims{podC}}, Terminating},
		{"and the worker is done once they are", []Event{EvUpdate{podC}, EvSynced{Gen: 1}, EvTerminate{}, EvKilled{Gen: 2}, EvClaimsUnprepared{}},
			[]Command{CmdFinish{}}, Terminated},

		// Syncing.
		{"first update starts a sync", []Event{EvUpdate{podA}},
			[]Command{CmdStartSync{Gen: 1, Pod: podA}}, Syncing},
		{"update during a sync coalesces", []Event{EvUpdate{podA}, EvUpdate{podB}},
			nil, Syncing},
		{"coalesced update syncs the latest spec after the pass", []Event{EvUpdate{podA}, EvUpdate{podB}, EvUpdate{podA}, EvSynced{Gen: 1}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"runtime change during a sync syncs again after it", []Event{EvUpdate{podA}, EvRuntimeChanged{}, EvSynced{Gen: 1}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"runtime change when idle syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvRuntimeChanged{}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"clean pass with nothing pending rests", []Event{EvUpdate{podA}, EvSynced{Gen: 1}},
			nil, Syncing},
		{"backoff asks for a retry", []Event{EvUpdate{podA}, EvSynced{Gen: 1, RetryAfter: 20 * time.Second}},
			[]Command{CmdScheduleRetry{2, 20 * time.Second}}, Syncing},
		{"an error without backoff retries later", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Err: errBoom}},
			[]Command{CmdScheduleRetry{2, SyncErrorRetry}}, Syncing},
		{"a due retry syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1, RetryAfter: time.Second}, EvRetry{Gen: 2}},
			[]Command{CmdStartSync{Gen: 3, Pod: podA}}, Syncing},
		{"a retry superseded by a sync is ignored", []Event{EvUpdate{podA}, EvSynced{Gen: 1, RetryAfter: time.Second}, EvRuntimeChanged{}, EvRetry{Gen: 2}},
			nil, Syncing},
		{"a retry during a sync marks it dirty", []Event{EvUpdate{podA}, EvSynced{Gen: 1, RetryAfter: time.Second}, EvRetry{Gen: 2}, EvRetry{Gen: 2}},
			nil, Syncing},
		{"a terminal pod is terminated with its grace period", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Terminal: true}},
			[]Command{CmdStartKill{2, 30}}, Terminating},
		{"a terminal pod's kill finishes it", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Terminal: true}, EvKilled{Gen: 2}},
			[]Command{CmdFinish{}}, Terminated},
		{"a stale sync outcome is ignored", []Event{EvUpdate{podA}, EvSynced{Gen: 7}},
			nil, Syncing},
		{"the current pass's status is reported", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Status: running}},
			[]Command{CmdReportStatus{running}}, Syncing},
		{"the status comes after the pass's follow-up", []Event{EvUpdate{podA}, EvUpdate{podB}, EvSynced{Gen: 1, Status: running}},
			[]Command{CmdStartSync{Gen: 2, Pod: podB}, CmdReportStatus{running}}, Syncing},
		{"a stale pass's status is dropped", []Event{EvUpdate{podA}, EvSynced{Gen: 7, Status: running}},
			nil, Syncing},
		{"a second outcome of one pass is dropped", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Status: running}, EvSynced{Gen: 1, Status: running}},
			nil, Syncing},
		{"the status of a pass a termination cancelled is reported", []Event{EvUpdate{podA}, EvTerminate{Grace: i64(5)}, EvSynced{Gen: 1, Err: errBoom, Status: running}},
			[]Command{CmdStartKill{2, 5}, CmdReportStatus{running}}, Terminating},
		{"an orphan with no pod does not sync", []Event{EvRuntimeChanged{}},
			nil, Syncing},

		// Runtime changes judged against the last settled pass's
		// observation.
		{"a change the settled pass observed needs no sync", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1"), ready("s1")}}},
			nil, Syncing},
		{"a container that died since syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{died("c1")}}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"a container the pass never saw syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c9")}}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"one unexplained change among explained ones syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1"), died("c2"), started("c3")}}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"the removal of a container the pass saw syncs", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{removed("c1")}}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"the removal the pass made needs no sync", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{removed("c0")}}},
			nil, Syncing},
		{"an unsettled pass explains nothing", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"changes during a pass that it observed need no second pass", []Event{EvUpdate{podA}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}, EvSynced{Gen: 1, Observed: observed}},
			nil, Syncing},
		{"changes during a pass that it did not observe sync again", []Event{EvUpdate{podA}, EvRuntimeChanged{[]messages.PodLifecycleEvent{died("c1")}}, EvSynced{Gen: 1, Observed: observed}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"changes during an unsettled pass sync again", []Event{EvUpdate{podA}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}, EvSynced{Gen: 1}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA}}, Syncing},
		{"changes before a pass are not judged by the next one", []Event{EvUpdate{podA}, EvRuntimeChanged{[]messages.PodLifecycleEvent{died("c1")}}, EvSynced{Gen: 1, Observed: observed}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}},
			nil, Syncing},
		{"a later unsettled pass forgets the observation", []Event{EvUpdate{podA}, EvSynced{Gen: 1, Observed: observed}, EvUpdate{podB}, EvSynced{Gen: 2}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}},
			[]Command{CmdStartSync{Gen: 3, Pod: podB}}, Syncing},

		// Probes.
		{"a probe result syncs the pod with it", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvProbeResult{ContainerID: "c1", Kind: results.Liveness, Result: results.Failure}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA, Probes: results.Pod{"c1": {Liveness: results.Failure}}}}, Syncing},
		{"a probe result during a sync syncs after it", []Event{EvUpdate{podA}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Success}, EvSynced{Gen: 1}},
			[]Command{CmdStartSync{Gen: 2, Pod: podA, Probes: results.Pod{"c1": {Readiness: results.Success}}}}, Syncing},
		{"an unchanged probe result does nothing", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvProbeResult{ContainerID: "c1", Kind: results.Startup, Result: results.Unknown}},
			nil, Syncing},
		{"probe results of a terminating pod do nothing", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{}, EvProbeResult{ContainerID: "c1", Kind: results.Liveness, Result: results.Failure}},
			nil, Terminating},
		{"a probed pod's status sets the prober's targets", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: probedStatus}},
			[]Command{CmdReportStatus{probedStatus}, CmdSetProbeTargets{Pod: podP, Status: probedStatus}}, Syncing},
		{"results of instances the status no longer shows are dropped", []Event{EvUpdate{podP}, EvSynced{Gen: 1}, EvProbeResult{ContainerID: "gone", Kind: results.Readiness, Result: results.Success}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Success}, EvSynced{Gen: 2, Status: probedStatus}},
			[]Command{CmdStartSync{Gen: 3, Pod: podP, Probes: results.Pod{"c1": {Readiness: results.Success}}}, CmdReportStatus{probedStatus}, CmdSetProbeTargets{Pod: podP, Status: probedStatus}}, Syncing},
		{"a probed pod's termination before any status stops its probes", []Event{EvUpdate{podP}, EvSynced{Gen: 1}, EvTerminate{}},
			[]Command{CmdSetProbeTargets{}, CmdStartKill{2, 30}}, Terminating},

		// Probes of a terminating pod: readiness goes on until the
		// containers stop, and shows in the status without a sync;
		// liveness and startup neither run nor restart anything.
		{"a probed pod's termination keeps its readiness probes", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}},
			[]Command{CmdSetProbeTargets{Pod: podP, Status: readyStatus, Terminating: true}, CmdStartKill{2, 30}}, Terminating},
		{"a readiness failure of a terminating pod shows in its status, without a sync", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Failure}},
			[]Command{CmdReportStatus{notReadyStatus}}, Terminating},
		{"and a readiness success after it shows again", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Failure}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Success}},
			[]Command{CmdReportStatus{readyAgainStatus}}, Terminating},
		{"a liveness failure of a terminating pod restarts nothing", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvProbeResult{ContainerID: "c1", Kind: results.Liveness, Result: results.Failure}},
			nil, Terminating},
		{"a startup failure of a terminating pod restarts nothing", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvProbeResult{ContainerID: "c1", Kind: results.Startup, Result: results.Failure}},
			nil, Terminating},
		{"the containers' stop ends the probes", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvStopped{Gen: 2}},
			[]Command{CmdSetProbeTargets{}, CmdReportStopped{}}, Terminating},
		{"a readiness result after the containers stopped changes nothing", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvStopped{Gen: 2}, EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Failure}},
			nil, Terminating},
		{"a pass a termination cancelled is reported with the readiness that came since", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvRuntimeChanged{}, EvTerminate{},
			EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Failure}, EvSynced{Gen: 2, Status: readyStatus}},
			[]Command{CmdStartKill{3, 30}, CmdReportStatus{notReadyStatus}, CmdSetProbeTargets{Pod: podP, Status: notReadyStatus, Terminating: true}}, Terminating},

		// Termination.
		{"terminate when idle kills with the pod's grace", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{}},
			[]Command{CmdStartKill{2, 30}}, Terminating},
		{"terminate with a grace period uses it", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(5)}},
			[]Command{CmdStartKill{2, 5}}, Terminating},
		{"negative grace is zero", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(-3)}},
			[]Command{CmdStartKill{2, 0}}, Terminating},
		{"an ended pod is stopped with its own grace, never synced", []Event{EvTerminate{Pod: pod("a", 7)}},
			[]Command{CmdStartKill{1, 7}}, Terminating},
		{"an ended pod given while syncing cancels the sync", []Event{EvUpdate{podA}, EvTerminate{Pod: podB}},
			[]Command{CmdCancelSync{}}, Terminating},
		{"an ended pod's kill finishes", []Event{EvTerminate{Pod: podA}, EvKilled{Gen: 1}},
			[]Command{CmdFinish{}}, Terminated},
		{"an ended pod ignores a later update", []Event{EvTerminate{Pod: podA}, EvUpdate{podB}},
			nil, Terminating},
		{"an orphan terminates with the default grace", []Event{EvTerminate{}},
			[]Command{CmdStartKill{1, DefaultGracePeriod}}, Terminating},
		{"terminate cancels the sync in flight", []Event{EvUpdate{podA}, EvTerminate{Grace: i64(5)}},
			[]Command{CmdCancelSync{}}, Terminating},
		{"the kill starts when the cancelled sync returns", []Event{EvUpdate{podA}, EvTerminate{Grace: i64(5)}, EvSynced{Gen: 1, Err: errBoom}},
			[]Command{CmdStartKill{2, 5}}, Terminating},
		{"a shorter grace during a kill restarts it shorter", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(30)}, EvTerminate{Grace: i64(2)}},
			[]Command{CmdCancelKill{}, CmdStartKill{3, 2}}, Terminating},
		{"a longer grace is ignored", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(5)}, EvTerminate{Grace: i64(60)}},
			nil, Terminating},
		{"an equal grace is ignored", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(5)}, EvTerminate{Grace: i64(5)}},
			nil, Terminating},
		{"a shorter grace while a cancelled sync drains waits for it", []Event{EvUpdate{podA}, EvTerminate{Grace: i64(30)}, EvTerminate{Grace: i64(1)}, EvSynced{Gen: 1}},
			[]Command{CmdStartKill{2, 1}}, Terminating},
		{"the cancelled kill's outcome is ignored, its failure unreported", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{Grace: i64(30)}, EvTerminate{Grace: i64(2)}, EvKilled{Gen: 2, Err: errBoom}},
			nil, Terminating},
		{"updates while terminating do not sync", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{}, EvUpdate{podB}},
			nil, Terminating},
		{"runtime changes while terminating do not sync", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{}, EvRuntimeChanged{}},
			nil, Terminating},
		{"a pending retry is dropped by termination", []Event{EvUpdate{podA}, EvSynced{Gen: 1, RetryAfter: time.Minute}, EvTerminate{Grace: i64(1)}, EvRetry{Gen: 2}},
			nil, Terminating},
		{"a failed kill is retried", []Event{EvTerminate{Grace: i64(1)}, EvKilled{Gen: 1, Err: errBoom}},
			[]Command{CmdKillFailed{errBoom}, CmdScheduleRetry{2, KillErrorRetry}}, Terminating},
		{"the kill retry kills again with the same grace", []Event{EvTerminate{Grace: i64(1)}, EvKilled{Gen: 1, Err: errBoom}, EvRetry{Gen: 2}},
			[]Command{CmdStartKill{3, 1}}, Terminating},
		{"the kill's stop is reported", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1}},
			[]Command{CmdReportStopped{}}, Terminating},
		{"the kill's stop reports the terminal status first", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1, Status: failedStatus}},
			[]Command{CmdReportStatus{failedStatus}, CmdReportStopped{}}, Terminating},
		{"and before the probes end", []Event{EvUpdate{podP}, EvSynced{Gen: 1, Status: readyStatus}, EvTerminate{}, EvStopped{Gen: 2, Status: failedStatus}},
			[]Command{CmdReportStatus{failedStatus}, CmdSetProbeTargets{}, CmdReportStopped{}}, Terminating},
		{"a stale stop is ignored", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 7}},
			nil, Terminating},
		{"a stop is reported once", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1}, EvStopped{Gen: 1}},
			nil, Terminating},
		{"a shorter grace after the stop leaves the removal alone", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1}, EvTerminate{Grace: i64(0)}},
			nil, Terminating},
		{"the stopped kill still finishes", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1}, EvTerminate{Grace: i64(0)}, EvKilled{Gen: 1}},
			[]Command{CmdFinish{}}, Terminated},
		{"a failed removal after the stop is retried", []Event{EvTerminate{Grace: i64(1)}, EvStopped{Gen: 1}, EvKilled{Gen: 1, Err: errBoom}},
			[]Command{CmdKillFailed{errBoom}, CmdScheduleRetry{2, KillErrorRetry}}, Terminating},
		{"a successful kill finishes", []Event{EvUpdate{podA}, EvSynced{Gen: 1}, EvTerminate{}, EvKilled{Gen: 2}},
			[]Command{CmdFinish{}}, Terminated},

		// Terminated is final.
		{"terminated ignores updates", []Event{EvTerminate{}, EvKilled{Gen: 1}, EvUpdate{podA}},
			nil, Terminated},
		{"terminated ignores terminations", []Event{EvTerminate{}, EvKilled{Gen: 1}, EvTerminate{Grace: i64(0)}},
			nil, Terminated},
		{"terminated ignores runtime changes", []Event{EvTerminate{}, EvKilled{Gen: 1}, EvRuntimeChanged{}},
			nil, Terminated},
		{"terminated ignores retries", []Event{EvTerminate{}, EvKilled{Gen: 1}, EvRetry{Gen: 1}},
			nil, Terminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s State
			var cmds []Command
			for _, ev := range tc.events {
				cmds = s.Step(ev, tNow)
			}
			if !reflect.DeepEqual(cmds, tc.want) {
				t.Errorf("commands = %#v, want %#v", cmds, tc.want)
			}
			if s.Phase != tc.phase {
				t.Errorf("phase = %v, want %v", s.Phase, tc.phase)
			}
		})
	}
}

// TestAtMostOneOperationInFlight checks, over every sequence of up to four
// events drawn from a representative set, that the machine never starts an
// operation while another is in flight, never leaves the terminated phase,
// and never syncs a pod once it terminates (so no probe's verdict restarts
// a container of a terminating pod).
func TestAtMostOneOperationInFlight(t *testing.T) {
	events := []Event{
		EvUpdate{podA}, EvUpdate{podB}, EvRuntimeChanged{}, EvRuntimeChanged{[]messages.PodLifecycleEvent{started("c1")}}, EvTerminate{}, EvTerminate{Grace: i64(1)},
		EvSynced{Gen: 1}, EvSynced{Gen: 1, Observed: observed, Status: running}, EvSynced{Gen: 2, RetryAfter: time.Second}, EvSynced{Gen: 1, Err: errBoom}, EvSynced{Gen: 1, Terminal: true},
		EvStopped{Gen: 1}, EvStopped{Gen: 2},
		EvKilled{Gen: 1}, EvKilled{Gen: 2}, EvKilled{Gen: 3, Err: errBoom}, EvRetry{Gen: 2}, EvRetry{Gen: 3},
		EvProbeResult{ContainerID: "c1", Kind: results.Liveness, Result: results.Failure},
		EvProbeResult{ContainerID: "c1", Kind: results.Readiness, Result: results.Failure},
	}
	var walk func(s State, depth int, path []Event)
	walk = func(s State, depth int, path []Event) {
		if depth == 4 {
			return
		}
		for _, ev := range events {
			before := s
			next := s
			cmds := next.Step(ev, tNow)
			starts, cancels := 0, 0
			for _, c := range cmds {
				switch c.(type) {
				case CmdStartSync, CmdStartKill:
					starts++
				case CmdCancelKill:
					cancels++
				}
			}
			p := append(append([]Event(nil), path...), ev)
			if starts > 1 || (starts == 1 && before.inFlight != opNone && cancels == 0 && !completes(before, ev)) {
				t.Fatalf("after %#v: started an operation with one in flight: %#v", p, cmds)
			}
			if before.Phase != Syncing && starts > 0 && slices.ContainsFunc(cmds, func(c Command) bool { _, ok := c.(CmdStartSync); return ok }) {
				t.Fatalf("after %#v: a terminating pod synced (a probe's verdict could restart a container): %#v", p, cmds)
			}
			if before.Phase > next.Phase {
				t.Fatalf("after %#v: phase went back from %v to %v", p, before.Phase, next.Phase)
			}
			walk(next, depth+1, p)
		}
	}
	walk(State{}, 0, nil)
}

// completes reports whether ev is the outcome of the operation in flight.
func completes(s State, ev Event) bool {
	switch e := ev.(type) {
	case EvSynced:
		return s.inFlight == opSync && e.Gen == s.gen
	case EvKilled:
		return s.inFlight == opKill && e.Gen == s.gen
	}
	return false
}

func TestPhaseString(t *testing.T) {
	for p, want := range map[Phase]string{Syncing: "syncing", Terminating: "terminating", Terminated: "terminated", Phase(9): "Phase(9)"} {
		if p.String() != want {
			t.Errorf("%d.String() = %q, want %q", int(p), p.String(), want)
		}
	}
}
