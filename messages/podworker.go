package messages

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodWorkerKind is the registry kind of a pod-worker (podworker.Kind). It
// lives here so that an actor that must tell pod-workers apart (the
// kubelet-API actor, which injects a panic into one's sync work) need not
// import the pod-worker's package.
const PodWorkerKind = "pod-worker"

// UpdatePod hands a pod-worker the desired pod: the first spec, or a changed
// one (its spec, labels or annotations). Updates that arrive while a sync runs coalesce into the next sync.
// Sender: the pod-manager. Receiver: the pod's pod-worker.
type UpdatePod struct {
	Pod *v1.Pod
}

func (m *UpdatePod) Summary() string {
	return fmt.Sprintf("update %s/%s (generation %d)", m.Pod.Namespace, m.Pod.Name, m.Pod.Generation)
}

// TerminatePod tells a pod-worker that its pod must go: stop its containers
// within the grace period, then remove its sandbox. A grace period can only
// shrink: a later TerminatePod with a longer one keeps the shorter.
// Sender: the pod-manager. Receiver: the pod's pod-worker.
type TerminatePod struct {
	// GracePeriod in seconds; nil means the pod's terminationGracePeriodSeconds.
	GracePeriod *int64
	Reason      string
	// Pod, when set, is the pod's spec for a worker that has none: a pod
	// that had ended (its API phase is Succeeded or Failed) before its
	// worker started is never synced, only stopped, and the kill needs the
	// spec to keep a completed pod's containers for its logs.
	Pod *v1.Pod
}

func (m *TerminatePod) Summary() string {
	if m.GracePeriod == nil {
		return "terminate (pod's grace period): " + m.Reason
	}
	return fmt.Sprintf("terminate (grace %ds): %s", *m.GracePeriod, m.Reason)
}

// PodSynced is the outcome of one sync pass, run outside the worker's
// mailbox. Gen tells a stale outcome (of a cancelled pass) from the current.
// Sender and receiver: the pod-worker (from its own goroutine).
type PodSynced struct {
	Gen uint64
	// Status is the pod's status as the API shows it, after the pass.
	Status v1.PodStatus
	// RetryAfter, when positive, asks for another pass after that long (a
	// crash-loop or image-pull backoff expiring).
	RetryAfter time.Duration
	Err        error
	// Observed is the pod in the runtime as the pass left it (runtime ID
	// of each sandbox and container → its CRI state, as PLEG names it),
	// set only when the pass left nothing more to do: the worker then
	// needs no sync for PLEG events that show just this.
	Observed map[string]string
}

func (m *PodSynced) Summary() string {
	s := fmt.Sprintf("sync #%d done: %s", m.Gen, m.Status.Phase)
	if m.Err != nil {
		s += ", error: " + m.Err.Error()
	}
	if m.RetryAfter > 0 {
		s += fmt.Sprintf(", retry in %s", m.RetryAfter)
	}
	return s
}

// PodKilled is the outcome of stopping a pod's containers and removing its
// sandbox. Sender and receiver: the pod-worker (from its own goroutine).
type PodKilled struct {
	Gen uint64
	Err error
}

func (m *PodKilled) Summary() string {
	if m.Err != nil {
		return fmt.Sprintf("kill #%d failed: %v", m.Gen, m.Err)
	}
	return fmt.Sprintf("kill #%d done", m.Gen)
}

// PodStopped: the kill in flight has stopped every container and the
// sandbox, and goes on to remove them. Sender and receiver: the pod-worker
// (from its kill's goroutine).
type PodStopped struct {
	Gen uint64
	// Status is the pod's terminal status, made from what the runtime
	// showed once everything stopped; nil when there is none (an orphan,
	// or the runtime could not be read).
	Status *v1.PodStatus
}

func (m *PodStopped) Summary() string { return fmt.Sprintf("kill #%d: all stopped", m.Gen) }

// PodWorkerStopped tells the pod-manager that nothing of a terminating pod
// runs any more, before its containers and sandbox are removed, so that a
// pod being deleted can go from the API without waiting for the removal.
// Sender: a pod-worker. Receiver: the pod-manager.
type PodWorkerStopped struct {
	UID types.UID
}

func (m *PodWorkerStopped) Summary() string { return fmt.Sprintf("%s stopped", m.UID) }

// RetryDue wakes a pod-worker when a backoff (crash loop, image pull, a
// failed kill) has expired. Sender and receiver: the pod-worker (its timer).
type RetryDue struct {
	Gen uint64
}

func (m *RetryDue) Summary() string { return fmt.Sprintf("retry #%d due", m.Gen) }

// PodStatusChanged reports a pod's new status and its worker's state.
// Sender: a pod-worker. Receiver: the pod-manager (which serves /pods and,
// with an API server, hands statuses to the status-reporter).
type PodStatusChanged struct {
	UID    types.UID
	Status v1.PodStatus
	// WorkerState is the worker's state-machine state (syncing, terminating,
	// terminated), shown on the dashboard.
	WorkerState string
}

func (m *PodStatusChanged) Summary() string {
	return fmt.Sprintf("%s: %s (%s)", m.UID, m.Status.Phase, m.WorkerState)
}

// PodWorkerDone tells the pod-manager that a pod is terminated and its
// containers and sandbox are gone, so its worker can stop.
// Sender: a pod-worker. Receiver: the pod-manager.
type PodWorkerDone struct {
	UID types.UID
}

func (m *PodWorkerDone) Summary() string { return fmt.Sprintf("%s terminated and cleaned up", m.UID) }

// PodWorkerStarted asks the pod-manager for the worker's pod, on its first
// start and after every restart, so that a restarted worker resumes (and
// adopts the containers its predecessor created) without the pod-manager
// having to notice the restart.
// Sender: a pod-worker. Receiver: the pod-manager, which answers with
// UpdatePod or TerminatePod.
type PodWorkerStarted struct {
	UID types.UID
}

func (m *PodWorkerStarted) Summary() string { return fmt.Sprintf("%s worker started", m.UID) }
