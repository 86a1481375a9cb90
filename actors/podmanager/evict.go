package podmanager

import (
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// EvEvict: the eviction manager evicts a running pod (messages.EvictPod).
type EvEvict struct {
	UID             types.UID
	GracePeriod     int64
	Reason, Message string
}

func (EvEvict) isEvent() {}

// Eviction is why a pod was evicted: its status says so from then on.
type Eviction struct {
	Reason, Message string
	// Condition is the DisruptionTarget condition's message; "": Message.
	Condition string
}

// evict stops a running pod as upstream's eviction manager's killPodFunc
// does: its worker kills it within the grace period, and its status is
// Failed with the eviction's reason and message and the DisruptionTarget
// condition, from now on. The pod ends like one whose phase became terminal:
// it is not started again, and stays Failed for as long as its source has
// it.
func (m *Machine) evict(e EvEvict, now metav1.Time) {
	p, ok := m.pods[e.UID]
	if !ok || p.Phase != Running || p.Pod == nil {
		phase := "unknown"
		if ok {
			phase = p.Phase.String()
		}
		m.log(zerolog.InfoLevel, "eviction of a pod not running ignored", map[string]any{"uid": string(e.UID), "phase": phase})
		return
	}
	p.Evicted = &Eviction{Reason: e.Reason, Message: e.Message}
	grace := e.GracePeriod
	p.End = &messages.TerminatePod{GracePeriod: &grace, Reason: "evicted: " + e.Message, Pod: p.Pod}
	p.Phase = Ending
	m.log(zerolog.WarnLevel, "evicting pod", map[string]any{"pod": fullName(p.Pod), "gracePeriod": grace, "message": e.Message})
	m.tell(e.UID, p.End)
	p.Status = evictedStatus(p.Pod, p.Status, p.Evicted, now, false)
	m.emit(CmdReportStatus{Pod: p.Pod, Status: p.Status})
	m.emit(CmdKillDeadline{UID: e.UID, After: killTimeout(grace)})
}

// EvKillDeadline: the time an evicted or preempted pod's kill may take is
// over (messages.KillDeadline).
type EvKillDeadline struct{ UID types.UID }

func (EvKillDeadline) isEvent() {}

// CmdKillDeadline: send EvKillDeadline for the pod after After.
type CmdKillDeadline struct {
	UID   types.UID
	After time.Duration
}

func (CmdKillDeadline) isCommand() {}

// killTimeout is how long upstream's killPodNow waits for an evicted or
// preempted pod's kill: one and a half grace periods, at least 10 s for
// the runtime's SIGKILL.
func killTimeout(grace int64) time.Duration {
	return time.Duration(max(grace+grace/2, 10)) * time.Second
}

// killDeadline warns, as upstream's killPodNow, when an evicted or
// preempted pod still has something running when its kill's time is over.
func (m *Machine) killDeadline(uid types.UID) {
	p, ok := m.pods[uid]
	if !ok || p.Evicted == nil || p.Stopped || p.Phase == Finished || p.Pod == nil {
		return
	}
	m.emit(CmdEvent{Pod: p.Pod, Type: v1.EventTypeWarning, Reason: events.ExceededGracePeriod,
		Message: "Container runtime did not kill the pod within specified grace period."})
}

// evictedStatus is status as an evicted pod reports it: Failed with the
// eviction's reason and message, the DisruptionTarget condition (reason
// TerminationByKubelet), Ready and ContainersReady False. Once nothing of
// it runs (stopped), containers still shown running or waiting are
// terminated as upstream's status manager's TerminatePod marks them.
func evictedStatus(pod *v1.Pod, status v1.PodStatus, ev *Eviction, now metav1.Time, stopped bool) v1.PodStatus {
	s := *status.DeepCopy()
	s.Phase, s.Reason, s.Message = v1.PodFailed, ev.Reason, ev.Message
	msg := ev.Condition
	if msg == "" {
		msg = ev.Message
	}
	disruption := v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet,
		Message: msg, LastTransitionTime: now, ObservedGeneration: pod.Generation}
	found := false
	for i := range s.Conditions {
		c := &s.Conditions[i]
		switch c.Type {
		case v1.DisruptionTarget:
			found = true
			if c.Status != v1.ConditionTrue {
				*c = disruption
			}
		case v1.PodReady, v1.ContainersReady:
			if c.Status == v1.ConditionTrue {
				c.Status, c.Reason, c.Message, c.LastTransitionTime = v1.ConditionFalse, "PodFailed", "", now
			}
		}
	}
	if !found {
		s.Conditions = append(s.Conditions, disruption)
	}
	if stopped {
		// As upstream's TerminatePod: the last state seen was not
		// terminated, and nothing of the container runs any more.
		for _, list := range [][]v1.ContainerStatus{s.InitContainerStatuses, s.ContainerStatuses, s.EphemeralContainerStatuses} {
			podruntime.MarkUnknownTerminated(list)
		}
	}
	return s
}
