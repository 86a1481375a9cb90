package podmanager

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/actorlet/actorlet/internal/atomicfile"
	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/messages"
)

// PodAllocation is what the node admitted for one pod: each container's
// requests and limits (app and init containers by name, which are unique
// across both), as upstream's allocation manager keeps them, and the
// pod-level resources under podLevel.
type PodAllocation map[string]v1.ResourceRequirements

// podLevel is the key of the pod-level resources (spec.resources) in a
// PodAllocation: no container is named "".
const podLevel = ""

// Allocations are the admitted pods' allocations, by UID.
type Allocations map[types.UID]PodAllocation

// AllocatedPodsStateFile is the checkpoint of the allocations under the
// root directory, upstream's file in upstream's format.
const AllocatedPodsStateFile = "allocated_pods_state"

// allocationOf is the allocation that admits pod as its spec says.
func allocationOf(pod *v1.Pod) PodAllocation {
	a := PodAllocation{}
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			a[c.Name] = v1.ResourceRequirements{Requests: c.Resources.Requests.DeepCopy(), Limits: c.Resources.Limits.DeepCopy()}
		}
	}
	if r := pod.Spec.Resources; r != nil {
		a[podLevel] = v1.ResourceRequirements{Requests: r.Requests.DeepCopy(), Limits: r.Limits.DeepCopy()}
	}
	return a
}

// AllocatedPod is pod with its containers' resources replaced by alloc's,
// as upstream's UpdatePodFromAllocation: the pod the node runs while a
// resize waits. It returns pod itself when nothing differs.
func AllocatedPod(pod *v1.Pod, alloc PodAllocation) *v1.Pod {
	if alloc == nil || sameAllocation(allocationOf(pod), alloc) {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			if r, ok := alloc[cs[i].Name]; ok {
				cs[i].Resources.Requests = r.Requests.DeepCopy()
				cs[i].Resources.Limits = r.Limits.DeepCopy()
			}
		}
	}
	if r, ok := alloc[podLevel]; ok && out.Spec.Resources != nil {
		out.Spec.Resources.Requests, out.Spec.Resources.Limits = r.Requests.DeepCopy(), r.Limits.DeepCopy()
	}
	return out
}

func sameAllocation(a, b PodAllocation) bool {
	if len(a) != len(b) {
		return false
	}
	for name, ra := range a {
		rb, ok := b[name]
		if !ok || !sameList(ra.Requests, rb.Requests) || !sameList(ra.Limits, rb.Limits) {
			return false
		}
	}
	return true
}

// sameList compares quantities by value: 1000m and 1 are one CPU.
func sameList(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 {
			return false
		}
	}
	return true
}

// ResizePending is why a resize waits, as upstream's PodResizePending
// condition: v1.PodReasonInfeasible (it can never fit this node) or
// v1.PodReasonDeferred (not now).
type ResizePending struct {
	Reason, Message string
	// Generation is the pod generation the decision was made for.
	Generation int64
	Since      time.Time
}

// decideResize is the allocation manager's handlePodResourcesResize for a
// pod whose desired resources differ from its allocation: the pod fits
// beside the others' allocations (nil: allocate the desired resources), or
// it waits. A pod that alone needs more CPU or memory than the node's
// allocatable can never fit (Infeasible, with the message of upstream's
// capacity check; newer API servers refuse such a resize already);
// otherwise the message is the admission predicate's, and the resize is
// Deferred until other pods make room.
func decideResize(desired *v1.Pod, alloc PodAllocation, others []*v1.Pod, allocatable v1.ResourceList) *ResizePending {
	if a, d := alloc[podLevel], allocationOf(desired)[podLevel]; !sameList(a.Requests, d.Requests) || !sameList(a.Limits, d.Limits) {
		// Pod-level resources are not resized in place here: refused as
		// upstream's kubelet refuses them without the feature.
		return &ResizePending{Reason: v1.PodReasonInfeasible, Message: "InPlacePodLevelResourcesVerticalScaling is disabled"}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		requested := podRequestOf(desired, name)
		if requested.Cmp(capacity) > 0 {
			return &ResizePending{Reason: v1.PodReasonInfeasible, Message: fmt.Sprintf(
				"Node didn't have enough capacity: %s, requested: %d, capacity: %d",
				name, amount(requested, name), amount(capacity, name))}
		}
		used := resource.Quantity{}
		for _, p := range others {
			if p.UID != desired.UID {
				used.Add(podRequestOf(p, name))
			}
		}
		total := used.DeepCopy()
		total.Add(requested)
		if total.Cmp(capacity) > 0 {
			return &ResizePending{Reason: v1.PodReasonDeferred, Message: fmt.Sprintf(
				"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, amount(requested, name), amount(used, name), amount(capacity, name))}
		}
	}
	return nil
}

// podRequestOf is the pod's effective request of one resource (containers,
// init containers and overhead), as upstream's resource helpers compute it.
func podRequestOf(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	reqs := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	return reqs[name]
}

// resizeCondition is the PodResizePending condition of a pending resize.
func resizeCondition(r *ResizePending) v1.PodCondition {
	return v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: r.Reason, Message: r.Message,
		ObservedGeneration: r.Generation, LastProbeTime: metaTime(r.Since), LastTransitionTime: metaTime(r.Since)}
}

// withResizePending is status with the pod-manager's PodResizePending
// condition in place of any the status carried.
func withResizePending(status v1.PodStatus, r *ResizePending) v1.PodStatus {
	out := status
	out.Conditions = slices.DeleteFunc(slices.Clone(status.Conditions), func(c v1.PodCondition) bool { return c.Type == v1.PodResizePending })
	if r != nil {
		out.Conditions = append(out.Conditions, resizeCondition(r))
	}
	return out
}

// checkpointInfo is upstream's PodResourceCheckpointInfo.
type checkpointInfo struct {
	Entries map[types.UID]podResourceInfo `json:"entries,omitempty"`
}

// podResourceInfo is upstream's PodResourceInfo, whose fields have no JSON
// tags (its emptyDir volume limits, which actorlet does not keep, aside).
type podResourceInfo struct {
	ContainerResources map[string]v1.ResourceRequirements
	PodLevelResources  *v1.ResourceRequirements
}

// legacyAllocations is the checkpoint's content as earlier actorlets wrote
// it, read so that an upgraded node keeps its allocations.
type legacyAllocations struct {
	Entries  Allocations `json:"entries"`
	Checksum uint32      `json:"checksum"`
}

// LoadAllocations reads the checkpoint of the allocations under rootDir,
// in upstream's format or an earlier actorlet's. No file is no
// allocation; a corrupt one is an error (the caller logs it and starts
// without: upstream drops a checkpoint whose checksum fails).
func LoadAllocations(rootDir string) (Allocations, error) {
	path := filepath.Join(rootDir, AllocatedPodsStateFile)
	raw, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return Allocations{}, nil
	}
	if err != nil {
		return Allocations{}, fmt.Errorf("read the pods' allocations: %w", err)
	}
	var cp podruntime.Checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil {
		return Allocations{}, fmt.Errorf("pods' allocations in %s: %w", path, err)
	}
	if cp.Data == "" {
		return loadLegacyAllocations(path, raw)
	}
	if podruntime.CheckpointChecksum(cp.Data) != cp.Checksum {
		return Allocations{}, fmt.Errorf("pods' allocations in %s: checksum mismatch", path)
	}
	var info checkpointInfo
	if err := json.Unmarshal([]byte(cp.Data), &info); err != nil {
		return Allocations{}, fmt.Errorf("pods' allocations in %s: %w", path, err)
	}
	all := Allocations{}
	for uid, p := range info.Entries {
		a := PodAllocation{}
		for name, r := range p.ContainerResources {
			a[name] = r
		}
		if p.PodLevelResources != nil {
			a[podLevel] = *p.PodLevelResources
		}
		all[uid] = a
	}
	return all, nil
}

// loadLegacyAllocations reads an earlier actorlet's checkpoint.
func loadLegacyAllocations(path string, raw []byte) (Allocations, error) {
	var f legacyAllocations
	if err := json.Unmarshal(raw, &f); err != nil {
		return Allocations{}, fmt.Errorf("pods' allocations in %s: %w", path, err)
	}
	entries, _ := json.Marshal(f.Entries)
	if crc32.ChecksumIEEE(entries) != f.Checksum {
		return Allocations{}, fmt.Errorf("pods' allocations in %s: checksum mismatch", path)
	}
	if f.Entries == nil {
		f.Entries = Allocations{}
	}
	return f.Entries, nil
}

// SaveAllocations writes the checkpoint, in upstream's format, atomically
// and durably (atomicfile), so that a crash or a power cut leaves the old
// or the new one.
func SaveAllocations(rootDir string, all Allocations) error {
	info := checkpointInfo{Entries: map[types.UID]podResourceInfo{}}
	for uid, a := range all {
		p := podResourceInfo{ContainerResources: map[string]v1.ResourceRequirements{}}
		for name, r := range a {
			if name == podLevel {
				p.PodLevelResources = &r
				continue
			}
			p.ContainerResources[name] = r
		}
		info.Entries[uid] = p
	}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(podruntime.NewCheckpoint(data))
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(rootDir, AllocatedPodsStateFile), raw, 0o600); err != nil {
		return fmt.Errorf("write the pods' allocations: %w", err)
	}
	return nil
}

// resizesDiffer reports whether a pending decision changed.
func resizesDiffer(a, b *ResizePending) bool {
	if a == nil || b == nil {
		return a != b
	}
	return a.Reason != b.Reason || a.Message != b.Message || a.Generation != b.Generation
}

func metaTime(t time.Time) metav1.Time { return metav1.NewTime(t) }

// resize brings a running pod's allocation toward its spec: a resize that
// fits is allocated (the worker then applies it), one that does not waits
// with its reason. It reports whether the allocation changed.
func (m *Machine) resize(uid types.UID, p *PodState, now time.Time) bool {
	if p.Phase != Running || p.Pod == nil {
		return false
	}
	desired := allocationOf(p.Pod)
	prev := m.pending[uid]
	if alloc, ok := m.alloc[uid]; ok && sameAllocation(alloc, desired) {
		if prev != nil {
			// The spec went back to what is allocated.
			delete(m.pending, uid)
			m.reportWithResize(uid, p)
		}
		return false
	}
	r := decideResize(p.Pod, m.alloc[uid], m.admittedExcept(uid), m.cfg.Allocatable)
	if r == nil {
		m.alloc[uid] = desired
		delete(m.pending, uid)
		m.saveAllocations()
		m.log(zerolog.InfoLevel, "pod resize allocated", map[string]any{"pod": fullName(p.Pod), "generation": p.Pod.Generation})
		m.emit(CmdEvent{Pod: p.Pod, Type: v1.EventTypeNormal, Reason: events.ResizeStarted,
			Message: podruntime.ResizeMessage("Pod resize started", p.Pod, p.Pod.Generation, "")})
		if prev != nil {
			m.reportWithResize(uid, p)
		}
		return true
	}
	r.Generation, r.Since = p.Pod.Generation, now
	if prev != nil && prev.Reason == r.Reason {
		r.Since = prev.Since
	}
	if resizesDiffer(prev, r) {
		m.pending[uid] = r
		m.log(zerolog.WarnLevel, "pod resize "+r.Reason+": "+r.Message, map[string]any{"pod": fullName(p.Pod), "generation": p.Pod.Generation})
		m.reportWithResize(uid, p)
		reason := events.ResizeDeferred
		if r.Reason == v1.PodReasonInfeasible {
			reason = events.ResizeInfeasible
		}
		m.emit(CmdEvent{Pod: p.Pod, Type: v1.EventTypeWarning, Reason: reason,
			Message: podruntime.ResizeMessage("Pod resize "+r.Reason, p.Pod, p.Pod.Generation, r.Message)})
	}
	return false
}

// retryDeferred gives the deferred resizes another chance once resources
// were freed, the highest priority first, as upstream's RetryPendingResizes.
func (m *Machine) retryDeferred(now time.Time) {
	var uids []types.UID
	for uid, r := range m.pending {
		if r.Reason == v1.PodReasonDeferred {
			uids = append(uids, uid)
		}
	}
	priority := func(uid types.UID) int32 {
		if p, ok := m.pods[uid]; ok && p.Pod != nil && p.Pod.Spec.Priority != nil {
			return *p.Pod.Spec.Priority
		}
		return 0
	}
	slices.SortFunc(uids, func(a, b types.UID) int {
		if pa, pb := priority(a), priority(b); pa != pb {
			return int(pb) - int(pa)
		}
		return strings.Compare(string(a), string(b))
	})
	for _, uid := range uids {
		p, ok := m.pods[uid]
		if !ok {
			delete(m.pending, uid)
			continue
		}
		if m.resize(uid, p, now) {
			m.tell(uid, &messages.UpdatePod{Pod: m.workerPod(uid, p)})
		}
	}
}

// workerPod is the pod its worker runs: the source's pod at its allocated
// resources.
func (m *Machine) workerPod(uid types.UID, p *PodState) *v1.Pod {
	return AllocatedPod(p.Pod, m.alloc[uid])
}

// Allocated returns the resources admitted for the running pod uid (nil:
// none recorded), for admission and the eviction ranking.
func (m *Machine) Allocated(uid types.UID) PodAllocation { return m.alloc[uid] }

// reportWithResize reports the pod's last status again with its resize
// condition, when its worker reported one.
func (m *Machine) reportWithResize(uid types.UID, p *PodState) {
	if p.Status.Phase != "" && p.Pod != nil {
		m.emit(CmdReportStatus{Pod: p.Pod, Status: withResizePending(p.Status, m.pending[uid])})
	}
}

func (m *Machine) saveAllocations() {
	all := make(Allocations, len(m.alloc))
	for uid, a := range m.alloc {
		all[uid] = a
	}
	m.emit(CmdSaveAllocations{All: all})
}

// admittedExcept is admitted without the pod uid.
func (m *Machine) admittedExcept(uid types.UID) []*v1.Pod {
	return slices.DeleteFunc(m.admitted(), func(p *v1.Pod) bool { return p.UID == uid })
}

// CmdSaveAllocations: write the allocations' checkpoint.
type CmdSaveAllocations struct{ All Allocations }

func (CmdSaveAllocations) isCommand() {}

// shrank reports whether an allocation asks for less of some resource
// than before: the room it frees may let a deferred resize through.
func shrank(before, after PodAllocation) bool {
	for name, b := range before {
		a := after[name]
		for _, res := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if qb, ok := b.Requests[res]; ok {
				if qa := a.Requests[res]; qa.Cmp(qb) < 0 {
					return true
				}
			}
		}
	}
	return false
}
