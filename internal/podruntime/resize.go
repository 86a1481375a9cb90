package podruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/dump"

	"github.com/actorlet/actorlet/internal/atomicfile"
	"github.com/actorlet/actorlet/internal/events"
)

// In-place resize: the pod-manager allocates a resize (its container
// resources in the pod the worker syncs are the allocated ones); a sync
// pass applies the difference between them and what was applied to each
// running container (ActuatedResources), through CRI
// UpdateContainerResources and the pod's cgroup, or restarts the container
// where its resizePolicy says RestartContainer.

// PodCgroupUpdater re-applies a pod's cgroup limits from the pod as given
// (its container resources the allocated ones): cgroups.Manager's Update.
type PodCgroupUpdater interface {
	Update(pod *v1.Pod) error
}

// resizeSummary is upstream's podResourceSummary, the body of its resize
// events' messages.
type resizeSummary struct {
	InitContainers []containerAllocation `json:"initContainers,omitempty"`
	Containers     []containerAllocation `json:"containers,omitempty"`
	Generation     int64                 `json:"generation"`
	Error          string                `json:"error,omitempty"`
}

type containerAllocation struct {
	Name      string                  `json:"name"`
	Resources v1.ResourceRequirements `json:"resources,omitempty"`
}

// ResizeMessage is upstream's resize event message: prefix ("Pod resize
// started", "Pod resize Deferred", ...), then the pod's container
// resources at generation as JSON, with errMsg when not empty.
func ResizeMessage(prefix string, pod *v1.Pod, generation int64, errMsg string) string {
	s := resizeSummary{Generation: generation, Error: errMsg}
	for _, c := range pod.Spec.InitContainers {
		s.InitContainers = append(s.InitContainers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		s.Containers = append(s.Containers, containerAllocation{Name: c.Name, Resources: c.Resources})
	}
	raw, err := json.Marshal(s)
	if err != nil {
		return prefix
	}
	return prefix + ": " + string(raw)
}

// PodEvent records an event about pod on recorder (nil: none), as the
// sync passes record theirs.
func PodEvent(recorder record.EventRecorder, pod *v1.Pod, eventtype, reason, message string) {
	if recorder != nil {
		recorder.Event(objectRef(pod, ""), eventtype, reason, message)
	}
}

// resizeEvents records the outcome of a pass that resized the pod: an
// error, or its completion once every container runs at its allocation.
func (s *syncPass) resizeEvents(status *PodStatus) {
	switch {
	case s.resizeErr != nil:
		s.r.podEvent(s.pod, v1.EventTypeWarning, events.ResizeError, ResizeMessage("Pod resize error", s.pod, s.pod.Generation, s.resizeErr.Error()))
	case s.resized && !resizeInProgress(s.pod, status):
		s.r.podEvent(s.pod, v1.EventTypeNormal, events.ResizeCompleted, ResizeMessage("Pod resize completed", s.pod, s.pod.Generation, ""))
	}
}

// cgroupUpdater is the pod cgroups' manager when it can update a pod's
// limits (cgroups.Manager can); nil: the pod cgroup is left as made.
func (o Options) cgroupUpdater() PodCgroupUpdater {
	u, _ := o.Cgroups.(PodCgroupUpdater)
	return u
}

// ActuatedPodsStateFile is the checkpoint of the actuated resources under
// the root directory, upstream's file in upstream's format (with the
// containers' IDs beside, which upstream's kubelet ignores).
const ActuatedPodsStateFile = "actuated_pods_state"

// Checkpoint is upstream's resource checkpoint (allocated_pods_state,
// actuated_pods_state): its data as a JSON string, and upstream's checksum
// of that string.
type Checkpoint struct {
	Data     string `json:"data"`
	Checksum uint64 `json:"checksum"`
}

// NewCheckpoint is the checkpoint of data, with upstream's checksum.
func NewCheckpoint(data []byte) Checkpoint {
	return Checkpoint{Data: string(data), Checksum: CheckpointChecksum(string(data))}
}

// CheckpointChecksum is upstream's checksum.New of a string: fnv32a of its
// hash dump.
func CheckpointChecksum(data string) uint64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(dump.ForHash(data)))
	return uint64(h.Sum32())
}

// actuatedInfo is upstream's PodResourceCheckpointInfo of the actuated
// resources, with each pod's containers' IDs.
type actuatedInfo struct {
	Entries map[types.UID]actuatedPod `json:"entries,omitempty"`
}

// actuatedPod is upstream's PodResourceInfo (fields without JSON tags)
// and the container instance each applies to.
type actuatedPod struct {
	ContainerResources map[string]v1.ResourceRequirements
	ContainerIDs       map[string]string `json:"actorletContainerIDs,omitempty"`
}

// actuatedEntry is what was applied to one container instance.
type actuatedEntry struct {
	ContainerID string                  `json:"containerID"`
	Resources   v1.ResourceRequirements `json:"resources"`
}

// ActuatedResources remembers, per pod and container, the resources last
// applied to the running instance (at its creation or by a resize), as
// upstream's actuated state: containerd 1.6 does not report a container's
// resources, and after a restart of actorlet the pass must still know
// whether a resize was applied. Each pod's entries are only touched by its
// own sync passes; the lock guards the map and the file.
type ActuatedResources struct {
	mu   sync.Mutex
	path string // "" keeps the state in memory only
	pods map[types.UID]map[string]actuatedEntry
}

// NewActuatedResources loads the checkpoint under rootDir ("" : in memory
// only). A file that cannot be read is an error beside an empty state: a
// running container whose resources are not known is taken to run at its
// allocation.
func NewActuatedResources(rootDir string) (*ActuatedResources, error) {
	a := &ActuatedResources{pods: map[types.UID]map[string]actuatedEntry{}}
	if rootDir == "" {
		return a, nil
	}
	a.path = filepath.Join(rootDir, ActuatedPodsStateFile)
	raw, err := os.ReadFile(a.path)
	if os.IsNotExist(err) {
		return a, nil
	}
	if err == nil {
		err = a.decode(raw)
	}
	if err != nil || a.pods == nil {
		a.pods = map[types.UID]map[string]actuatedEntry{}
		return a, fmt.Errorf("actuated resources in %s: %v", a.path, err)
	}
	return a, nil
}

// get returns the resources applied to container id of the pod; nil when
// unknown (no record, or the record is of another instance).
func (a *ActuatedResources) get(uid types.UID, name, id string) *v1.ResourceRequirements {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.pods[uid][name]
	if !ok || e.ContainerID != id {
		return nil
	}
	r := e.Resources.DeepCopy()
	return r
}

// set records what was applied to container id of the pod.
func (a *ActuatedResources) set(uid types.UID, name, id string, r v1.ResourceRequirements) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.pods[uid] == nil {
		a.pods[uid] = map[string]actuatedEntry{}
	}
	a.pods[uid][name] = actuatedEntry{ContainerID: id, Resources: resizable(r)}
	return a.save()
}

// Forget drops the pod's records: nothing of it runs any more.
func (a *ActuatedResources) Forget(uid types.UID) error {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.pods[uid]; !ok {
		return nil
	}
	delete(a.pods, uid)
	return a.save()
}

// save writes the checkpoint atomically and durably (atomicfile); the
// caller holds the lock.
func (a *ActuatedResources) save() error {
	if a.path == "" {
		return nil
	}
	info := actuatedInfo{Entries: map[types.UID]actuatedPod{}}
	for uid, cs := range a.pods {
		p := actuatedPod{ContainerResources: map[string]v1.ResourceRequirements{}, ContainerIDs: map[string]string{}}
		for name, e := range cs {
			p.ContainerResources[name], p.ContainerIDs[name] = e.Resources, e.ContainerID
		}
		info.Entries[uid] = p
	}
	data, err := json.Marshal(info)
	if err != nil {
		return err
	}
	raw, err := json.Marshal(NewCheckpoint(data))
	if err != nil {
		return err
	}
	if err := atomicfile.Write(a.path, raw, 0o600); err != nil {
		return fmt.Errorf("checkpoint actuated resources: %w", err)
	}
	return nil
}

// resizable keeps the CPU and memory of r: the resources a resize changes.
func resizable(r v1.ResourceRequirements) v1.ResourceRequirements {
	out := v1.ResourceRequirements{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q, ok := r.Requests[name]; ok {
			if out.Requests == nil {
				out.Requests = v1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
		if q, ok := r.Limits[name]; ok {
			if out.Limits == nil {
				out.Limits = v1.ResourceList{}
			}
			out.Limits[name] = q.DeepCopy()
		}
	}
	return out
}

// withResizable is list with its CPU and memory those of applied.
func withResizable(list, applied v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name, q := range list {
		if name != v1.ResourceCPU && name != v1.ResourceMemory {
			out[name] = q
		}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if q, ok := applied[name]; ok {
			out[name] = q.DeepCopy()
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// resizeChanges tells which of a container's resources differ between
// what runs (applied) and the allocation (desired): CPU and memory, each
// request or limit.
func resizeChanges(applied, desired v1.ResourceRequirements) (cpu, memory bool) {
	differs := func(a, b v1.ResourceList, name v1.ResourceName) bool {
		qa, oka := a[name]
		qb, okb := b[name]
		if oka != okb {
			return !(qa.IsZero() && qb.IsZero())
		}
		return qa.Cmp(qb) != 0
	}
	cpu = differs(applied.Requests, desired.Requests, v1.ResourceCPU) || differs(applied.Limits, desired.Limits, v1.ResourceCPU)
	memory = differs(applied.Requests, desired.Requests, v1.ResourceMemory) || differs(applied.Limits, desired.Limits, v1.ResourceMemory)
	return cpu, memory
}

// restartPolicy is the container's resize restart policy for a resource:
// NotRequired unless its resizePolicy says otherwise.
func restartPolicy(c *v1.Container, name v1.ResourceName) v1.ResourceResizeRestartPolicy {
	for _, p := range c.ResizePolicy {
		if p.ResourceName == name {
			return p.RestartPolicy
		}
	}
	return v1.NotRequired
}

// resizeAction is what a running container needs for its allocation, as
// upstream's computePodResizeAction decides it: nothing, an update in
// place, or a restart where the policy of a changed resource says
// RestartContainer.
type resizeAction int

const (
	resizeNone resizeAction = iota
	resizeUpdate
	resizeRestart
)

func decideContainerResize(c *v1.Container, applied *v1.ResourceRequirements) resizeAction {
	if applied == nil {
		return resizeNone // unknown: taken to run at its allocation
	}
	cpu, memory := resizeChanges(*applied, c.Resources)
	switch {
	case !cpu && !memory:
		return resizeNone
	case cpu && restartPolicy(c, v1.ResourceCPU) == v1.RestartContainer,
		memory && restartPolicy(c, v1.ResourceMemory) == v1.RestartContainer:
		return resizeRestart
	}
	return resizeUpdate
}

// grownPod is pod with each container in toUpdate at the larger of what it
// runs with and its allocation, request and limit alike: the pod cgroup
// set from it first lets every container grow before any shrinks, as
// upstream orders the pod cgroup before increases and after decreases.
func grownPod(pod *v1.Pod, status *PodStatus, toUpdate []*v1.Container) *v1.Pod {
	out := pod.DeepCopy()
	resized := map[string]bool{}
	for _, c := range toUpdate {
		resized[c.Name] = true
	}
	for _, c := range allContainers(out) {
		if !resized[c.Name] {
			continue
		}
		cs := status.FindContainer(c.Name)
		if cs == nil || cs.Resources == nil {
			continue
		}
		c.Resources.Requests = maxList(c.Resources.Requests, cs.Resources.Requests, false)
		c.Resources.Limits = maxList(c.Resources.Limits, cs.Resources.Limits, true)
	}
	return out
}

// maxList is the larger of a and b per resource; for limits, a resource
// one of them leaves unlimited stays unlimited.
func maxList(a, b v1.ResourceList, limits bool) v1.ResourceList {
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		qa, oka := a[name]
		qb, okb := b[name]
		switch {
		case oka && okb:
			if qa.Cmp(qb) >= 0 {
				out[name] = qa.DeepCopy()
			} else {
				out[name] = qb.DeepCopy()
			}
		case limits:
			// Unlimited on one side: the larger is no limit.
		case oka:
			out[name] = qa.DeepCopy()
		case okb:
			out[name] = qb.DeepCopy()
		}
	}
	for name, q := range a {
		if _, ok := out[name]; !ok && name != v1.ResourceCPU && name != v1.ResourceMemory {
			out[name] = q.DeepCopy()
		}
	}
	return out
}

// allContainers are the pod's init and regular containers, in place.
func allContainers(pod *v1.Pod) []*v1.Container {
	out := make([]*v1.Container, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for i := range pod.Spec.InitContainers {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// toResize are the containers the actions resize in place.
func toResize(pod *v1.Pod, a PodActions) []*v1.Container {
	var out []*v1.Container
	for _, i := range a.InitContainersToResize {
		out = append(out, &pod.Spec.InitContainers[i])
	}
	for _, i := range a.ContainersToResize {
		out = append(out, &pod.Spec.Containers[i])
	}
	return out
}

// resizeContainers applies the allocation to the running containers
// toUpdate: the pod cgroup grown first, each container's CRI resources,
// then the pod cgroup at the allocation.
func (s *syncPass) resizeContainers(ctx context.Context, toUpdate []*v1.Container) {
	pod, r := s.pod, s.r
	s.resized = true
	updater := r.Opts.cgroupUpdater()
	if updater != nil {
		if err := updater.Update(grownPod(pod, s.status, toUpdate)); err != nil {
			s.resizeFailed(fmt.Errorf("resize pod %s/%s: %w", pod.Namespace, pod.Name, err))
			return
		}
	}
	for _, c := range toUpdate {
		cs := s.status.FindContainer(c.Name)
		if cs == nil {
			continue
		}
		lr, err := containerResources(pod, c, r.Opts)
		if err == nil {
			sctx, cancel := r.callCtx(ctx)
			_, err = r.RT.UpdateContainerResources(sctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: cs.ID, Linux: lr})
			cancel()
			if err != nil {
				err = fmt.Errorf("update resources of container %s of pod %s/%s: %s", c.Name, pod.Namespace, pod.Name, status.Convert(err).Message())
			}
		}
		if err != nil {
			s.resizeFailed(err)
			continue
		}
		applied := resizable(c.Resources)
		cs.Resources = &applied
		if err := r.Opts.Actuated.set(pod.UID, c.Name, cs.ID, applied); err != nil {
			s.fail(err)
		}
	}
	if updater != nil {
		if err := updater.Update(pod); err != nil {
			s.resizeFailed(fmt.Errorf("resize pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
}

func (s *syncPass) resizeFailed(err error) {
	s.resizeErr = err
	s.fail(err)
}

// resizeInProgress reports whether a running container of the pod's
// current sandbox does not run at its allocation yet.
func resizeInProgress(pod *v1.Pod, status *PodStatus) bool {
	if status == nil || len(status.SandboxStatuses) == 0 || status.SandboxStatuses[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
		return false
	}
	for _, c := range allContainers(pod) {
		cs := status.findActiveContainer(c.Name)
		if cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		if decideContainerResize(c, cs.Resources) != resizeNone {
			return true
		}
	}
	return false
}

// setResizeInProgress puts upstream's PodResizeInProgress condition in the
// status while the runtime's resources differ from the allocation (with
// reason Error and its message when the last attempt failed), and takes
// it out once they match. Its transition time and observed generation
// stay those of the resize's start.
func setResizeInProgress(out *v1.PodStatus, pod *v1.Pod, status *PodStatus, resizeErr error, previous *v1.PodStatus, now time.Time) {
	var prev *v1.PodCondition
	if previous != nil {
		for i := range previous.Conditions {
			if previous.Conditions[i].Type == v1.PodResizeInProgress {
				prev = &previous.Conditions[i]
			}
		}
	}
	out.Conditions = slices.DeleteFunc(out.Conditions, func(c v1.PodCondition) bool { return c.Type == v1.PodResizeInProgress })
	if !resizeInProgress(pod, status) && resizeErr == nil {
		return
	}
	c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
		LastProbeTime: metav1.NewTime(now), LastTransitionTime: metav1.NewTime(now)}
	if prev != nil {
		c.LastTransitionTime, c.ObservedGeneration = prev.LastTransitionTime, prev.ObservedGeneration
	}
	if resizeErr != nil {
		c.Reason, c.Message = v1.PodReasonError, resizeErr.Error()
	}
	out.Conditions = append(out.Conditions, c)
}

// decode reads the checkpoint: upstream's format (a container without
// its ID, as upstream writes it, is of no known instance) or an earlier
// actorlet's map.
func (a *ActuatedResources) decode(raw []byte) error {
	var cp Checkpoint
	if err := json.Unmarshal(raw, &cp); err != nil || cp.Data == "" {
		return json.Unmarshal(raw, &a.pods)
	}
	if CheckpointChecksum(cp.Data) != cp.Checksum {
		return errors.New("checksum mismatch")
	}
	var info actuatedInfo
	if err := json.Unmarshal([]byte(cp.Data), &info); err != nil {
		return err
	}
	a.pods = map[types.UID]map[string]actuatedEntry{}
	for uid, p := range info.Entries {
		a.pods[uid] = map[string]actuatedEntry{}
		for name, r := range p.ContainerResources {
			a.pods[uid][name] = actuatedEntry{ContainerID: p.ContainerIDs[name], Resources: r}
		}
	}
	return nil
}
