package evictionpolicy

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
)

// Config is what the manager's decisions depend on that never changes.
type Config struct {
	Thresholds []Threshold
	// PressureTransitionPeriod is how long a node condition stays set
	// after its last threshold stopped being met
	// (evictionPressureTransitionPeriod).
	PressureTransitionPeriod time.Duration
	// MaxPodGracePeriodSeconds bounds the grace period of a pod evicted
	// for a soft threshold (evictionMaxPodGracePeriod); hard thresholds
	// evict at once.
	MaxPodGracePeriodSeconds int64
}

// Manager is the eviction manager's state: when each threshold was first
// met, when each condition was last seen, the thresholds met at the last
// pass and its observations. Step is its only mutator.
type Manager struct {
	cfg Config
	// firstMet holds, by index in cfg.Thresholds, when each threshold met
	// now was first met (without a break).
	firstMet map[int]time.Time
	// conditionSeen holds when each node condition was last observed.
	conditionSeen map[v1.NodeConditionType]time.Time
	// met are the thresholds past their grace period at the last pass: they
	// stay met until their minimum reclaim is available again.
	met  []int
	last Observations
}

// NewManager returns a manager that has observed nothing.
func NewManager(cfg Config) *Manager {
	return &Manager{cfg: cfg, firstMet: map[int]time.Time{}, conditionSeen: map[v1.NodeConditionType]time.Time{}}
}

// Thresholds are the configured thresholds.
func (m *Manager) Thresholds() []Threshold { return m.cfg.Thresholds }

// Event is what happens to the manager; one type per kind.
type Event interface{ isEvent() }

// EvObserved: a pass observed the node's signals.
type EvObserved struct{ Observations Observations }

func (EvObserved) isEvent() {}

// Command is what the actor must do after a step; one type per kind.
type Command interface{ isCommand() }

// CmdPressure: publish the node conditions under pressure, in a fixed
// order (memory, disk, PID); every pass says them all.
type CmdPressure struct{ Conditions []v1.NodeConditionType }

// CmdThresholdsMet: the thresholds met now, grace periods aside (for the
// log and the dashboard).
type CmdThresholdsMet struct{ Met []Threshold }

// CmdReclaim: reclaim Reclaim's resource now: its threshold's grace
// period is over and its statistics are new since the last pass.
type CmdReclaim struct{ Reclaim *Reclaim }

func (CmdPressure) isCommand()      {}
func (CmdThresholdsMet) isCommand() {}
func (CmdReclaim) isCommand()       {}

// Reclaim is a resource to reclaim, and why.
type Reclaim struct {
	Threshold Threshold
	Resource  v1.ResourceName
	// Thresholds are every threshold that asks for reclaim now; the
	// eviction message quotes the first of Resource.
	Thresholds []Threshold
	// Hard: Threshold has no grace period, and the pod evicted for it
	// none either (Manager.PodGracePeriod).
	Hard bool
}

// conditionOrder is the order of CmdPressure's conditions.
var conditionOrder = []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure}

// Step applies ev, which the actor handles at now (for EvObserved, the
// time of the statistics), and returns the commands to carry out, in
// order. It is the only way the manager changes; it does no I/O and reads
// no clock.
func (m *Manager) Step(ev Event, now time.Time) []Command {
	switch e := ev.(type) {
	case EvObserved:
		return m.onObserved(e.Observations, now)
	}
	panic(fmt.Sprintf("evictionpolicy: unknown event %T", ev))
}

// onObserved is one pass of upstream's synchronize, up to the choice of the
// resource to reclaim: the thresholds met (a threshold met before stays met
// until its minimum reclaim is available), the node conditions (each held
// for the pressure transition period after it was last seen), and the
// thresholds past their grace period whose statistics are new.
func (m *Manager) onObserved(obs Observations, now time.Time) []Command {
	metNow := m.thresholdsMetNow(obs)
	m.track(metNow, now)
	var met []Threshold
	for _, i := range metNow {
		met = append(met, m.cfg.Thresholds[i])
	}
	cmds := []Command{CmdPressure{Conditions: m.conditions(now)}, CmdThresholdsMet{Met: met}}
	if fresh := m.fresh(obs); len(fresh) > 0 {
		cmds = append(cmds, CmdReclaim{Reclaim: m.reclaim(fresh)})
	}
	return cmds
}

// thresholdsMetNow are the indexes of the thresholds obs meets, and of
// those met at the last pass whose minimum reclaim is not available yet,
// in order.
func (m *Manager) thresholdsMetNow(obs Observations) []int {
	metNow := m.thresholdsMet(allIndexes(len(m.cfg.Thresholds)), obs, false)
	if len(m.met) > 0 {
		for _, i := range m.thresholdsMet(m.met, obs, true) {
			if !slices.Contains(metNow, i) {
				metNow = append(metNow, i)
			}
		}
	}
	slices.Sort(metNow)
	return metNow
}

// track records when each threshold met now was first met and its
// condition last seen, and which are past their grace period (m.met).
func (m *Manager) track(metNow []int, now time.Time) {
	first := map[int]time.Time{}
	for _, i := range metNow {
		at, ok := m.firstMet[i]
		if !ok {
			at = now
		}
		first[i] = at
		if c := m.cfg.Thresholds[i].Signal.Condition(); c != "" {
			m.conditionSeen[c] = now
		}
	}
	var graced []int
	for _, i := range metNow {
		if now.Sub(first[i]) >= m.cfg.Thresholds[i].GracePeriod {
			graced = append(graced, i)
		}
	}
	m.firstMet, m.met = first, graced
}

// conditions are the node conditions seen within the pressure transition
// period, in conditionOrder.
func (m *Manager) conditions(now time.Time) []v1.NodeConditionType {
	var out []v1.NodeConditionType
	for _, c := range conditionOrder {
		if at, ok := m.conditionSeen[c]; ok && now.Sub(at) < m.cfg.PressureTransitionPeriod || ok && at.Equal(now) {
			out = append(out, c)
		}
	}
	return out
}

// fresh are the thresholds past their grace period whose statistics
// changed since the last pass: the same figures again would evict a second
// pod for one shortage. obs becomes the last pass's.
func (m *Manager) fresh(obs Observations) []int {
	var fresh []int
	for _, i := range m.met {
		s := m.cfg.Thresholds[i].Signal
		o := obs[s]
		l, seen := m.last[s]
		if !seen || o.Time.IsZero() || o.Time.After(l.Time) {
			fresh = append(fresh, i)
		}
	}
	m.last = obs
	return fresh
}

// reclaim is what to reclaim for the fresh thresholds: memory first, as
// upstream's byEvictionPriority.
func (m *Manager) reclaim(fresh []int) *Reclaim {
	slices.SortStableFunc(fresh, func(a, b int) int {
		ma, mb := m.cfg.Thresholds[a].Signal.Condition() == v1.NodeMemoryPressure, m.cfg.Thresholds[b].Signal.Condition() == v1.NodeMemoryPressure
		switch {
		case ma && !mb:
			return -1
		case mb && !ma:
			return 1
		}
		return 0
	})
	r := &Reclaim{}
	for _, i := range fresh {
		r.Thresholds = append(r.Thresholds, m.cfg.Thresholds[i])
	}
	r.Threshold = r.Thresholds[0]
	r.Resource = r.Threshold.Signal.Resource()
	r.Hard = r.Threshold.Hard()
	return r
}

// StillMet reports whether t is still met by obs once its minimum reclaim
// is counted: after the node reclaimed resources of its own (image and
// container GC), no pod need go when it is not.
func StillMet(t Threshold, obs Observations) bool {
	o, ok := obs[t.Signal]
	return ok && met(t, o, true)
}

func (m *Manager) thresholdsMet(idx []int, obs Observations, enforceMinReclaim bool) []int {
	var out []int
	for _, i := range idx {
		t := m.cfg.Thresholds[i]
		o, ok := obs[t.Signal]
		if ok && met(t, o, enforceMinReclaim) {
			out = append(out, i)
		}
	}
	return out
}

// met: less is available than the threshold (plus its minimum reclaim when
// enforced) asks for.
func met(t Threshold, o Observation, enforceMinReclaim bool) bool {
	q := t.Value.Of(o.Capacity)
	if enforceMinReclaim && t.MinReclaim != nil {
		q.Add(t.MinReclaim.Of(o.Capacity))
	}
	return q.Cmp(o.Available) > 0
}

func allIndexes(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// PodGracePeriod is the grace period of a pod evicted for r, as upstream:
// none for a hard threshold; for a soft one evictionMaxPodGracePeriod, or
// the pod's terminationGracePeriodSeconds when shorter (or negative
// evictionMaxPodGracePeriod).
func (m *Manager) PodGracePeriod(r *Reclaim, pod *v1.Pod) int64 {
	if r.Hard {
		return 0
	}
	own := int64(30) // the API server's default
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		own = *pod.Spec.TerminationGracePeriodSeconds
	}
	if m.cfg.MaxPodGracePeriodSeconds < 0 {
		// As the flag says: negative defers to the pod's own.
		return own
	}
	return min(m.cfg.MaxPodGracePeriodSeconds, own)
}
