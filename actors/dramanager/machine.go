package dramanager

import (
	"fmt"
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	drapb "k8s.io/kubelet/pkg/apis/dra/v1"

	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/retry"
)

// prepareBackoff spaces the tries of a pod whose claims failed to
// prepare, as upstream's pod worker retries a failed sync.
var prepareBackoff = retry.Backoff{Initial: time.Second, Max: 10 * time.Second}

// claim is a claim info cache entry: the state checkpointed, and whether
// it is prepared (upstream's prepared flag, not checkpointed: a claim
// read back from the checkpoint was prepared) or being unprepared.
type claim struct {
	dra.ClaimInfoState
	prepared, unpreparing bool
}

func key(namespace, name string) string { return namespace + "/" + name }

// request is what a pod asks: its claims prepared (pod set), or
// unprepared (pod nil; namespace and names say which claims).
type request struct {
	pod       *v1.Pod
	namespace string
	names     []string
	backoff   retry.Backoff
	// waiting: a retry timer runs; the request is not queued meanwhile.
	waiting bool
}

// Machine is the dra-manager's state: the claim info cache and the pods'
// requests. Operations run one at a time, in the order asked, so that a
// claim is never prepared and unprepared at once. Step is its only
// mutator; it does no I/O and reads no clock.
type Machine struct {
	claims   map[string]*claim
	requests map[types.UID]*request
	queue    []types.UID
	// busy is the pod whose operation is in flight, "" for none.
	busy types.UID
	// batches are the claims of the operation in flight, by driver.
	batches map[string][]*drapb.Claim
}

// NewMachine returns a machine whose cache holds the checkpoint's claims,
// each prepared.
func NewMachine(loaded []dra.ClaimInfoState) *Machine {
	m := &Machine{claims: map[string]*claim{}, requests: map[types.UID]*request{}}
	for _, s := range loaded {
		if s.PodUIDs == nil {
			s.PodUIDs = map[string]struct{}{}
		}
		m.claims[key(s.Namespace, s.ClaimName)] = &claim{ClaimInfoState: s, prepared: true}
	}
	return m
}

// Event is what happens to the dra-manager; one type per kind.
type Event interface{ isEvent() }

// EvPrepare: a pod's worker asks for its claims (again: its spec or
// status changed, or it restarted).
type EvPrepare struct{ Pod *v1.Pod }

// EvUnprepare: nothing of the pod runs any more.
type EvUnprepare struct{ Pod *v1.Pod }

// EvActive: the pods with a live worker, once the pod sources are ready:
// a pod in the cache that is not among them is unprepared, as upstream's
// reconcile loop.
type EvActive struct{ UIDs []types.UID }

// EvValidated: the pod's claims were read from the API and checked
// (Claims, one per claim to prepare), or Err says why not.
type EvValidated struct {
	UID    types.UID
	Claims []dra.ClaimInfoState
	Err    error
}

// EvCalled: the drivers' NodePrepareResources or NodeUnprepareResources
// calls of the operation in flight ended. Devices are what each driver
// prepared, by claim UID then driver.
type EvCalled struct {
	UID     types.UID
	Devices map[types.UID]map[string][]dra.Device
	Err     error
}

// EvSaved: the checkpoint written at the end of the operation in flight.
type EvSaved struct {
	UID types.UID
	Err error
}

// EvRetry: a pod's retry timer fired.
type EvRetry struct{ UID types.UID }

func (EvPrepare) isEvent()   {}
func (EvUnprepare) isEvent() {}
func (EvActive) isEvent()    {}
func (EvValidated) isEvent() {}
func (EvCalled) isEvent()    {}
func (EvSaved) isEvent()     {}
func (EvRetry) isEvent()     {}

// Command is what the actor carries out.
type Command interface{ isCommand() }

// CmdValidate: read the pod's claims from the API and check them, as
// upstream's validation pass: each allocated and reserved for the pod, a
// claim made from a template the pod's own, every driver to call
// registered.
type CmdValidate struct{ Pod *v1.Pod }

// CmdCall: write the checkpoint State (the claims about to be prepared or
// unprepared are tracked in it first), then call each driver with its
// batch: NodePrepareResources when Prepare, else NodeUnprepareResources.
type CmdCall struct {
	UID     types.UID
	Prepare bool
	State   []dra.ClaimInfoState
	Batches map[string][]*drapb.Claim
}

// CmdSave: write the checkpoint State.
type CmdSave struct {
	UID   types.UID
	State []dra.ClaimInfoState
}

// CmdPrepared: the pod's claims are prepared; its containers get Devices,
// the CDI device IDs by container name.
type CmdPrepared struct {
	UID     types.UID
	Devices map[string][]string
}

// CmdPrepareFailed: preparing the pod's claims failed; upstream's event
// on the pod, and a retry after After.
type CmdPrepareFailed struct {
	Pod   *v1.Pod
	Err   error
	After time.Duration
}

// CmdUnprepared: the pod's claims are unprepared (or never were).
type CmdUnprepared struct{ UID types.UID }

// CmdUnprepareFailed: unpreparing failed; a retry after After.
type CmdUnprepareFailed struct {
	UID   types.UID
	Err   error
	After time.Duration
}

// CmdSkipped: the drivers whose node call the allocation of a claim of
// the operation skips (SkipNodeOperations), once per claim, as upstream
// counts them: in NodePrepareResources when Prepare, else in
// NodeUnprepareResources.
type CmdSkipped struct {
	Prepare bool
	Drivers []string
}

func (CmdValidate) isCommand()        {}
func (CmdSkipped) isCommand()         {}
func (CmdCall) isCommand()            {}
func (CmdSave) isCommand()            {}
func (CmdPrepared) isCommand()        {}
func (CmdPrepareFailed) isCommand()   {}
func (CmdUnprepared) isCommand()      {}
func (CmdUnprepareFailed) isCommand() {}

// Step applies ev at now and returns the commands to carry out, in order.
func (m *Machine) Step(ev Event, now time.Time) []Command {
	var cmds []Command
	switch ev := ev.(type) {
	case EvPrepare:
		cmds = m.ask(ev.Pod.UID, &request{pod: ev.Pod, backoff: prepareBackoff})
	case EvUnprepare:
		cmds = m.onUnprepare(ev.Pod)
	case EvActive:
		cmds = m.onActive(ev.UIDs)
	case EvValidated:
		cmds = m.onValidated(ev, now)
	case EvCalled:
		cmds = m.onCalled(ev, now)
	case EvSaved:
		cmds = m.onSaved(ev, now)
	case EvRetry:
		if r := m.requests[ev.UID]; r != nil && r.waiting {
			r.waiting = false
			m.queue = append(m.queue, ev.UID)
		}
	default:
		panic(fmt.Sprintf("dramanager: unknown event %T", ev))
	}
	return append(cmds, m.next()...)
}

// ask records r as the pod's request, replacing one not yet started (the
// latest spec wins; an unprepare supersedes a prepare), and queues it.
func (m *Machine) ask(uid types.UID, r *request) []Command {
	old := m.requests[uid]
	if old != nil && old.pod != nil && r.pod != nil {
		r.backoff = old.backoff // a newer spec of a failing pod keeps its pace
	}
	m.requests[uid] = r
	if old != nil && (old.waiting || m.busy == uid || slices.Contains(m.queue, uid)) {
		if old.waiting && r.pod == nil {
			// Unpreparing a pod that failed to prepare need not wait.
			m.queue = append(m.queue, uid)
		}
		return nil
	}
	m.queue = append(m.queue, uid)
	return nil
}

// onUnprepare: the claims to unprepare are those the cache holds for the
// pod, or, when it holds none (its checkpoint was lost), those its spec
// names, as upstream's.
func (m *Machine) onUnprepare(pod *v1.Pod) []Command {
	var names []string
	for _, c := range m.claims {
		if _, ok := c.PodUIDs[string(pod.UID)]; ok {
			names = append(names, c.ClaimName)
		}
	}
	if len(names) == 0 {
		for _, pc := range dra.PodClaims(pod) {
			if n, _, err := dra.ClaimName(pod, &pc); err == nil && n != nil {
				names = append(names, *n)
			}
		}
	}
	slices.Sort(names)
	return m.ask(pod.UID, &request{namespace: pod.Namespace, names: names, backoff: prepareBackoff})
}

func (m *Machine) onActive(uids []types.UID) []Command {
	active := map[string]bool{}
	for _, u := range uids {
		active[string(u)] = true
	}
	gone := map[types.UID]*request{}
	for _, k := range slices.Sorted(maps.Keys(m.claims)) {
		c := m.claims[k]
		for uid := range c.PodUIDs {
			if active[uid] {
				continue
			}
			r := gone[types.UID(uid)]
			if r == nil {
				r = &request{namespace: c.Namespace, backoff: prepareBackoff}
				gone[types.UID(uid)] = r
			}
			r.names = append(r.names, c.ClaimName)
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(gone)) {
		if r := m.requests[uid]; r != nil && r.pod == nil {
			continue // being unprepared already
		}
		m.ask(uid, gone[uid])
	}
	return nil
}

// next starts the first queued request if nothing runs.
func (m *Machine) next() []Command {
	for m.busy == "" && len(m.queue) > 0 {
		uid := m.queue[0]
		m.queue = m.queue[1:]
		r := m.requests[uid]
		if r == nil || r.waiting {
			continue
		}
		m.busy = uid
		if r.pod != nil {
			return []Command{CmdValidate{Pod: r.pod}}
		}
		if cmds := m.startUnprepare(uid, r); cmds != nil {
			return cmds
		}
	}
	return nil
}

func (m *Machine) onValidated(ev EvValidated, now time.Time) []Command {
	r := m.requests[ev.UID]
	if m.busy != ev.UID || r == nil {
		return nil
	}
	if r.pod == nil {
		// An unprepare came meanwhile: it goes first.
		m.busy = ""
		m.queue = append([]types.UID{ev.UID}, m.queue...)
		return nil
	}
	if ev.Err != nil {
		return m.prepareFailed(r, ev.Err, now)
	}
	// Everything is read and checked: the cache takes the pod. Almost
	// nothing can fail from here on.
	batches := map[string][]*drapb.Claim{}
	var skipped []string
	for _, info := range ev.Claims {
		k := key(info.Namespace, info.ClaimName)
		c := m.claims[k]
		switch {
		case c == nil:
			info.PodUIDs = map[string]struct{}{}
			c = &claim{ClaimInfoState: info}
			m.claims[k] = c
		case c.ClaimUID != info.ClaimUID:
			return m.prepareFailed(r, fmt.Errorf("old ResourceClaim with same name %s and different UID %s still exists (previous pod force-deleted?!)", info.ClaimName, c.ClaimUID), now)
		case c.unpreparing:
			return m.prepareFailed(r, fmt.Errorf("ResourceClaim %s is being unprepared", info.ClaimName), now)
		}
		c.PodUIDs[string(ev.UID)] = struct{}{}
		if c.prepared {
			continue
		}
		pc := &drapb.Claim{Namespace: c.Namespace, Uid: string(c.ClaimUID), Name: c.ClaimName}
		for _, d := range slices.Sorted(maps.Keys(c.DriverState)) {
			if c.DriverState[d].Skips(resourceapi.SkipNodeOperationNodePrepareResources) {
				skipped = append(skipped, d)
				continue
			}
			batches[d] = append(batches[d], pc)
		}
	}
	m.batches = batches
	return append(skips(true, skipped), CmdCall{UID: ev.UID, Prepare: true, State: m.State(), Batches: batches})
}

func (m *Machine) onCalled(ev EvCalled, now time.Time) []Command {
	r := m.requests[ev.UID]
	if m.busy != ev.UID || r == nil {
		return nil
	}
	if m.batches == nil {
		// Unprepared: the claims go from the cache.
		if ev.Err != nil {
			return m.unprepareFailed(ev.UID, r, ev.Err, now)
		}
		for _, k := range slices.Sorted(maps.Keys(m.claims)) {
			if m.claims[k].unpreparing {
				delete(m.claims, k)
			}
		}
		return []Command{CmdSave{UID: ev.UID, State: m.State()}}
	}
	// The drivers' answers are authoritative for each (claim, driver):
	// what a failed try had recorded is replaced.
	for claimUID, byDriver := range ev.Devices {
		for _, c := range m.claims {
			if c.ClaimUID != claimUID {
				continue
			}
			for d, devs := range byDriver {
				s := c.DriverState[d]
				s.Devices = devs
				c.DriverState[d] = s
			}
		}
	}
	if ev.Err != nil {
		m.batches = nil
		return m.prepareFailed(r, ev.Err, now)
	}
	for _, claims := range m.batches {
		for _, pc := range claims {
			m.claims[key(pc.Namespace, pc.Name)].prepared = true
		}
	}
	m.batches = nil
	return []Command{CmdSave{UID: ev.UID, State: m.State()}}
}

func (m *Machine) onSaved(ev EvSaved, now time.Time) []Command {
	r := m.requests[ev.UID]
	if m.busy != ev.UID || r == nil {
		return nil
	}
	if ev.Err != nil {
		err := fmt.Errorf("checkpoint ResourceClaim state: %w", ev.Err)
		if r.pod == nil {
			return m.unprepareFailed(ev.UID, r, err, now)
		}
		return m.prepareFailed(r, err, now)
	}
	m.busy = ""
	delete(m.requests, ev.UID)
	if r.pod == nil {
		return []Command{CmdUnprepared{UID: ev.UID}}
	}
	devices, err := m.Devices(r.pod)
	if err != nil {
		return m.prepareFailed(r, err, now)
	}
	return []Command{CmdPrepared{UID: ev.UID, Devices: devices}}
}

// startUnprepare marks the pod's claims that no other pod uses as being
// unprepared and calls their drivers; a claim other pods still use only
// loses the pod's reference. Nothing to call: the pod is done.
func (m *Machine) startUnprepare(uid types.UID, r *request) []Command {
	batches := map[string][]*drapb.Claim{}
	var skipped []string
	changed := false
	for _, name := range r.names {
		c := m.claims[key(r.namespace, name)]
		if c == nil {
			continue
		}
		if _, ok := c.PodUIDs[string(uid)]; !ok {
			continue // never prepared for this pod: nothing of it to undo
		}
		if len(c.PodUIDs) > 1 {
			delete(c.PodUIDs, string(uid))
			changed = true
			continue
		}
		c.unpreparing = true
		pc := &drapb.Claim{Namespace: c.Namespace, Uid: string(c.ClaimUID), Name: c.ClaimName}
		for _, d := range slices.Sorted(maps.Keys(c.DriverState)) {
			if c.DriverState[d].Skips(resourceapi.SkipNodeOperationNodeUnprepareResources) {
				skipped = append(skipped, d)
				continue
			}
			batches[d] = append(batches[d], pc)
		}
	}
	m.batches = nil
	cmds := skips(false, skipped)
	if len(batches) > 0 {
		return append(cmds, CmdCall{UID: uid, State: m.State(), Batches: batches})
	}
	for _, k := range slices.Sorted(maps.Keys(m.claims)) {
		if m.claims[k].unpreparing {
			delete(m.claims, k)
			changed = true
		}
	}
	if changed {
		return append(cmds, CmdSave{UID: uid, State: m.State()})
	}
	m.busy = ""
	delete(m.requests, uid)
	return append(cmds, CmdUnprepared{UID: uid})
}

// skips is the CmdSkipped of drivers, none when no call was skipped.
func skips(prepare bool, drivers []string) []Command {
	if len(drivers) == 0 {
		return nil
	}
	return []Command{CmdSkipped{Prepare: prepare, Drivers: drivers}}
}

func (m *Machine) prepareFailed(r *request, err error, now time.Time) []Command {
	m.busy = ""
	r.waiting = true
	return []Command{CmdPrepareFailed{Pod: r.pod, Err: err, After: r.backoff.Fail(now, now)}}
}

func (m *Machine) unprepareFailed(uid types.UID, r *request, err error, now time.Time) []Command {
	m.busy = ""
	r.waiting = true
	return []Command{CmdUnprepareFailed{UID: uid, Err: err, After: r.backoff.Fail(now, now)}}
}

// State is the claim info cache as checkpointed, sorted by claim.
func (m *Machine) State() []dra.ClaimInfoState {
	out := make([]dra.ClaimInfoState, 0, len(m.claims))
	for _, k := range slices.Sorted(maps.Keys(m.claims)) {
		s := m.claims[k].ClaimInfoState
		s.PodUIDs = maps.Clone(s.PodUIDs)
		s.DriverState = maps.Clone(s.DriverState)
		out = append(out, s)
	}
	return out
}

// Devices are the CDI device IDs of each of the pod's containers, from
// the prepared claims its resources.claims name, as upstream's
// GetResources.
func (m *Machine) Devices(pod *v1.Pod) (map[string][]string, error) {
	out := map[string][]string{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			byClaim, err := dra.ContainerClaims(pod, &cs[i])
			if err != nil {
				return nil, err
			}
			for _, name := range slices.Sorted(maps.Keys(byClaim)) {
				c := m.claims[key(pod.Namespace, name)]
				if c == nil {
					return nil, fmt.Errorf("internal error: unable to get claim info for ResourceClaim %s in namespace %s", name, pod.Namespace)
				}
				for _, req := range byClaim[name] {
					out[cs[i].Name] = append(out[cs[i].Name], c.CDIDevices(req)...)
				}
			}
		}
	}
	return out, nil
}

// InUse counts the prepared claims, all of them and by driver, as
// upstream's claimsInUse: a claim counts once in the total and once for
// each of its drivers.
func (m *Machine) InUse() (total int, byDriver map[string]int) {
	byDriver = map[string]int{}
	for _, c := range m.claims {
		if !c.prepared {
			continue
		}
		total++
		for d := range c.DriverState {
			byDriver[d]++
		}
	}
	return total, byDriver
}

// HasPod tells whether a claim in the cache references the pod.
func (m *Machine) HasPod(uid types.UID) bool {
	for _, c := range m.claims {
		if _, ok := c.PodUIDs[string(uid)]; ok {
			return true
		}
	}
	return false
}

// Claim is the prepared claim of the cache named namespace/name.
func (m *Machine) Claim(namespace, name string) (dra.ClaimInfoState, bool) {
	c := m.claims[key(namespace, name)]
	if c == nil || !c.prepared {
		return dra.ClaimInfoState{}, false
	}
	return c.ClaimInfoState, true
}
