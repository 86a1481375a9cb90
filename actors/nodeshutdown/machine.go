package nodeshutdown

import (
	"slices"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
)

const (
	// Upstream's priorities of the two groups shutdownGracePeriod and
	// shutdownGracePeriodCriticalPods make: scheduling's
	// DefaultPriorityWhenNoDefaultClassExists and SystemCriticalPriority.
	defaultPriority  int32 = 0
	criticalPriority int32 = 2 * 1000000000

	// Reason and Message mark a pod terminated for the shutdown, as
	// upstream's (its status, and its DisruptionTarget condition's
	// message).
	Reason  = "Terminated"
	Message = "Pod was terminated in response to imminent node shutdown."

	// pollInterval is how often, while a group's pods are terminating,
	// the pods are listed to tell whether they are gone.
	pollInterval = time.Second
)

// Group is a priority group: the pods of Priority and above (up to the
// next group's) are terminated together, within GracePeriod seconds.
type Group struct {
	Priority    int32
	GracePeriod int64
}

// Groups are the priority groups the configuration asks for, lowest
// priority (terminated first) first, as upstream's newPodManager:
// shutdownGracePeriodByPodPriority when the gate
// GracefulNodeShutdownBasedOnPodPriority is on and it is set, else the two
// groups of shutdownGracePeriod (the critical pods' share apart). None:
// the shutdown manager is off.
func Groups(grace, critical time.Duration, byPriority []kubeletconfigv1beta1.ShutdownGracePeriodByPodPriority, byPriorityGate bool) []Group {
	var groups []Group
	if byPriorityGate && len(byPriority) > 0 {
		for _, p := range byPriority {
			groups = append(groups, Group{Priority: p.Priority, GracePeriod: p.ShutdownGracePeriodSeconds})
		}
	} else if grace > 0 && critical <= grace {
		groups = []Group{
			{Priority: defaultPriority, GracePeriod: int64((grace - critical) / time.Second)},
			{Priority: criticalPriority, GracePeriod: int64(critical / time.Second)},
		}
	}
	sort.SliceStable(groups, func(i, j int) bool { return groups[i].Priority < groups[j].Priority })
	return groups
}

// Requested is the time the groups need in all: what logind's
// InhibitDelayMaxUSec must allow.
func Requested(groups []Group) time.Duration {
	var sum int64
	for _, g := range groups {
		sum += g.GracePeriod
	}
	return time.Duration(sum) * time.Second
}

// groupPods puts each pod in the group of the highest priority at or
// below its own (the lowest group when below all), as upstream's
// groupByPriority. A pod without a priority has 0.
func groupPods(groups []Group, pods []*v1.Pod) [][]*v1.Pod {
	out := make([][]*v1.Pod, len(groups))
	for _, pod := range pods {
		var prio int32
		if pod.Spec.Priority != nil {
			prio = *pod.Spec.Priority
		}
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority > prio }) - 1
		if i < 0 {
			i = 0
		}
		out[i] = append(out[i], pod)
	}
	return out
}

// gracePeriod is the pod's grace in group g: its own, capped by the
// group's.
func gracePeriod(pod *v1.Pod, g Group) int64 {
	if t := pod.Spec.TerminationGracePeriodSeconds; t != nil && *t <= g.GracePeriod {
		return *t
	}
	return g.GracePeriod
}

// Event is what the machine reacts to.
type Event interface{ isEvent() }

// EvPrepare is logind's PrepareForShutdown.
type EvPrepare struct{ Active bool }

// EvPods is the pod-manager's pods (nil: it did not answer).
type EvPods struct{ List *messages.PodList }

// EvGroupDue: the grace period of group generation Gen is over.
type EvGroupDue struct{ Gen int }

func (EvPrepare) isEvent()  {}
func (EvPods) isEvent()     {}
func (EvGroupDue) isEvent() {}

// Cmd is what the actor carries out.
type Cmd interface{ isCmd() }

type (
	// CmdPublish tells the pod-manager and the status-reporter whether the
	// node is shutting down.
	CmdPublish struct{ ShuttingDown bool }
	// CmdEvent records a Normal event "Shutdown" on the Node.
	CmdEvent struct{ Message string }
	// CmdListPods asks the pod-manager for its pods now; CmdPoll after a
	// while.
	CmdListPods struct{}
	CmdPoll     struct{ After time.Duration }
	// CmdKill terminates the pod for the shutdown within GracePeriod
	// seconds.
	CmdKill struct {
		Pod         *v1.Pod
		GracePeriod int64
	}
	// CmdGroupTimer sends EvGroupDue{Gen} after the group's grace.
	CmdGroupTimer struct {
		Gen   int
		After time.Duration
	}
	// CmdReleaseLock releases the delay lock: logind may go on.
	CmdReleaseLock struct{}
	// CmdTakeLock takes a new delay lock.
	CmdTakeLock struct{}
	// CmdStoreState writes the shutdown's start and end (zero: not yet) to
	// the state file and the metrics.
	CmdStoreState struct{ Start, End time.Time }
	// CmdLog logs Message with the group's fields.
	CmdLog struct {
		Message string
		Group   Group
		Pods    []string
	}
)

func (CmdPublish) isCmd()     {}
func (CmdEvent) isCmd()       {}
func (CmdListPods) isCmd()    {}
func (CmdPoll) isCmd()        {}
func (CmdKill) isCmd()        {}
func (CmdGroupTimer) isCmd()  {}
func (CmdReleaseLock) isCmd() {}
func (CmdTakeLock) isCmd()    {}
func (CmdStoreState) isCmd()  {}
func (CmdLog) isCmd()         {}

// Machine is the shutdown manager's state: whether the node is shutting
// down, and the termination of its pods group after group.
type Machine struct {
	groups []Group
	// ShuttingDown: PrepareForShutdown(true) seen and not cancelled.
	ShuttingDown bool
	// Killing: the pods are being terminated; byGroup holds them once
	// listed, group is the one under way (its timer's generation gen),
	// left its pods still active.
	Killing bool
	byGroup [][]*v1.Pod
	group   int
	gen     int
	left    []types.UID
	// cancelled: PrepareForShutdown(false) came while the pods were
	// being terminated; as upstream's, it takes effect once they are.
	cancelled bool
	// polling: a CmdPoll is pending, whose EvPods has not come.
	polling bool
	start   time.Time
	cmds    []Cmd
}

// NewMachine returns a machine for the groups (lowest priority first).
func NewMachine(groups []Group) *Machine { return &Machine{groups: slices.Clone(groups)} }

// Step hands ev to its handler and returns the commands.
func (m *Machine) Step(ev Event, now time.Time) []Cmd {
	m.cmds = nil
	switch e := ev.(type) {
	case EvPrepare:
		m.onPrepare(e, now)
	case EvPods:
		m.onPods(e, now)
	case EvGroupDue:
		if m.Killing && m.byGroup != nil && e.Gen == m.gen {
			m.emit(CmdLog{Message: "Shutdown manager pod killing time out", Group: m.groups[m.group], Pods: uids(m.left)})
			m.next(m.group+1, now)
		}
	}
	return m.cmds
}

func (m *Machine) emit(c Cmd) { m.cmds = append(m.cmds, c) }

// poll lists the pods again after a while, unless a poll is pending
// already: one chain of polls at a time.
func (m *Machine) poll() {
	if !m.polling {
		m.polling = true
		m.emit(CmdPoll{After: pollInterval})
	}
}

func (m *Machine) onPrepare(e EvPrepare, now time.Time) {
	if !e.Active {
		if m.Killing {
			m.cancelled = true
			return
		}
		m.cancel()
		return
	}
	m.cancelled = false
	if m.ShuttingDown {
		return
	}
	m.ShuttingDown, m.Killing, m.byGroup, m.start = true, true, nil, now
	m.emit(CmdEvent{Message: "Shutdown manager detected shutdown event"})
	m.emit(CmdPublish{ShuttingDown: true})
	m.emit(CmdStoreState{Start: now})
	m.emit(CmdListPods{})
}

// cancel: the shutdown was cancelled; the node is Ready again and holds
// the shutdown back anew.
func (m *Machine) cancel() {
	m.ShuttingDown = false
	m.emit(CmdEvent{Message: "Shutdown manager detected shutdown cancellation"})
	m.emit(CmdPublish{ShuttingDown: false})
	m.emit(CmdTakeLock{})
}

func (m *Machine) onPods(e EvPods, now time.Time) {
	m.polling = false
	if !m.Killing {
		return
	}
	if e.List == nil {
		// No answer: ask again; the group's timer still bounds the wait.
		m.poll()
		return
	}
	active := map[types.UID]bool{}
	for _, uid := range e.List.Active {
		active[uid] = true
	}
	if m.byGroup == nil {
		// The pods to terminate are those running now, as upstream's
		// GetActivePods at the event: admission refuses any new one.
		var pods []*v1.Pod
		for i := range e.List.Pods {
			p := &e.List.Pods[i]
			if active[p.UID] && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
				pods = append(pods, p)
			}
		}
		m.byGroup = groupPods(m.groups, pods)
		m.next(0, now)
		return
	}
	m.left = slices.DeleteFunc(m.left, func(uid types.UID) bool { return !active[uid] })
	if len(m.left) == 0 {
		m.emit(CmdLog{Message: "Done waiting for all pods in group to terminate", Group: m.groups[m.group]})
		m.next(m.group+1, now)
		return
	}
	m.emit(CmdPublish{ShuttingDown: true})
	m.poll()
}

// next starts the first group from i that has pods, or ends the
// termination.
func (m *Machine) next(i int, now time.Time) {
	for ; i < len(m.groups) && len(m.byGroup[i]) == 0; i++ {
	}
	if i == len(m.groups) {
		m.finish(now)
		return
	}
	g := m.groups[i]
	m.group, m.gen, m.left = i, m.gen+1, nil
	for _, pod := range m.byGroup[i] {
		m.left = append(m.left, pod.UID)
		m.emit(CmdKill{Pod: pod, GracePeriod: gracePeriod(pod, g)})
	}
	m.emit(CmdLog{Message: "Shutdown manager killing pods of group", Group: g, Pods: uids(m.left)})
	m.emit(CmdGroupTimer{Gen: m.gen, After: time.Duration(g.GracePeriod) * time.Second})
	m.poll()
}

// finish ends the termination: the lock goes, and logind goes on.
func (m *Machine) finish(now time.Time) {
	m.Killing, m.byGroup, m.left = false, nil, nil
	m.gen++
	m.emit(CmdStoreState{Start: m.start, End: now})
	m.emit(CmdReleaseLock{})
	m.emit(CmdLog{Message: "Shutdown manager completed processing shutdown event, node will shutdown shortly"})
	if m.cancelled {
		m.cancelled = false
		m.cancel()
	}
}

func uids(l []types.UID) []string {
	out := make([]string, len(l))
	for i, u := range l {
		out[i] = string(u)
	}
	return out
}
