package statusreporter

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// writeQueue decides the pod status writes: it keeps the latest status of
// each pod and where its write stands, and says which writes start. It is
// a reducer like every actor's machine: Step takes one writeEvent and
// returns the writeCommands the actor carries out (the writes to start, a
// retry to schedule); it makes no API call, starts no timer and reads no
// clock, and the actor feeds every write's outcome back as evSynced. Its
// rules:
//   - a report that changes neither the status nor whether the pod is being
//     deleted is no new version, and no write;
//   - one write per pod at a time: what arrives while it runs is written
//     after it, in one write at the latest version;
//   - at most writers writes at a time, urgent ones first (see urgent),
//     then in the order the pods were queued; a queued pod keeps its place
//     and is written at its latest version;
//   - a failed write is retried after the pod's backoff, which a success
//     resets; until the actor sends evRetry, new reports queue no write;
//   - a write that finds the pod done (deleted, or gone from the API) at
//     its latest version forgets the pod;
//   - a finished API pod's status is its last word (see lastWord): the
//     write that deletes it writes a terminal status first.
type writeQueue struct {
	// writers bounds the writes in flight; 0 (standalone mode) tracks the
	// pods and writes none.
	writers int
	pods    map[types.UID]*podEntry
	queue   []types.UID
	// urgent is served before queue: writes that make a pod Ready or end
	// it. When many pods start at once and the client's QPS limit holds the
	// writes back, a Ready write then does not wait behind other pods'
	// intermediate (Pending) ones, and those often coalesce into their own
	// pod's Ready write before their turn comes: fewer requests, sooner
	// Ready.
	urgent   []types.UID
	inFlight int
}

// podEntry is what the queue holds for one pod: the latest status reported,
// which version of it has been written, and where its write is.
type podEntry struct {
	pod      *v1.Pod
	status   v1.PodStatus
	reported bool
	// version counts what the queue has been told about the pod; written
	// is the last version the API has.
	version, written  uint64
	finished, removed bool
	inFlight, queued  bool
	// urgent: queued in the urgent queue (see writeQueue.urgent).
	urgent bool
	// retrying is set while a retry timer runs: the timer, not new
	// reports, starts the next write, so that the backoff holds.
	retrying bool
	backoff  backoff
	// apiPod is the pod as the API server last answered one of our
	// writes: the base of the next patch.
	apiPod *v1.Pod
	// reread: the next write reads the pod first rather than patch from
	// apiPod or pod, because the API was seen with another status than
	// ours (reconcile).
	reread bool
	// changedAt is when the oldest status not yet in the API, nor in the
	// write in flight, was reported (zero: none); writingChangedAt is the
	// changedAt of the write in flight. A write that succeeds took from
	// its writingChangedAt (kubelet_pod_status_sync_duration_seconds); one
	// that fails hands it back to changedAt.
	changedAt, writingChangedAt time.Time
}

// writeEvent is what happens to the write queue; one type per kind.
type writeEvent interface{ isWriteEvent() }

// evReport: a pod's worker reported the pod's status.
type evReport struct {
	pod    *v1.Pod
	status v1.PodStatus
}

// evReconcile: the API shows the pod (a static pod: its mirror pod) with
// another status than status, the latest its worker reported.
type evReconcile struct {
	pod    *v1.Pod
	status v1.PodStatus
}

// evFinish: a pod's worker is done; removed: the pod has left the node too.
type evFinish struct {
	pod     *v1.Pod
	removed bool
}

// evCheckMirror: the mirror pod of the static pod uid went.
type evCheckMirror struct{ uid types.UID }

// evCheckMirrors: the periodic check of every static pod's mirror pod.
type evCheckMirrors struct{}

// evRegistered: the Node is registered; its UID is known.
type evRegistered struct{}

// evSynced: a write a podWork started ended.
type evSynced struct{ *messages.PodStatusSynced }

// evRetry: the backoff of the pod's failed write is over.
type evRetry struct{ uid types.UID }

func (evReport) isWriteEvent()       {}
func (evReconcile) isWriteEvent()    {}
func (evFinish) isWriteEvent()       {}
func (evCheckMirror) isWriteEvent()  {}
func (evCheckMirrors) isWriteEvent() {}
func (evRegistered) isWriteEvent()   {}
func (evSynced) isWriteEvent()       {}
func (evRetry) isWriteEvent()        {}

// writeCommand is what the actor must do after a step: start a write (a
// podWork), schedule a retry (a writeRetry), or count what the step saw
// (statusWritten, containersTerminated).
type writeCommand interface{ isWriteCommand() }

func (podWork) isWriteCommand() {}

// writeRetry: the write of pod uid failed with err; send evRetry for it
// after in.
type writeRetry struct {
	uid types.UID
	pod *v1.Pod
	in  time.Duration
	err error
}

func (writeRetry) isWriteCommand() {}

// statusWritten: a write put in the API a status first reported took ago,
// for kubelet_pod_status_sync_duration_seconds.
type statusWritten struct{ took time.Duration }

func (statusWritten) isWriteCommand() {}

// containersTerminated: a pod's new status shows these containers
// terminated where its previous one did not, for
// kubelet_terminated_containers_total.
type containersTerminated []terminatedContainer

// terminatedContainer is one termination as the metric labels it.
type terminatedContainer struct{ containerType, exitCode, reason string }

func (containersTerminated) isWriteCommand() {}

// terminations are the containers status shows terminated that old, the
// pod's previous status, did not (or did not list), by type, as upstream's
// status manager counts them: once per container per pod, whatever the
// status is written as.
func terminations(old, status *v1.PodStatus) containersTerminated {
	var out containersTerminated
	count := func(olds, news []v1.ContainerStatus, containerType string) {
		for _, n := range news {
			t := n.State.Terminated
			if t == nil {
				continue
			}
			i := slices.IndexFunc(olds, func(o v1.ContainerStatus) bool { return o.Name == n.Name })
			if i < 0 || olds[i].State.Terminated == nil {
				out = append(out, terminatedContainer{containerType, strconv.Itoa(int(t.ExitCode)), t.Reason})
			}
		}
	}
	count(old.InitContainerStatuses, status.InitContainerStatuses, metrics.ContainerTypeInit)
	count(old.ContainerStatuses, status.ContainerStatuses, metrics.ContainerTypeContainer)
	count(old.EphemeralContainerStatuses, status.EphemeralContainerStatuses, metrics.ContainerTypeEphemeral)
	return out
}

// newStatus makes status the pod's latest version, reported at now, and
// returns what its terminated containers count.
func (e *podEntry) newStatus(status v1.PodStatus, now time.Time) []writeCommand {
	var old v1.PodStatus
	if e.reported {
		old = e.status
	}
	e.status, e.reported = status, true
	e.version++
	if e.changedAt.IsZero() {
		e.changedAt = now
	}
	if t := terminations(&old, &status); len(t) > 0 {
		return []writeCommand{t}
	}
	return nil
}

// newWriteQueue returns a queue of at most writers writes in flight; 0
// writes nothing.
func newWriteQueue(writers int) *writeQueue {
	return &writeQueue{writers: writers, pods: map[types.UID]*podEntry{}}
}

// Step applies ev, which the actor handles at now, and returns the
// commands to carry out, in order. It is the only way the queue changes; it
// does no I/O and reads no clock. Its backoffs count failures (the actor
// times them); now is the transition time of the conditions of a last
// word the queue makes (lastWord), and the time of a report and of a
// write's outcome, whose difference is how long the write took
// (statusWritten).
func (q *writeQueue) Step(ev writeEvent, now time.Time) []writeCommand {
	return q.step(ev, now)
}

// step hands ev to its handler.
func (q *writeQueue) step(ev writeEvent, now time.Time) []writeCommand {
	switch e := ev.(type) {
	case evReport:
		return q.onReport(e.pod, e.status, now)
	case evReconcile:
		return q.onReconcile(e.pod, e.status)
	case evFinish:
		return q.onFinish(e.pod, e.removed, now)
	case evCheckMirror:
		return q.onCheckMirror(e.uid)
	case evCheckMirrors:
		return q.onCheckMirrors()
	case evRegistered:
		return q.onRegistered()
	case evSynced:
		return q.onSynced(e.PodStatusSynced, now)
	case evRetry:
		return q.onRetry(e.uid)
	}
	panic(fmt.Sprintf("statusreporter: unknown write event %T", ev))
}

// entry is the pod's entry, made on first use.
func (q *writeQueue) entry(uid types.UID) *podEntry {
	e := q.pods[uid]
	if e == nil {
		e = &podEntry{backoff: backoff{initial: 100 * time.Millisecond, max: retryCap}}
		q.pods[uid] = e
	}
	return e
}

// onReport records the status a pod's worker reported; once the pod
// finished, only as its last word (a worker repeats its last status as it
// ends).
func (q *writeQueue) onReport(pod *v1.Pod, status v1.PodStatus, now time.Time) []writeCommand {
	e := q.entry(pod.UID)
	deletionChanged := e.pod == nil || (e.pod.DeletionTimestamp == nil) != (pod.DeletionTimestamp == nil)
	e.pod = pod
	if e.finished {
		status = lastWord(pod, status, now)
	}
	if e.reported && !deletionChanged && apiequality.Semantic.DeepEqual(e.status, status) {
		return nil
	}
	counts := e.newStatus(status, now)
	q.enqueue(pod.UID)
	return append(counts, q.start()...)
}

// onReconcile records that the API shows the pod (a static pod: its mirror
// pod) with another status than status, the latest its worker reported:
// someone else wrote it (the node-lifecycle controller marks a lost node's
// pods not Ready, someone patches a mirror pod's status), or it is the
// late echo of an earlier write of ours. The pod is written again at a new
// version, after any write in flight, from the pod read anew (a static
// pod's write always lists its mirror): a write that finds the API right
// makes no change. A finished pod's own writes settle it.
func (q *writeQueue) onReconcile(pod *v1.Pod, status v1.PodStatus) []writeCommand {
	e := q.entry(pod.UID)
	if e.finished {
		return nil
	}
	e.pod, e.status, e.reported, e.reread = pod, status, true, true
	e.version++
	q.enqueue(pod.UID)
	return q.start()
}

// onFinish records that a pod's worker is done; removed: the pod has left the
// node too. The status to write becomes the pod's last word. Without
// writers a removed pod is forgotten at once.
func (q *writeQueue) onFinish(pod *v1.Pod, removed bool, now time.Time) []writeCommand {
	uid := pod.UID
	e := q.entry(uid)
	e.pod, e.finished, e.removed = pod, true, removed
	if e.apiPod == nil {
		// No answer of the API to patch from: the finished copy may carry
		// a status of the node's own making (a pod rejected at admission
		// carries its Failed status), from which the last word would differ
		// in nothing, and go unwritten. The final write reads the pod.
		e.reread = true
	}
	var counts []writeCommand
	last := pod.Status
	if e.reported {
		last = e.status
	}
	if !isStatic(pod) && !terminal(last.Phase) {
		counts = e.newStatus(lastWord(pod, last, now), now)
	} else {
		// The finish alone is a new version, as upstream's TerminatePod:
		// the write that may delete the pod.
		e.version++
		if e.changedAt.IsZero() {
			e.changedAt = now
		}
	}
	if q.writers == 0 {
		if removed {
			delete(q.pods, uid)
		}
		return counts
	}
	q.enqueue(uid)
	return append(counts, q.start()...)
}

// lastWord is the status a finished API pod leaves the API with, as
// upstream's status manager's TerminatePod makes it before the pod may be
// deleted: status when its phase is terminal; otherwise, as the pod's
// worker makes it from a runtime that shows nothing of the pod, Failed,
// every container terminated (ContainerStatusUnknown, exit 137) once the
// pod initialized, and so every init container but the trailing ones that
// never started. A worker reports its pod's terminal status before it
// finishes; this covers a worker that could not (the runtime unreadable
// after the kill) and a pod finished before any status was reported, so
// that no pod is deleted showing Pending or Running. A static pod keeps
// its phase, as upstream's.
func lastWord(pod *v1.Pod, status v1.PodStatus, now time.Time) v1.PodStatus {
	if isStatic(pod) || terminal(status.Phase) {
		return status
	}
	return podruntime.TerminalAPIStatus(pod, nil, &status, now)
}

// onCheckMirror queues a write of a static pod not removed, which checks its
// mirror pod (and makes it again when it was deleted).
func (q *writeQueue) onCheckMirror(uid types.UID) []writeCommand {
	if e := q.pods[uid]; e == nil || !isStatic(e.pod) || e.removed {
		return nil
	}
	q.enqueue(uid)
	return q.start()
}

// onCheckMirrors queues a write of every static pod not removed.
func (q *writeQueue) onCheckMirrors() []writeCommand {
	for uid, e := range q.pods {
		if isStatic(e.pod) && !e.removed {
			q.enqueue(uid)
		}
	}
	return q.start()
}

// onRegistered queues a write of every static pod, removed ones too: the
// writes of those reported before the node's registration waited for the
// Node's UID.
func (q *writeQueue) onRegistered() []writeCommand {
	for uid, e := range q.pods {
		if isStatic(e.pod) {
			q.enqueue(uid)
		}
	}
	return q.start()
}

// onSynced takes the outcome of a write that start returned. After a
// failure, it asks for the pod's next write after its backoff (a
// writeRetry, before the writes that start now).
func (q *writeQueue) onSynced(m *messages.PodStatusSynced, now time.Time) []writeCommand {
	q.inFlight--
	e := q.pods[m.UID]
	if e == nil {
		return q.start()
	}
	e.inFlight = false
	since := e.writingChangedAt
	e.writingChangedAt = time.Time{}
	if m.Err != nil {
		// The next try reads the pod again: the failure may come from a
		// stale base.
		e.apiPod, e.reread = nil, true
		e.retrying = true
		if !since.IsZero() {
			// Older than any report since: the oldest not in the API.
			e.changedAt = since
		}
		return append([]writeCommand{writeRetry{uid: m.UID, pod: e.pod, in: e.backoff.next(), err: m.Err}}, q.start()...)
	}
	var cmds []writeCommand
	if !since.IsZero() {
		cmds = append(cmds, statusWritten{took: now.Sub(since)})
	}
	e.backoff.reset()
	if m.APIPod != nil {
		e.apiPod = m.APIPod
	}
	e.written = max(e.written, m.Version)
	if m.Done && e.version == m.Version {
		delete(q.pods, m.UID)
		return append(cmds, q.start()...)
	}
	if e.version > e.written {
		q.enqueue(m.UID)
	}
	return append(cmds, q.start()...)
}

// onRetry ends a failed write's backoff: the pod is queued again.
func (q *writeQueue) onRetry(uid types.UID) []writeCommand {
	if e := q.pods[uid]; e != nil {
		e.retrying = false
	}
	q.enqueue(uid)
	return q.start()
}

// enqueue marks a pod for a write; a pod already queued keeps its place and
// will be written at its latest version, unless the write became urgent:
// then it also takes a place in the urgent queue.
func (q *writeQueue) enqueue(uid types.UID) {
	e := q.pods[uid]
	if q.writers == 0 || e == nil || e.retrying {
		return
	}
	urgent := e.finished || podIsReady(&e.status)
	if e.queued && (!urgent || e.urgent) {
		return
	}
	e.queued = true
	if urgent {
		e.urgent = true
		q.urgent = append(q.urgent, uid)
		return
	}
	q.queue = append(q.queue, uid)
}

func podIsReady(s *v1.PodStatus) bool {
	for _, c := range s.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// next takes the next pod to write, urgent ones first.
func (q *writeQueue) next() (types.UID, bool) {
	if len(q.urgent) > 0 {
		uid := q.urgent[0]
		q.urgent = q.urgent[1:]
		return uid, true
	}
	if len(q.queue) > 0 {
		uid := q.queue[0]
		q.queue = q.queue[1:]
		return uid, true
	}
	return "", false
}

// start takes queued pods while fewer than writers writes are in flight,
// one write per pod, and returns their writes, each a snapshot of the
// pod's latest state.
func (q *writeQueue) start() []writeCommand {
	var works []writeCommand
	for q.inFlight < q.writers {
		uid, ok := q.next()
		if !ok {
			break
		}
		e := q.pods[uid]
		if e == nil || !e.queued {
			continue // written already from its other place in the queues
		}
		e.queued, e.urgent = false, false
		if e.retrying {
			// Queued before its last write failed: the retry timer, not
			// this place in the queue, starts its next write.
			continue
		}
		if e.inFlight {
			// onSynced queues it again if a newer version arrived meanwhile.
			continue
		}
		e.inFlight = true
		q.inFlight++
		e.writingChangedAt, e.changedAt = e.changedAt, time.Time{}
		w := podWork{uid: uid, version: e.version, pod: e.pod, status: e.status, reported: e.reported,
			finished: e.finished, removed: e.removed, base: e.apiPod}
		if e.reread {
			w.base, e.reread = nil, false
		} else if w.base == nil && !isStatic(e.pod) && e.pod.ResourceVersion != "" {
			// The source's copy is the watch's: fresh enough before our
			// first write.
			w.base = e.pod
		}
		works = append(works, w)
	}
	return works
}
