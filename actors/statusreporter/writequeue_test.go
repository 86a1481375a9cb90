package statusreporter

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
)

// queueEvent is one call on a writeQueue; it returns the writes started as
// "uid@version" and the retry asked for (0: none).
type queueEvent func(t *testing.T, q *writeQueue) (started []string, retryIn time.Duration)

// step steps q at no particular time: its decisions need none.
func step(q *writeQueue, ev writeEvent) []writeCommand { return q.Step(ev, time.Time{}) }

// writes are the writes among cmds, in order.
func writes(cmds []writeCommand) []podWork {
	var works []podWork
	for _, c := range cmds {
		if w, ok := c.(podWork); ok {
			works = append(works, w)
		}
	}
	return works
}

func startedWrites(cmds []writeCommand) []string {
	var s []string
	for _, w := range writes(cmds) {
		s = append(s, fmt.Sprintf("%s@%d", w.uid, w.version))
	}
	return s
}

// testPod is an API pod, or a static pod when its uid starts with "static".
func testPod(uid string, deleting bool) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: "ns", Name: uid, ResourceVersion: "7"}}
	if strings.HasPrefix(uid, "static") {
		p.Annotations = map[string]string{manifest.ConfigSourceAnnotation: manifest.SourceFile}
		p.ResourceVersion = ""
	}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

// status is a pod status: "pending", "ready" or "failed", with an optional
// ":message" to tell two statuses of the same kind apart; "" is the empty
// status.
func status(s string) v1.PodStatus {
	if s == "" {
		return v1.PodStatus{}
	}
	kind, msg, _ := strings.Cut(s, ":")
	st := v1.PodStatus{Phase: v1.PodPending, Message: msg}
	switch kind {
	case "ready":
		st.Phase = v1.PodRunning
		st.Conditions = []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue}}
	case "failed":
		st.Phase = v1.PodFailed
	}
	return st
}

func report(uid, st string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evReport{testPod(uid, false), status(st)})), 0
	}
}

func reportDeleting(uid, st string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evReport{testPod(uid, true), status(st)})), 0
	}
}

func reconcile(uid, st string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evReconcile{testPod(uid, false), status(st)})), 0
	}
}

func finish(uid string, removed bool) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evFinish{testPod(uid, false), removed})), 0
	}
}

// synced feeds back the outcome of uid's write of version: "ok", "done" or
// "fail".
func synced(uid string, version uint64, outcome string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		m := &messages.PodStatusSynced{UID: types.UID(uid), Version: version}
		switch outcome {
		case "done":
			m.Done = true
		case "fail":
			m.Err = errors.New("API server unreachable")
		}
		cmds := step(q, evSynced{m})
		for _, c := range cmds {
			if r, ok := c.(writeRetry); ok {
				return startedWrites(cmds), r.in
			}
		}
		return startedWrites(cmds), 0
	}
}

func retryTimer(uid string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evRetry{types.UID(uid)})), 0
	}
}

func checkMirror(uid string) queueEvent {
	return func(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
		return startedWrites(step(q, evCheckMirror{types.UID(uid)})), 0
	}
}

func checkMirrors(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
	return startedWrites(step(q, evCheckMirrors{})), 0
}

func registered(_ *testing.T, q *writeQueue) ([]string, time.Duration) {
	return startedWrites(step(q, evRegistered{})), 0
}

// tracked checks how many pods the queue holds.
func tracked(n int) queueEvent {
	return func(t *testing.T, q *writeQueue) ([]string, time.Duration) {
		if len(q.pods) != n {
			t.Errorf("queue holds %d pods, want %d", len(q.pods), n)
		}
		return nil, 0
	}
}

type queueStep struct {
	ev    queueEvent
	start []string      // writes started, in order
	retry time.Duration // retry asked for, 0: none
}

// failing is a pod reported once whose write then fails again and again,
// each failure asking for the next of retries before the timer writes it
// again.
func failing(uid string, retries ...time.Duration) []queueStep {
	steps := []queueStep{{ev: report(uid, "pending"), start: []string{uid + "@1"}}}
	for i, d := range retries {
		if i > 0 {
			steps = append(steps, queueStep{ev: retryTimer(uid), start: []string{uid + "@1"}})
		}
		steps = append(steps, queueStep{ev: synced(uid, 1, "fail"), retry: d})
	}
	return steps
}

func TestWriteQueue(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name    string
		writers int
		steps   []queueStep
	}{
		{"a report starts a write", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
		}},
		{"an unchanged report is no write", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: report("a", "pending")},
		}},
		{"a status the API shows otherwise is written again, unchanged", 8, []queueStep{
			{ev: report("a", "ready"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: reconcile("a", "ready"), start: []string{"a@2"}},
		}},
		{"a static pod's mirror showing another status is written again, unchanged", 8, []queueStep{
			{ev: report("static-s", "ready"), start: []string{"static-s@1"}},
			{ev: synced("static-s", 1, "ok")},
			{ev: reconcile("static-s", "ready"), start: []string{"static-s@2"}},
			{ev: synced("static-s", 2, "ok")},
			{ev: report("static-s", "ready")},
		}},
		{"a reconcile during a write is written after it", 8, []queueStep{
			{ev: report("a", "ready"), start: []string{"a@1"}},
			{ev: reconcile("a", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"a@2"}},
		}},
		{"a finished pod is not reconciled", 8, []queueStep{
			{ev: report("a", "ready"), start: []string{"a@1"}},
			{ev: finish("a", false)},
			{ev: reconcile("a", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"a@2"}},
		}},
		{"a changed report is written", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: report("a", "ready"), start: []string{"a@2"}},
		}},
		{"the first report is a change, even of an empty status", 8, []queueStep{
			{ev: finish("static-s", false), start: []string{"static-s@1"}},
			{ev: synced("static-s", 1, "ok")},
			{ev: report("static-s", ""), start: []string{"static-s@2"}},
		}},
		{"a deletion timestamp is a change", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: reportDeleting("a", "pending"), start: []string{"a@2"}},
		}},
		{"one write per pod: reports meanwhile coalesce into one write", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("a", "pending:pulling")},
			{ev: report("a", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"a@3"}},
			{ev: synced("a", 3, "ok")},
		}},
		{"a queued pod is written once, at its latest version", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: report("b", "pending:pulling")},
			{ev: synced("a", 1, "ok"), start: []string{"b@2"}},
			{ev: synced("b", 2, "ok")},
		}},
		{"at most writers writes in flight", 2, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending"), start: []string{"b@1"}},
			{ev: report("c", "pending")},
			{ev: synced("b", 1, "ok"), start: []string{"c@1"}},
		}},
		{"first queued, first written", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: report("c", "pending")},
			{ev: synced("a", 1, "ok"), start: []string{"b@1"}},
			{ev: synced("b", 1, "ok"), start: []string{"c@1"}},
		}},
		{"a Ready write goes first", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: report("c", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"c@1"}},
			{ev: synced("c", 1, "ok"), start: []string{"b@1"}},
		}},
		{"a finished pod's write goes first", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: finish("c", false)},
			{ev: synced("a", 1, "ok"), start: []string{"c@1"}},
			{ev: synced("c", 1, "ok"), start: []string{"b@1"}},
		}},
		{"a queued pod that turns Ready moves ahead, written once", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: report("c", "pending")},
			{ev: report("c", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"c@2"}},
			{ev: synced("c", 2, "ok"), start: []string{"b@1"}},
			{ev: synced("b", 1, "ok")},
		}},
		{"a pod written from the urgent queue keeps its place in the other", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: report("c", "ready")},
			{ev: report("b", "ready")},
			{ev: synced("a", 1, "ok"), start: []string{"c@1"}},
			{ev: synced("c", 1, "ok"), start: []string{"b@2"}},
			// b's place in the plain queue, ahead of d's, is still there.
			{ev: report("d", "pending")},
			{ev: report("b", "pending")},
			{ev: synced("b", 2, "ok"), start: []string{"b@3"}},
			{ev: synced("b", 3, "ok"), start: []string{"d@1"}},
		}},
		{"a failed write is retried by the timer, the backoff doubling", 8,
			failing("a", 100*ms, 200*ms, 400*ms)},
		{"the backoff is capped", 8,
			failing("a", 100*ms, 200*ms, 400*ms, 800*ms, 1600*ms, 3200*ms, retryCap, retryCap)},
		{"a success resets the backoff", 8, append(failing("a", 100*ms, 200*ms),
			queueStep{ev: retryTimer("a"), start: []string{"a@1"}},
			queueStep{ev: synced("a", 1, "ok")},
			queueStep{ev: report("a", "ready"), start: []string{"a@2"}},
			queueStep{ev: synced("a", 2, "fail"), retry: 100 * ms},
		)},
		{"reports during the backoff wait for the timer", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "fail"), retry: 100 * ms},
			{ev: report("a", "ready")},
			{ev: finish("a", false)},
			{ev: checkMirrors},
			{ev: retryTimer("a"), start: []string{"a@3"}},
		}},
		{"a failure frees the writer for others", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: synced("a", 1, "fail"), start: []string{"b@1"}, retry: 100 * ms},
			{ev: retryTimer("a")},
			{ev: synced("b", 1, "ok"), start: []string{"a@1"}},
		}},
		{"a pod queued behind full writers before its write failed waits for the timer", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("a", "ready")},
			{ev: synced("a", 1, "fail"), retry: 100 * ms},
			{ev: retryTimer("a"), start: []string{"a@2"}},
			{ev: synced("a", 2, "ok")},
		}},
		{"done at the latest version forgets the pod", 8, []queueStep{
			{ev: finish("a", true), start: []string{"a@1"}},
			{ev: synced("a", 1, "done")},
			{ev: tracked(0)},
			{ev: report("a", "pending"), start: []string{"a@1"}},
		}},
		{"done at an older version writes the newer one", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: finish("a", true)},
			{ev: synced("a", 1, "done"), start: []string{"a@2"}},
			{ev: tracked(1)},
			{ev: synced("a", 2, "done")},
			{ev: tracked(0)},
		}},
		{"a pod finished but not removed (rejected at admission) is kept until reported removed", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: finish("a", false), start: nil},
			{ev: synced("a", 1, "ok"), start: []string{"a@2"}},
			{ev: synced("a", 2, "ok")},
			{ev: tracked(1)},
			{ev: finish("a", true), start: []string{"a@3"}},
			{ev: synced("a", 3, "done")},
			{ev: tracked(0)},
		}},
		{"a success with nothing newer writes nothing more", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: tracked(1)},
		}},
		{"an outcome for a forgotten pod frees its writer", 1, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: report("b", "pending")},
			{ev: synced("a", 1, "done"), start: []string{"b@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: report("c", "pending"), start: []string{"c@1"}},
		}},
		{"a mirror check writes a static pod again", 8, []queueStep{
			{ev: report("static-s", "pending"), start: []string{"static-s@1"}},
			{ev: synced("static-s", 1, "ok")},
			{ev: checkMirror("static-s"), start: []string{"static-s@1"}},
			{ev: synced("static-s", 1, "ok")},
			{ev: checkMirrors, start: []string{"static-s@1"}},
		}},
		{"a mirror check skips API pods and unknown pods", 8, []queueStep{
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: checkMirror("a")},
			{ev: checkMirror("x")},
			{ev: checkMirrors},
		}},
		{"a mirror check during the write is dropped", 8, []queueStep{
			{ev: report("static-s", "pending"), start: []string{"static-s@1"}},
			{ev: checkMirror("static-s")},
			{ev: synced("static-s", 1, "ok")},
		}},
		{"registration writes every static pod, removed too; mirror checks skip removed ones", 8, []queueStep{
			{ev: finish("static-s", true), start: []string{"static-s@1"}},
			{ev: synced("static-s", 1, "ok")},
			{ev: checkMirror("static-s")},
			{ev: checkMirrors},
			{ev: report("a", "pending"), start: []string{"a@1"}},
			{ev: synced("a", 1, "ok")},
			{ev: registered, start: []string{"static-s@1"}},
		}},
		{"without writers: tracked, never written, removed forgotten", 0, []queueStep{
			{ev: report("a", "pending")},
			{ev: report("static-s", "ready")},
			{ev: registered},
			{ev: checkMirrors},
			{ev: tracked(2)},
			{ev: finish("a", false)},
			{ev: tracked(2)},
			{ev: finish("a", true)},
			{ev: tracked(1)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newWriteQueue(tt.writers)
			for i, st := range tt.steps {
				start, retry := st.ev(t, q)
				if !slices.Equal(start, st.start) || retry != st.retry {
					t.Fatalf("step %d: started %v retry %s, want %v retry %s", i+1, start, retry, st.start, st.retry)
				}
			}
		})
	}
}

// TestWriteQueueSnapshot checks what a write is given: the pod's latest
// state, and the base of its patch.
func TestWriteQueueSnapshot(t *testing.T) {
	watched := testPod("a", false)
	answered := testPod("a", false)
	answered.ResourceVersion = "8"
	tests := []struct {
		name string
		run  func(q *writeQueue) []writeCommand
		want podWork
	}{
		{"the watch's copy is the first base", func(q *writeQueue) []writeCommand {
			return step(q, evReport{watched, status("ready")})
		}, podWork{uid: "a", version: 1, pod: watched, status: status("ready"), reported: true, base: watched}},
		{"a pod never seen in the API is read first", func(q *writeQueue) []writeCommand {
			p := testPod("a", false)
			p.ResourceVersion = ""
			return step(q, evReport{p, status("ready")})
		}, podWork{uid: "a", version: 1, status: status("ready"), reported: true}},
		{"a static pod is read first", func(q *writeQueue) []writeCommand {
			return step(q, evReport{testPod("static-s", false), status("ready")})
		}, podWork{uid: "static-s", version: 1, status: status("ready"), reported: true}},
		{"the API's answer is the next base", func(q *writeQueue) []writeCommand {
			step(q, evReport{watched, status("pending")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 1, APIPod: answered}})
			return step(q, evReport{watched, status("ready")})
		}, podWork{uid: "a", version: 2, pod: watched, status: status("ready"), reported: true, base: answered}},
		{"a failure drops the API's answer: the retry reads the pod", func(q *writeQueue) []writeCommand {
			step(q, evReport{watched, status("pending")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 1, APIPod: answered}})
			step(q, evReport{watched, status("ready")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 2, Err: errors.New("conflict")}})
			return step(q, evRetry{"a"})
		}, podWork{uid: "a", version: 2, pod: watched, status: status("ready"), reported: true}},
		{"a reconcile reads the pod anew", func(q *writeQueue) []writeCommand {
			step(q, evReport{watched, status("ready")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 1, APIPod: answered}})
			return step(q, evReconcile{watched, status("ready")})
		}, podWork{uid: "a", version: 2, pod: watched, status: status("ready"), reported: true}},
		{"a static pod's reconcile writes its latest status, the mirror listed anew", func(q *writeQueue) []writeCommand {
			step(q, evReport{testPod("static-s", false), status("ready")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "static-s", Version: 1}})
			return step(q, evReconcile{testPod("static-s", false), status("ready")})
		}, podWork{uid: "static-s", version: 2, status: status("ready"), reported: true}},
		{"only the write after a reconcile reads the pod anew", func(q *writeQueue) []writeCommand {
			step(q, evReport{watched, status("ready")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 1}})
			step(q, evReconcile{watched, status("ready")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 2, APIPod: answered}})
			return step(q, evReport{watched, status("pending")})
		}, podWork{uid: "a", version: 3, pod: watched, status: status("pending"), reported: true, base: answered}},
		{"finish keeps the reported terminal status", func(q *writeQueue) []writeCommand {
			step(q, evReport{watched, status("failed")})
			step(q, evSynced{&messages.PodStatusSynced{UID: "a", Version: 1, APIPod: answered}})
			return step(q, evFinish{watched, true})
		}, podWork{uid: "a", version: 2, pod: watched, status: status("failed"), reported: true, finished: true, removed: true, base: answered}},
		{"a static pod finished unreported has no status to write", func(q *writeQueue) []writeCommand {
			return step(q, evFinish{testPod("static-s", false), false})
		}, podWork{uid: "static-s", version: 1, finished: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			works := writes(tt.run(newWriteQueue(8)))
			if len(works) != 1 {
				t.Fatalf("started %d writes, want 1", len(works))
			}
			got, want := works[0], tt.want
			if want.pod == nil {
				want.pod = got.pod // the pod's own copy: not what this case checks
			}
			if got.uid != want.uid || got.version != want.version || got.pod != want.pod || got.base != want.base ||
				got.reported != want.reported || got.finished != want.finished || got.removed != want.removed ||
				got.status.Phase != want.status.Phase || podIsReady(&got.status) != podIsReady(&want.status) {
				t.Errorf("write %+v,\nwant %+v", got, want)
			}
		})
	}
}

// TestWriteQueueLastWord checks the status an API pod is written with once
// its worker finished, which its deletion follows: a terminal phase and
// its containers terminated, as upstream's TerminatePod makes it, however
// the pod's reports and writes went (none reported, the first write in
// flight or failed, a report after the finish). The last write started is
// described as "@version phase init:name=state name=state".
func TestWriteQueueLastWord(t *testing.T) {
	withSpec := func(uid string, inits ...string) *v1.Pod {
		p := testPod(uid, true)
		p.Spec.RestartPolicy = v1.RestartPolicyOnFailure
		p.Spec.Containers = []v1.Container{{Name: "app"}, {Name: "quick"}}
		for _, name := range inits {
			p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: name})
		}
		return p
	}
	api, initing, static := withSpec("a"), withSpec("a", "init"), withSpec("static-s")
	started := metav1.NewTime(time.Unix(1, 0))
	quickDone := v1.ContainerStatus{Name: "quick", ContainerID: "containerd://q", State: v1.ContainerState{
		Terminated: &v1.ContainerStateTerminated{Reason: "Completed", ExitCode: 0, StartedAt: started}}}
	running := v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://a", State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: started}}},
		quickDone,
	}}
	failed := v1.PodStatus{Phase: v1.PodFailed, ContainerStatuses: []v1.ContainerStatus{
		{Name: "app", ContainerID: "containerd://a", State: v1.ContainerState{
			Terminated: &v1.ContainerStateTerminated{Reason: "Error", ExitCode: 1, StartedAt: started}}},
		quickDone,
	}}
	synced := func(pod *v1.Pod, version uint64, err error) writeEvent {
		return evSynced{&messages.PodStatusSynced{UID: pod.UID, Version: version, Err: err}}
	}
	errDown := errors.New("API server unreachable")
	const (
		unknown   = "terminated(ContainerStatusUnknown,137)"
		completed = "terminated(Completed,0)"
	)
	tests := []struct {
		name   string
		events []writeEvent
		want   string
	}{
		{"a pod removed before any report", []writeEvent{evFinish{api, true}},
			"@1 Failed app=" + unknown + " quick=" + unknown},
		{"a pod removed while its first write is in flight", []writeEvent{
			evReport{api, running}, evFinish{api, true}, synced(api, 1, nil)},
			"@2 Failed app=" + unknown + " quick=" + completed},
		{"a pod removed after its first write failed: the retry writes its last word", []writeEvent{
			evReport{api, running}, synced(api, 1, errDown), evFinish{api, true}, evRetry{api.UID}},
			"@2 Failed app=" + unknown + " quick=" + completed},
		{"a failed write of the last word is retried with it", []writeEvent{
			evFinish{api, true}, synced(api, 1, errDown), evRetry{api.UID}},
			"@1 Failed app=" + unknown + " quick=" + unknown},
		{"a report after the finish is a last word too", []writeEvent{
			evFinish{api, true}, evReport{api, running}, synced(api, 1, nil)},
			"@2 Failed app=" + unknown + " quick=" + completed},
		{"a terminal status reported is the last word", []writeEvent{
			evReport{api, failed}, synced(api, 1, nil), evFinish{api, true}},
			"@2 Failed app=terminated(Error,1) quick=" + completed},
		{"a pod that ran to completion keeps its status", []writeEvent{
			evReport{api, failed}, evFinish{api, false}, synced(api, 1, nil)},
			"@2 Failed app=terminated(Error,1) quick=" + completed},
		{"a pod removed before it initialized: its app containers stay waiting", []writeEvent{evFinish{initing, true}},
			"@1 Failed init:init=" + unknown + " app=waiting(PodInitializing) quick=waiting(PodInitializing)"},
		{"a static pod keeps its phase, as upstream's", []writeEvent{
			evReport{static, running}, synced(static, 1, nil), evFinish{static, true}},
			"@2 Running app=running quick=" + completed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newWriteQueue(8)
			var last podWork
			finished := false
			for i, ev := range tt.events {
				_, finishing := ev.(evFinish)
				finished = finished || finishing
				for _, w := range writes(q.Step(ev, time.Unix(2, 0))) {
					if finished && !isStatic(w.pod) && !terminal(w.status.Phase) {
						t.Errorf("step %d: a finished pod written with phase %q", i+1, w.status.Phase)
					}
					last = w
				}
			}
			if got := describeWrite(last); got != tt.want {
				t.Errorf("last write %s,\nwant       %s", got, tt.want)
			}
		})
	}
}

// describeWrite is "@version phase" and each container's state.
func describeWrite(w podWork) string {
	var b strings.Builder
	fmt.Fprintf(&b, "@%d %s", w.version, w.status.Phase)
	for _, c := range w.status.InitContainerStatuses {
		fmt.Fprintf(&b, " init:%s=%s", c.Name, containerState(c.State))
	}
	for _, c := range w.status.ContainerStatuses {
		fmt.Fprintf(&b, " %s=%s", c.Name, containerState(c.State))
	}
	return b.String()
}

func containerState(s v1.ContainerState) string {
	switch {
	case s.Running != nil:
		return "running"
	case s.Terminated != nil:
		return fmt.Sprintf("terminated(%s,%d)", s.Terminated.Reason, s.Terminated.ExitCode)
	case s.Waiting != nil:
		return fmt.Sprintf("waiting(%s)", s.Waiting.Reason)
	}
	return "none"
}

// TestWriteQueueBase: a write patches from the API's last answer, else the
// source's copy; a finished pod with no answer of the API yet, and the
// retry of a failed write, read the pod first, so that a copy carrying
// the node's own status (a pod rejected at admission) is never the base
// of its last word.
func TestWriteQueueBase(t *testing.T) {
	api, other := testPod("a", false), testPod("b", false)
	rejected := api.DeepCopy()
	rejected.Status = status("failed:rejected")
	answered := api.DeepCopy()
	answered.Status = status("pending")
	ok := func(pod *v1.Pod, version uint64, apiPod *v1.Pod) writeEvent {
		return evSynced{&messages.PodStatusSynced{UID: pod.UID, Version: version, APIPod: apiPod}}
	}
	failed := func(pod *v1.Pod, version uint64) writeEvent {
		return evSynced{&messages.PodStatusSynced{UID: pod.UID, Version: version, Err: errors.New("unavailable")}}
	}
	tests := []struct {
		name    string
		writers int
		events  []writeEvent
		want    *v1.Pod // the last write's base; nil: it reads the pod
	}{
		{"a first write patches from the source's copy", 8,
			[]writeEvent{evReport{api, status("pending")}}, api},
		{"a later write patches from the API's answer", 8,
			[]writeEvent{evReport{api, status("pending")}, ok(api, 1, answered), evReport{api, status("ready")}}, answered},
		{"the retry of a failed write reads the pod", 8,
			[]writeEvent{evReport{api, status("pending")}, failed(api, 1), evRetry{api.UID}}, nil},
		{"a rejected pod removed before its first write: the write reads the pod", 1,
			[]writeEvent{evReport{other, status("pending")}, evReport{api, rejected.Status}, evFinish{rejected, true}, ok(other, 1, other)}, nil},
		{"a rejected pod removed after its first write failed: the retry reads the pod", 8,
			[]writeEvent{evReport{api, rejected.Status}, failed(api, 1), evFinish{rejected, true}, evRetry{api.UID}}, nil},
		{"a pod finished after an answer of the API patches from it", 8,
			[]writeEvent{evReport{api, status("pending")}, ok(api, 1, answered), evFinish{api, true}}, answered},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := newWriteQueue(tt.writers)
			var last *podWork
			for _, ev := range tt.events {
				for _, w := range writes(q.Step(ev, time.Unix(2, 0))) {
					if w.uid == api.UID {
						last = &w
					}
				}
			}
			if last == nil {
				t.Fatal("no write of the pod")
			}
			if last.base != tt.want {
				t.Errorf("base %v, want %v", describeBase(last.base, api, answered, rejected), describeBase(tt.want, api, answered, rejected))
			}
		})
	}
}

// describeBase names which of the test's copies base is.
func describeBase(base, source, answered, rejected *v1.Pod) string {
	switch base {
	case nil:
		return "none (read the pod)"
	case source:
		return "the source's copy"
	case answered:
		return "the API's answer"
	case rejected:
		return "the rejected copy"
	}
	return "another copy"
}
