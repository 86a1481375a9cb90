package podmanager

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/messages"
)

// What a pod stopped to admit a critical pod is told, as upstream's
// CriticalPodAdmissionHandler says it (pkg/kubelet/preemption).
const (
	ReasonPreempting   = "Preempting"
	preemptMessage     = "Preempted in order to admit critical pod"
	preemptedCondition = "Pod was preempted by Kubelet to accommodate a critical pod."
)

// CmdCountPreemption: a pod was stopped to admit a critical pod, for
// kubelet_preemptions (by the first resource the critical pod lacked).
type CmdCountPreemption struct{ Resource v1.ResourceName }

func (CmdCountPreemption) isCommand() {}

// preemptFor makes room for a critical pod that lacks only resources, as
// upstream's CriticalPodAdmissionHandler, and holds it until there is: the
// pods already being stopped count as freed; for what they do not free, it
// stops the fewest, smallest lower-priority pods, BestEffort before
// Burstable before Guaranteed. Upstream blocks admission until they are
// killed; here the pod waits, and is admitted anew once they have stopped.
// Where no set of pods would free enough, the pod is rejected as upstream
// rejects it.
func (m *Machine) preemptFor(source string, pod *v1.Pod, short []Shortfall, now time.Time) {
	var stopping, running []candidate
	for uid, p := range m.pods {
		if !counts(p) {
			continue
		}
		c := candidate{uid: uid, pod: m.workerPod(uid, p), static: isStaticSource(p.Source)}
		if p.Phase == Running && p.Evicted == nil {
			running = append(running, c)
		} else {
			stopping = append(stopping, c)
		}
	}
	// The map's order must not pick between equal victims.
	slices.SortFunc(running, func(a, b candidate) int { return strings.Compare(string(a.uid), string(b.uid)) })
	victims, err := podsToPreempt(pod, isStaticSource(source), running, requirements(short).subtract(stopping...))
	if err != nil {
		delete(m.waiting, pod.UID)
		m.reject(pod, &Rejection{Reason: ReasonUnexpected,
			Message: "Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: " + err.Error()})
		return
	}
	for _, v := range victims {
		m.preempt(v.uid, pod, short, metav1.NewTime(now))
	}
	m.wait(source, pod, false)
	m.waiting[pod.UID].preempting = true
}

// preempt stops a running pod to admit critical, as upstream's eviction
// of it: a Warning event, and the pod Failed with reason Preempting and the
// DisruptionTarget condition, killed within its own grace period.
func (m *Machine) preempt(uid types.UID, critical *v1.Pod, short []Shortfall, now metav1.Time) {
	p := m.pods[uid]
	grace := int64(v1.DefaultTerminationGracePeriodSeconds)
	if g := p.Pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	p.Evicted = &Eviction{Reason: ReasonPreempting, Message: preemptMessage, Condition: preemptedCondition}
	p.End = &messages.TerminatePod{GracePeriod: &grace, Reason: "preempted to admit critical pod " + fullName(critical), Pod: p.Pod}
	p.Phase = Ending
	m.emit(CmdEvent{Pod: p.Pod, Type: v1.EventTypeWarning, Reason: events.PreemptContainer, Message: preemptMessage})
	m.log(zerolog.WarnLevel, "preempting pod to admit a critical pod", map[string]any{"pod": fullName(p.Pod), "criticalPod": fullName(critical),
		"insufficientResources": requirements(short).String(), "gracePeriod": grace})
	m.tell(uid, p.End)
	p.Status = evictedStatus(p.Pod, p.Status, p.Evicted, now, false)
	m.emit(CmdReportStatus{Pod: p.Pod, Status: p.Status})
	m.emit(CmdCountPreemption{Resource: short[0].Name})
	m.emit(CmdKillDeadline{UID: uid, After: killTimeout(grace)})
}

// admitPreempting admits anew the critical pods waiting for pods stopped
// to make room for them.
func (m *Machine) admitPreempting(now time.Time) {
	if len(m.waiting) == 0 {
		return
	}
	for _, w := range m.waitingInOrder() {
		if w.preempting && m.waiting[w.pod.UID] == w {
			m.admitOrWait(w.source, w.pod, false, now)
		}
	}
}

// candidate is an admitted pod a critical pod's admission may stop.
type candidate struct {
	uid    types.UID
	pod    *v1.Pod
	static bool
}

// requirement is what a critical pod still lacks of one resource.
type requirement struct {
	name   v1.ResourceName
	amount int64
}

type requirementList []requirement

func requirements(short []Shortfall) requirementList {
	out := make(requirementList, 0, len(short))
	for _, s := range short {
		out = append(out, requirement{name: s.Name, amount: s.Amount})
	}
	return out
}

// request is upstream's GetResourceRequest: one pod for pods, milli-CPU
// for cpu, units otherwise.
func request(pod *v1.Pod, name v1.ResourceName) int64 {
	if name == v1.ResourcePods {
		return 1
	}
	return amount(podRequest(pod, name), name)
}

// subtract is what would remain lacking were pods stopped.
func (l requirementList) subtract(pods ...candidate) requirementList {
	var out requirementList
	for _, r := range l {
		left := r.amount
		for _, c := range pods {
			if left -= request(c.pod, r.name); left <= 0 {
				break
			}
		}
		if left > 0 {
			out = append(out, requirement{name: r.name, amount: left})
		}
	}
	return out
}

// distance is how far stopping pod falls short of the requirements, each
// weighted as the fraction of it left unmet, so that every resource counts
// alike whatever its magnitude.
func (l requirementList) distance(pod *v1.Pod) float64 {
	d := 0.0
	for _, r := range l {
		if left := float64(r.amount - request(pod, r.name)); left > 0 {
			d += math.Pow(left/float64(r.amount), 2)
		}
	}
	return d
}

// String is as upstream prints the list, trailing comma included.
func (l requirementList) String() string {
	var b strings.Builder
	b.WriteString("[")
	for _, r := range l {
		fmt.Fprintf(&b, "(res: %v, q: %d), ", r.name, r.amount)
	}
	return b.String() + "]"
}

// podsToPreempt is upstream's getPodsToPreempt: among the pods critical
// may preempt, the Guaranteed ones needed were every BestEffort and
// Burstable pod stopped, then the Burstable ones needed beside those, then
// the BestEffort ones.
func podsToPreempt(critical *v1.Pod, static bool, pods []candidate, need requirementList) ([]candidate, error) {
	if len(need) == 0 {
		return nil, nil
	}
	var bestEffort, burstable, guaranteed []candidate
	for _, c := range pods {
		if !preemptable(critical, static, c) {
			continue
		}
		switch cgroups.QOSClass(c.pod) {
		case v1.PodQOSBestEffort:
			bestEffort = append(bestEffort, c)
		case v1.PodQOSBurstable:
			burstable = append(burstable, c)
		default:
			guaranteed = append(guaranteed, c)
		}
	}
	all := slices.Concat(bestEffort, burstable, guaranteed)
	if left := need.subtract(all...); len(left) > 0 {
		return nil, fmt.Errorf("no set of running pods found to reclaim resources: %v", left)
	}
	g, err := closest(guaranteed, need.subtract(slices.Concat(bestEffort, burstable)...))
	if err != nil {
		return nil, err
	}
	bu, err := closest(burstable, need.subtract(slices.Concat(bestEffort, g)...))
	if err != nil {
		return nil, err
	}
	be, err := closest(bestEffort, need.subtract(slices.Concat(bu, g)...))
	if err != nil {
		return nil, err
	}
	return slices.Concat(be, bu, g), nil
}

// closest is upstream's getPodsToPreemptByDistance: round by round, the
// pod closest to what is still lacking (the smaller request between equals).
func closest(pods []candidate, need requirementList) ([]candidate, error) {
	pods = slices.Clone(pods)
	var out []candidate
	for len(need) > 0 {
		if len(pods) == 0 {
			return nil, fmt.Errorf("no set of running pods found to reclaim resources: %v", need)
		}
		best, bestDist := 0, float64(len(need)+1)
		for i, c := range pods {
			d := need.distance(c.pod)
			if d < bestDist || (d == bestDist && smallerRequest(c.pod, pods[best].pod)) {
				best, bestDist = i, d
			}
		}
		need = need.subtract(pods[best])
		out = append(out, pods[best])
		pods = slices.Delete(pods, best, best+1)
	}
	return out, nil
}

// smallerRequest: a asks for less memory than b, or as much and less CPU
// (or the same of both).
func smallerRequest(a, b *v1.Pod) bool {
	for _, name := range []v1.ResourceName{v1.ResourceMemory, v1.ResourceCPU} {
		ra, rb := request(a, name), request(b, name)
		if ra != rb {
			return ra < rb
		}
	}
	return true
}

// preemptable is upstream's Preemptable: a critical pod may stop any pod
// that is not, and any pod may stop one of lower priority.
func preemptable(critical *v1.Pod, static bool, c candidate) bool {
	if isCritical(critical, static) && !isCritical(c.pod, c.static) {
		return true
	}
	p, q := critical.Spec.Priority, c.pod.Spec.Priority
	return p != nil && q != nil && *p > *q
}
