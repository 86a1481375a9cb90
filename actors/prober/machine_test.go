package prober

import (
	"errors"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func probe(delay, period, success, failure int32) *v1.Probe {
	return &v1.Probe{InitialDelaySeconds: delay, PeriodSeconds: period, TimeoutSeconds: 1,
		SuccessThreshold: success, FailureThreshold: failure,
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
}

// podWith is a pod whose container c has the probes given (nil: none).
func podWith(live, ready, startup *v1.Probe) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "c", LivenessProbe: live, ReadinessProbe: ready, StartupProbe: startup}}},
	}
}

// runningAs is the status of container c running as instance id since
// started.
func runningAs(id string, started time.Time) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://" + id,
		State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(started)}}}}}
}

func startedStatus(s v1.PodStatus) v1.PodStatus {
	yes := true
	s.ContainerStatuses = append([]v1.ContainerStatus(nil), s.ContainerStatuses...)
	s.ContainerStatuses[0].Started = &yes
	return s
}

func exited(id string) v1.PodStatus {
	return v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{{Name: "c", ContainerID: "containerd://" + id,
		State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1}}}}}
}

var (
	live  = Key{Container: "c", Kind: results.Liveness}
	ready = Key{Container: "c", Kind: results.Readiness}
	start = Key{Container: "c", Kind: results.Startup}

	every1s  = probe(0, 1, 1, 1)
	every1s3 = probe(0, 1, 1, 3)
	// errProbe is a prober error: the result is thrown away.
	errProbe = errors.New("exec: no such container")
)

// timed is an event the actor handles at now.
type timed struct {
	Event
	now time.Time
}

func targets(pod *v1.Pod, status v1.PodStatus, now time.Time) timed {
	return timed{EvTargets{Pod: pod, Status: status, Rand: func() float64 { return 0.5 }}, now}
}

// terminating is the targets of a pod that is being stopped.
func terminating(pod *v1.Pod, status v1.PodStatus, now time.Time) timed {
	e := targets(pod, status, now)
	ev := e.Event.(EvTargets)
	ev.Terminating = true
	e.Event = ev
	return e
}

func tick(k Key, gen uint64, now time.Time) timed { return timed{EvTick{Key: k, Gen: gen}, now} }

func result(k Key, gen uint64, r results.Result, now time.Time) timed {
	return timed{EvResult{Key: k, Gen: gen, Result: r}, now}
}

func report(k Key, id string, r results.Result) CmdReport {
	return CmdReport{ContainerID: id, ContainerName: k.Container, Kind: k.Kind, Result: r}
}

// TestStep runs each case's events through Step from a prober started long
// before (no jitter), and checks the commands of the last event.
func TestStep(t *testing.T) {
	podR := podWith(nil, every1s, nil)
	podL := podWith(every1s3, nil, nil)
	podSL := podWith(every1s, every1s, probe(0, 1, 1, 2))
	runA := runningAs("a", t0)
	run := func(k Key, gen uint64, pod *v1.Pod, status v1.PodStatus, id string) CmdRun {
		c := &pod.Spec.Containers[0]
		return CmdRun{Key: k, Gen: gen, Pod: pod, Status: status, Container: c, ContainerID: id}
	}
	deleting := podWith(every1s, every1s, nil)
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	sidecar := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{
				{Name: "init", ReadinessProbe: every1s},
				{Name: "side", RestartPolicy: func() *v1.ContainerRestartPolicy { p := v1.ContainerRestartPolicyAlways; return &p }(), ReadinessProbe: every1s},
			},
			Containers: []v1.Container{{Name: "c"}},
		},
	}
	sidecarStatus := v1.PodStatus{Phase: v1.PodRunning, InitContainerStatuses: []v1.ContainerStatus{
		{Name: "init", ContainerID: "containerd://i", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
		{Name: "side", ContainerID: "containerd://s", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: metav1.NewTime(t0)}}},
	}}

	tests := []struct {
		name      string
		kubelet   time.Time // when the node agent started; zero: long ago
		restarted bool
		events    []timed
		want      []Command
	}{
		{
			name:   "a running container's probe runs at once",
			events: []timed{targets(podR, runA, t0)},
			want:   []Command{CmdSchedule{Key: ready, Gen: 1, After: 0}},
		},
		{
			name:   "no probe before the initial delay, counted from the container's start",
			events: []timed{targets(podWith(nil, probe(5, 1, 1, 1), nil), runA, at(2*time.Second))},
			want:   []Command{CmdSchedule{Key: ready, Gen: 1, After: 3 * time.Second}},
		},
		{
			name:    "soon after the node agent started, a random part of the period first",
			kubelet: t0,
			events:  []timed{targets(podWith(nil, probe(0, 10, 1, 1), nil), runA, at(time.Second))},
			want:    []Command{CmdSchedule{Key: ready, Gen: 1, After: 5 * time.Second}},
		},
		{
			name:   "the timer starts a run against the instance",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0)},
			want:   []Command{run(ready, 2, podR, runA, "a")},
		},
		{
			name:   "a stale timer does nothing",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0), tick(ready, 1, t0)},
			want:   nil,
		},
		{
			name: "readiness succeeding is reported; the next run is a period after the last started",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Success, at(300*time.Millisecond))},
			want: []Command{report(ready, "a", results.Success), CmdSchedule{Key: ready, Gen: 3, After: 700 * time.Millisecond}},
		},
		{
			name: "a run longer than the period is followed at once by the next",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Failure, at(3*time.Second))},
			want: []Command{CmdSchedule{Key: ready, Gen: 3, After: 0}},
		},
		{
			name: "readiness failing before it ever succeeded changes nothing the pod-worker sees",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Failure, t0)},
			want: []Command{CmdSchedule{Key: ready, Gen: 3, After: time.Second}},
		},
		{
			name: "readiness failing after it succeeded is reported",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Success, t0), tick(ready, 3, at(time.Second)),
				result(ready, 4, results.Failure, at(time.Second))},
			want: []Command{report(ready, "a", results.Failure), CmdSchedule{Key: ready, Gen: 5, After: time.Second}},
		},
		{
			name:      "a restarted prober reports its first verdict, whatever it is",
			restarted: true,
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Failure, t0)},
			want: []Command{report(ready, "a", results.Failure), CmdSchedule{Key: ready, Gen: 3, After: time.Second}},
		},
		{
			name: "successThreshold: success reported on the second success in a row",
			events: []timed{targets(podWith(nil, probe(0, 1, 2, 1), nil), runA, t0), tick(ready, 1, t0),
				result(ready, 2, results.Success, t0), tick(ready, 3, at(time.Second)),
				result(ready, 4, results.Success, at(time.Second))},
			want: []Command{report(ready, "a", results.Success), CmdSchedule{Key: ready, Gen: 5, After: time.Second}},
		},
		{
			name: "liveness succeeding is not worth a message",
			events: []timed{targets(podL, runA, t0), tick(live, 1, t0),
				result(live, 2, results.Success, t0)},
			want: []Command{CmdSchedule{Key: live, Gen: 3, After: time.Second}},
		},
		{
			name: "liveness below failureThreshold: nothing yet",
			events: []timed{targets(podL, runA, t0), tick(live, 1, t0),
				result(live, 2, results.Failure, t0), tick(live, 3, at(time.Second)),
				result(live, 4, results.Failure, at(time.Second))},
			want: []Command{CmdSchedule{Key: live, Gen: 5, After: time.Second}},
		},
		{
			name: "a success breaks the run of failures",
			events: []timed{targets(podL, runA, t0), tick(live, 1, t0),
				result(live, 2, results.Failure, t0), tick(live, 3, at(time.Second)),
				result(live, 4, results.Failure, at(time.Second)), tick(live, 5, at(2*time.Second)),
				result(live, 6, results.Success, at(2*time.Second)), tick(live, 7, at(3*time.Second)),
				result(live, 8, results.Failure, at(3*time.Second))},
			want: []Command{CmdSchedule{Key: live, Gen: 9, After: time.Second}},
		},
		{
			name: "liveness failing failureThreshold times is reported, and the probe holds",
			events: []timed{targets(podL, runA, t0), tick(live, 1, t0),
				result(live, 2, results.Failure, t0), tick(live, 3, at(time.Second)),
				result(live, 4, results.Failure, at(time.Second)), tick(live, 5, at(2*time.Second)),
				result(live, 6, results.Failure, at(2*time.Second))},
			want: []Command{report(live, "a", results.Failure)},
		},
		{
			name: "a new instance starts the held probe over",
			events: []timed{targets(podWith(every1s, nil, nil), runA, t0), tick(live, 1, t0),
				result(live, 2, results.Failure, t0),
				targets(podWith(every1s, nil, nil), runningAs("b", at(5*time.Second)), at(5*time.Second))},
			want: []Command{CmdSchedule{Key: live, Gen: 3, After: 0}},
		},
		{
			name: "a run of the previous instance is dropped",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				targets(podR, runningAs("b", at(time.Second)), at(time.Second)),
				result(ready, 2, results.Success, at(time.Second))},
			want: nil,
		},
		{
			name: "a prober error is thrown away; the probe goes on",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0),
				timed{EvResult{Key: ready, Gen: 2, Err: errProbe}, t0}},
			want: []Command{CmdSchedule{Key: ready, Gen: 3, After: time.Second}},
		},
		{
			name:   "a container that stopped is not probed",
			events: []timed{targets(podR, runA, t0), targets(podR, exited("a"), at(time.Second))},
			want:   []Command{CmdCancel{Key: ready}},
		},
		{
			name:   "a container not started yet is not probed",
			events: []timed{targets(podR, v1.PodStatus{Phase: v1.PodPending}, t0)},
			want:   nil,
		},
		{
			name:   "no pod: every probe stops",
			events: []timed{targets(podL, runA, t0), targets(nil, v1.PodStatus{}, t0)},
			want:   []Command{CmdCancel{Key: live}},
		},
		{
			name:   "a probe gone from the spec stops",
			events: []timed{targets(podL, runA, t0), targets(podWith(nil, nil, nil), runA, t0)},
			want:   []Command{CmdCancel{Key: live}},
		},
		{
			name: "a pod that ended is probed no more",
			events: []timed{targets(podL, runA, t0),
				targets(podL, func() v1.PodStatus { s := runningAs("a", t0); s.Phase = v1.PodFailed; return s }(), t0)},
			want: []Command{CmdCancel{Key: live}},
		},
		{
			name:   "a pod being deleted keeps its readiness probe only",
			events: []timed{targets(deleting, runA, t0)},
			want:   []Command{CmdSchedule{Key: ready, Gen: 1, After: 0}},
		},
		{
			name:   "termination stops the liveness and startup probes",
			events: []timed{targets(podSL, runA, t0), terminating(podSL, runA, at(time.Second))},
			want:   []Command{CmdCancel{Key: live}, CmdCancel{Key: start}},
		},
		{
			name: "the readiness probe keeps its schedule while the pod terminates",
			events: []timed{targets(podSL, startedStatus(runA), t0), tick(ready, 1, t0),
				terminating(podSL, startedStatus(runA), at(100*time.Millisecond)),
				result(ready, 3, results.Success, at(200*time.Millisecond))},
			want: []Command{report(ready, "a", results.Success), CmdSchedule{Key: ready, Gen: 4, After: 800 * time.Millisecond}},
		},
		{
			name: "a readiness failure during termination is reported",
			events: []timed{targets(podR, runA, t0), tick(ready, 1, t0), result(ready, 2, results.Success, t0),
				terminating(podR, runA, at(100*time.Millisecond)), tick(ready, 3, at(time.Second)),
				result(ready, 4, results.Failure, at(time.Second))},
			want: []Command{report(ready, "a", results.Failure), CmdSchedule{Key: ready, Gen: 5, After: time.Second}},
		},
		{
			name: "a liveness run under way as the pod terminates is dropped",
			events: []timed{targets(podL, runA, t0), tick(live, 1, t0), terminating(podL, runA, at(100*time.Millisecond)),
				result(live, 2, results.Failure, at(200*time.Millisecond))},
			want: nil,
		},
		{
			name: "a startup probe that succeeded still lets readiness run while the pod terminates",
			events: []timed{targets(podSL, runA, t0), tick(start, 1, t0), result(start, 2, results.Success, t0),
				terminating(podSL, runA, at(100*time.Millisecond)), tick(ready, 3, at(100*time.Millisecond))},
			want: []Command{run(ready, 5, podSL, runA, "a")},
		},
		{
			name:   "a container the status shows started keeps its readiness probe only",
			events: []timed{targets(podSL, startedStatus(runA), t0), terminating(podSL, startedStatus(runA), at(time.Second))},
			want:   []Command{CmdCancel{Key: live}},
		},
		{
			name:   "a terminating pod's container that stopped is probed no more",
			events: []timed{targets(podR, runA, t0), terminating(podR, runA, t0), terminating(podR, exited("a"), at(time.Second))},
			want:   []Command{CmdCancel{Key: ready}},
		},
		{
			name:   "a startup probe holds liveness and readiness back",
			events: []timed{targets(podSL, runA, t0)},
			want:   []Command{CmdSchedule{Key: start, Gen: 1, After: 0}},
		},
		{
			name:   "held probes do not run on a stale timer",
			events: []timed{targets(podSL, runA, t0), tick(ready, 1, t0)},
			want:   nil,
		},
		{
			name: "startup succeeding is reported, stops, and lets the others run at once",
			events: []timed{targets(podSL, runA, t0), tick(start, 1, t0),
				result(start, 2, results.Success, at(2*time.Second))},
			want: []Command{report(start, "a", results.Success),
				CmdSchedule{Key: ready, Gen: 3, After: 0}, CmdSchedule{Key: live, Gen: 4, After: 0}},
		},
		{
			name: "startup below failureThreshold goes on",
			events: []timed{targets(podSL, runA, t0), tick(start, 1, t0),
				result(start, 2, results.Failure, t0)},
			want: []Command{CmdSchedule{Key: start, Gen: 3, After: time.Second}},
		},
		{
			name: "startup failing is reported, and the probe holds",
			events: []timed{targets(podSL, runA, t0), tick(start, 1, t0),
				result(start, 2, results.Failure, t0), tick(start, 3, at(time.Second)),
				result(start, 4, results.Failure, at(time.Second))},
			want: []Command{report(start, "a", results.Failure)},
		},
		{
			name:   "a container the status shows started needs no startup probe",
			events: []timed{targets(podSL, startedStatus(runA), t0)},
			want:   []Command{CmdSchedule{Key: ready, Gen: 1, After: 0}, CmdSchedule{Key: live, Gen: 2, After: 0}},
		},
		{
			name:   "the status showing started ends a startup probe under way",
			events: []timed{targets(podSL, runA, t0), targets(podSL, startedStatus(runA), at(time.Second))},
			want: []Command{CmdCancel{Key: start},
				CmdSchedule{Key: ready, Gen: 2, After: 0}, CmdSchedule{Key: live, Gen: 3, After: 0}},
		},
		{
			name:   "sidecars are probed, other init containers not",
			events: []timed{targets(sidecar, sidecarStatus, t0)},
			want:   []Command{CmdSchedule{Key: Key{Container: "side", Kind: results.Readiness}, Gen: 1, After: 0}},
		},
		{
			name:   "unset fields take the API's defaults: a period of 10 s",
			events: []timed{targets(podWith(nil, &v1.Probe{}, nil), runA, t0), tick(ready, 1, t0), result(ready, 2, results.Failure, t0)},
			want:   []Command{CmdSchedule{Key: ready, Gen: 3, After: 10 * time.Second}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := State{KubeletStart: tt.kubelet, Restarted: tt.restarted}
			if tt.kubelet.IsZero() {
				s.KubeletStart = t0.Add(-time.Hour)
			}
			var cmds []Command
			for _, ev := range tt.events {
				cmds = s.Step(ev.Event, ev.now)
			}
			if !reflect.DeepEqual(cmds, tt.want) {
				t.Errorf("commands:\n got %#v\nwant %#v", cmds, tt.want)
			}
		})
	}
}

// TestStepLeavesTheStateItWasGiven checks that a state is a value: a step
// does not change the workers of the state it started from.
func TestStepLeavesTheStateItWasGiven(t *testing.T) {
	var s State
	s.Step(targets(podWith(nil, every1s, nil), runningAs("a", t0), t0).Event, t0)
	before := s.workers[ready]
	next := s
	next.Step(tick(ready, 1, t0).Event, t0)
	if s.workers[ready] != before {
		t.Errorf("worker changed in place: %+v, was %+v", s.workers[ready], before)
	}
}

func TestEffect(t *testing.T) {
	tests := []struct {
		kind results.Kind
		a, b results.Result
		same bool
	}{
		{results.Liveness, results.Unknown, results.Success, true},
		{results.Liveness, results.Unknown, results.Failure, false},
		{results.Readiness, results.Unknown, results.Failure, true},
		{results.Readiness, results.Failure, results.Success, false},
		{results.Startup, results.Unknown, results.Failure, false},
		{results.Startup, results.Unknown, results.Success, false},
	}
	for _, tt := range tests {
		if got := effect(tt.kind, tt.a) == effect(tt.kind, tt.b); got != tt.same {
			t.Errorf("%s: %s and %s the same to the pod-worker: %v, want %v", tt.kind, tt.a, tt.b, got, tt.same)
		}
	}
}
