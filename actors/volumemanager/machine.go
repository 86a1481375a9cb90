package volumemanager

import (
	"errors"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/retry"
	"github.com/actorlet/actorlet/internal/volume"
	"github.com/actorlet/actorlet/messages"
)

// Phase is where one pod's volumes are.
type Phase int

const (
	// Mounting: not every volume is set up yet (or the last try failed);
	// the pod's containers wait.
	Mounting Phase = iota
	// Ready: every volume is set up and the pod-manager was told; content
	// volumes are refreshed while the pod runs.
	Ready
	// TearingDown: nothing of the pod runs; its volumes are being
	// unmounted and its directory removed.
	TearingDown
)

func (p Phase) String() string {
	switch p {
	case Mounting:
		return "mounting"
	case Ready:
		return "ready"
	case TearingDown:
		return "tearing down"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// Retry delays of a failed set-up, as upstream's exponential backoff of
// volume operations.
var mountBackoff = retry.Backoff{Initial: 500 * time.Millisecond, Max: 2*time.Minute + 2*time.Second}

// entry is one pod's volumes.
type entry struct {
	phase Phase
	pod   *v1.Pod
	// gen numbers set-ups, so that a retry timer or an outcome that a newer
	// one superseded is told apart.
	gen uint64
	// inFlight: a set-up runs; tearing: a teardown runs.
	inFlight, tearing bool
	// dirty: the pod changed, or a source it reads did, while a set-up
	// ran: set up again when it ends.
	dirty    bool
	failures int
	retryGen uint64
	volumes  messages.PodVolumes
	// wanted are the attachable volumes the last set-up resolved, set up
	// or not: listed in use from then on, until the teardown.
	wanted []v1.UniqueVolumeName
	// awaitsInUse: the last set-up stopped at a volume the Node does not
	// list in use yet; it is retried once the Node lists them all.
	awaitsInUse bool
	// again: the pod came back (the same UID given again by its source)
	// while its volumes were torn down; set them up once that is over.
	again *v1.Pod
}

// Machine holds every pod's volumes: which are wanted, where each pod's
// set-up stands, and which pods read which API objects. Step is its only
// mutator; it does no I/O and reads no clock.
type Machine struct {
	pods map[types.UID]*entry
	// leftover are the attachable volumes of pods whose teardown failed:
	// still mounted, so still in use, until a teardown of the pod's
	// directory succeeds.
	leftover map[types.UID][]v1.UniqueVolumeName
	// reported are the volumes the Node's status listed in use at its
	// last update. Replaced, never changed in place: set-ups running off
	// the mailbox read the map they were given.
	reported map[v1.UniqueVolumeName]bool
}

// NewMachine returns a machine that knows no pod.
func NewMachine() *Machine {
	return &Machine{pods: map[types.UID]*entry{}, leftover: map[types.UID][]v1.UniqueVolumeName{}}
}

// Event is what happens to the volume-manager; one type per kind.
type Event interface{ isEvent() }

// EvMount: the pod-manager wants the pod's volumes (again: its metadata
// changed).
type EvMount struct{ Pod *v1.Pod }

// EvUnmount: nothing of the pod runs any more.
type EvUnmount struct{ UID types.UID }

// EvSetUp: a set-up ended. InUse are the attachable volumes it resolved.
type EvSetUp struct {
	UID     types.UID
	Gen     uint64
	Volumes messages.PodVolumes
	InUse   []v1.UniqueVolumeName
	Err     error
}

// EvReportedInUse: a node status update listed these volumes in use.
type EvReportedInUse struct{ Names []v1.UniqueVolumeName }

// EvTornDown: a teardown ended.
type EvTornDown struct {
	UID types.UID
	Err error
}

// EvRetry: a retry timer fired.
type EvRetry struct {
	UID types.UID
	Gen uint64
}

// EvSourceChanged: an API object that volumes read changed.
type EvSourceChanged struct{ Kind, Namespace, Name string }

// EvResync: the periodic timer: refresh every ready pod's content volumes.
type EvResync struct{}

// EvOrphans: pod directories that no known pod owns.
type EvOrphans struct{ UIDs []types.UID }

func (EvMount) isEvent()         {}
func (EvUnmount) isEvent()       {}
func (EvSetUp) isEvent()         {}
func (EvTornDown) isEvent()      {}
func (EvRetry) isEvent()         {}
func (EvSourceChanged) isEvent() {}
func (EvResync) isEvent()        {}
func (EvOrphans) isEvent()       {}
func (EvReportedInUse) isEvent() {}

// Command is what the actor must do at the edge after a step.
type Command interface{ isCommand() }

// CmdSetUp: set up (or refresh) every volume of Pod, off the mailbox;
// numbered Gen. First: the pod's first set-up, whose API references the
// object cache must learn. Reported are the volumes the Node lists in use,
// beyond which the set-up of an attachable volume does not go; read only.
type CmdSetUp struct {
	Gen      uint64
	Pod      *v1.Pod
	First    bool
	Reported map[v1.UniqueVolumeName]bool
}

// CmdReportInUse: ask the status-reporter for a node status update now: a
// set-up waits for volumes to be listed in use.
type CmdReportInUse struct{}

// CmdReady: tell the pod-manager that the pod's volumes are ready.
type CmdReady struct {
	UID     types.UID
	Volumes messages.PodVolumes
}

// CmdFailed: a set-up failed; record the FailedMount event on the pod.
type CmdFailed struct {
	Pod *v1.Pod
	Err error
}

// CmdScheduleRetry: send EvRetry{UID, Gen} after After.
type CmdScheduleRetry struct {
	UID   types.UID
	Gen   uint64
	After time.Duration
}

// CmdUnmounted: tell the pod-manager the pod's volumes are torn down.
type CmdUnmounted struct{ UID types.UID }

// CmdTearDown: unmount the pod's volumes and remove its directory, off the
// mailbox. Pod, when known, is released from the object cache.
type CmdTearDown struct {
	UID types.UID
	Pod *v1.Pod
}

func (CmdSetUp) isCommand()         {}
func (CmdReady) isCommand()         {}
func (CmdFailed) isCommand()        {}
func (CmdScheduleRetry) isCommand() {}
func (CmdTearDown) isCommand()      {}
func (CmdUnmounted) isCommand()     {}
func (CmdReportInUse) isCommand()   {}

// Phase is the phase of the pod's volumes, and whether the machine knows
// the pod.
func (m *Machine) Phase(uid types.UID) (Phase, bool) {
	e, ok := m.pods[uid]
	if !ok {
		return 0, false
	}
	return e.phase, true
}

// Tracked reports whether the machine holds the pod's volumes in any phase.
func (m *Machine) Tracked(uid types.UID) bool { _, ok := m.pods[uid]; return ok }

// Step applies ev, which the actor handles at now, and returns the
// commands to carry out, in order. It is the only way the machine changes;
// it does no I/O and reads no clock. The volume-manager's decisions need no
// time (its retries wait on timers the actor starts), so now goes unused:
// it is there so that every reducer is stepped alike.
func (m *Machine) Step(ev Event, now time.Time) []Command {
	cmds := m.step(ev)
	for i, c := range cmds {
		if c, ok := c.(CmdSetUp); ok {
			c.Reported = m.reported
			cmds[i] = c
		}
	}
	return cmds
}

// step hands ev to its handler.
func (m *Machine) step(ev Event) []Command {
	switch e := ev.(type) {
	case EvMount:
		return m.onMount(e)
	case EvUnmount:
		return m.onUnmount(e)
	case EvSetUp:
		return m.onSetUp(e)
	case EvTornDown:
		return m.onTornDown(e)
	case EvRetry:
		return m.onRetry(e)
	case EvSourceChanged:
		return m.onSourceChanged(e)
	case EvResync:
		return m.onResync()
	case EvOrphans:
		return m.onOrphans(e)
	case EvReportedInUse:
		return m.onReportedInUse(e)
	}
	panic(fmt.Sprintf("volumemanager: unknown event %T", ev))
}

func (m *Machine) onMount(e EvMount) []Command {
	en, ok := m.pods[e.Pod.UID]
	if !ok {
		en = &entry{pod: e.Pod}
		m.pods[e.Pod.UID] = en
		return en.setUp(true)
	}
	if en.phase == TearingDown {
		en.again = e.Pod
		return nil
	}
	en.pod = e.Pod
	return en.setUpOrMarkDirty()
}

func (m *Machine) onUnmount(e EvUnmount) []Command {
	en, ok := m.pods[e.UID]
	if !ok {
		// Never set up here, or set up by an earlier actorlet whose
		// directory is still there: tear down whatever is.
		m.pods[e.UID] = &entry{phase: TearingDown, tearing: true}
		return []Command{CmdTearDown{UID: e.UID}}
	}
	en.again = nil
	if en.phase == TearingDown {
		return nil
	}
	en.phase, en.retryGen, en.dirty = TearingDown, 0, false
	if en.inFlight {
		return nil // the set-up's end starts the teardown
	}
	en.tearing = true
	return []Command{CmdTearDown{UID: e.UID, Pod: en.pod}}
}

// onSetUp takes the outcome of the current set-up: ready, retried after a
// backoff, or followed by the teardown asked for meanwhile.
func (m *Machine) onSetUp(e EvSetUp) []Command {
	en, ok := m.pods[e.UID]
	if !ok || !en.inFlight || e.Gen != en.gen {
		return nil
	}
	en.inFlight = false
	en.wanted = e.InUse
	if en.phase == TearingDown {
		en.tearing = true
		return []Command{CmdTearDown{UID: e.UID, Pod: en.pod}}
	}
	var cmds []Command
	if e.Err != nil {
		en.failures++
		cmds = append(cmds, CmdFailed{Pod: en.pod, Err: e.Err})
		en.awaitsInUse = awaitsInUse(e.Err)
		if en.awaitsInUse && m.allReported(en.wanted) {
			// Listed while it ran: go on now.
			en.dirty = true
		} else if en.awaitsInUse {
			cmds = append(cmds, CmdReportInUse{})
		}
		if en.dirty {
			return append(cmds, en.setUp(false)...)
		}
		en.gen++
		en.retryGen = en.gen
		return append(cmds, CmdScheduleRetry{UID: e.UID, Gen: en.gen, After: mountBackoff.After(en.failures)})
	}
	en.failures, en.awaitsInUse = 0, false
	en.volumes = e.Volumes
	if en.phase == Mounting {
		en.phase = Ready
		cmds = append(cmds, CmdReady{UID: e.UID, Volumes: e.Volumes})
	}
	if en.dirty {
		cmds = append(cmds, en.setUp(false)...)
	}
	return cmds
}

func (m *Machine) onTornDown(e EvTornDown) []Command {
	en, ok := m.pods[e.UID]
	if !ok || !en.tearing {
		return nil
	}
	delete(m.pods, e.UID)
	var cmds []Command
	if e.Err == nil {
		delete(m.leftover, e.UID)
		cmds = append(cmds, CmdUnmounted{UID: e.UID})
	} else if names := append(inUse(en.volumes), en.wanted...); len(names) > 0 {
		m.leftover[e.UID] = names
	}
	if en.again != nil {
		// Its source gave the pod back: set it up afresh.
		ne := &entry{pod: en.again}
		m.pods[e.UID] = ne
		cmds = append(cmds, ne.setUp(true)...)
	}
	return cmds
}

func (m *Machine) onRetry(e EvRetry) []Command {
	en, ok := m.pods[e.UID]
	if !ok || en.retryGen == 0 || e.Gen != en.retryGen || en.phase == TearingDown {
		return nil
	}
	en.retryGen = 0
	return en.setUpOrMarkDirty()
}

func (m *Machine) onSourceChanged(e EvSourceChanged) []Command {
	return m.setUpEach(func(en *entry) bool {
		return en.phase != TearingDown && reads(en.pod, e.Kind, e.Namespace, e.Name)
	})
}

func (m *Machine) onResync() []Command {
	return m.setUpEach(func(en *entry) bool {
		return en.phase == Ready && (hasContent(en.pod) || republishes(en.volumes) || expandable(en.volumes))
	})
}

// expandable: one of the volumes is a CSI PV whose claim may grow while
// the pod runs; its set-up compares the claim with its PV again, as
// upstream's resync of a pod does.
func expandable(vols messages.PodVolumes) bool {
	for _, v := range vols {
		if v.CSIExpandable {
			return true
		}
	}
	return false
}

// republishes: a CSI driver of one of the volumes asks to be called again
// periodically (requiresRepublish), as upstream's remount of such volumes
// at every sync of the pod.
func republishes(vols messages.PodVolumes) bool {
	for _, v := range vols {
		if v.CSIRepublish {
			return true
		}
	}
	return false
}

// VolumesInUse are the unique names of the attachable volumes being set up
// or set up for the pods the machine holds, until their teardown
// succeeds, sorted and each once: what node.status.volumesInUse lists, as
// upstream's, which lists a volume from the decision to mount it.
func (m *Machine) VolumesInUse() []v1.UniqueVolumeName {
	var out []v1.UniqueVolumeName
	for _, en := range m.pods {
		out = append(out, inUse(en.volumes)...)
		out = append(out, en.wanted...)
	}
	for _, names := range m.leftover {
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func inUse(vols messages.PodVolumes) []v1.UniqueVolumeName {
	var out []v1.UniqueVolumeName
	for _, v := range vols {
		if v.UniqueName != "" {
			out = append(out, v1.UniqueVolumeName(v.UniqueName))
		}
	}
	return out
}

// setUpEach sets up again, in the order of their UIDs, the pods that want.
func (m *Machine) setUpEach(want func(*entry) bool) []Command {
	var cmds []Command
	for _, uid := range m.sortedUIDs() {
		if en := m.pods[uid]; want(en) {
			cmds = append(cmds, en.setUpOrMarkDirty()...)
		}
	}
	return cmds
}

// onReportedInUse takes the volumes the Node now lists in use, and sets up
// at once the pods that waited for theirs.
func (m *Machine) onReportedInUse(e EvReportedInUse) []Command {
	reported := make(map[v1.UniqueVolumeName]bool, len(e.Names))
	for _, n := range e.Names {
		reported[n] = true
	}
	m.reported = reported
	return m.setUpEach(func(en *entry) bool {
		if !en.awaitsInUse || en.phase == TearingDown || en.inFlight || !m.allReported(en.wanted) {
			return false
		}
		en.awaitsInUse = false
		return true
	})
}

// allReported: the Node lists every one of names in use.
func (m *Machine) allReported(names []v1.UniqueVolumeName) bool {
	for _, n := range names {
		if !m.reported[n] {
			return false
		}
	}
	return true
}

// awaitsInUse: a set-up stopped at a volume not yet listed in use.
func awaitsInUse(err error) bool {
	var e *volume.NotInUseError
	return errors.As(err, &e)
}

func (m *Machine) onOrphans(e EvOrphans) []Command {
	var cmds []Command
	for _, uid := range e.UIDs {
		if _, ok := m.pods[uid]; ok {
			continue // a pod that came meanwhile, or one being torn down
		}
		m.pods[uid] = &entry{phase: TearingDown, tearing: true}
		cmds = append(cmds, CmdTearDown{UID: uid})
	}
	return cmds
}

func (m *Machine) sortedUIDs() []types.UID {
	uids := make([]types.UID, 0, len(m.pods))
	for uid := range m.pods {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids
}

func (en *entry) setUpOrMarkDirty() []Command {
	if en.inFlight {
		en.dirty = true
		return nil
	}
	return en.setUp(false)
}

func (en *entry) setUp(first bool) []Command {
	en.gen++
	en.inFlight, en.dirty, en.retryGen = true, false, 0
	return []Command{CmdSetUp{Gen: en.gen, Pod: en.pod, First: first}}
}

func hasContent(pod *v1.Pod) bool {
	for i := range pod.Spec.Volumes {
		if volume.HasContent(&pod.Spec.Volumes[i]) {
			return true
		}
	}
	return false
}

// KindPod in an EvSourceChanged names a pod whose own volume source changed.
const KindPod = "Pod"

// reads reports whether the pod's volumes show the object: a configMap or
// secret volume, or a projection of one; or the pod itself (KindPod).
func reads(pod *v1.Pod, kind, namespace, name string) bool {
	if pod == nil || pod.Namespace != namespace {
		return false
	}
	if kind == KindPod {
		// Something only this pod reads changed (its pod certificate
		// was issued).
		return pod.Name == name
	}
	for i := range pod.Spec.Volumes {
		src := &pod.Spec.Volumes[i].VolumeSource
		switch {
		case kind == "ConfigMap" && src.ConfigMap != nil && src.ConfigMap.Name == name,
			kind == "Secret" && src.Secret != nil && src.Secret.SecretName == name:
			return true
		case src.Projected != nil:
			for _, p := range src.Projected.Sources {
				if kind == "ConfigMap" && p.ConfigMap != nil && p.ConfigMap.Name == name ||
					kind == "Secret" && p.Secret != nil && p.Secret.Name == name {
					return true
				}
			}
		}
	}
	return false
}
