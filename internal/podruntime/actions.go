package podruntime

import (
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

// PodActions is what one sync pass must do, as upstream's podActions.
type PodActions struct {
	// KillPod stops every container and the sandbox first.
	KillPod bool
	// CreateSandbox creates a new sandbox with Attempt; init containers
	// start over.
	CreateSandbox bool
	// SandboxID is the current sandbox, for starting containers in it.
	SandboxID string
	Attempt   uint32
	// InitContainersToStart and ContainersToStart index pod.Spec.InitContainers
	// and pod.Spec.Containers.
	InitContainersToStart []int
	ContainersToStart     []int
	// EphemeralContainersToStart index pod.Spec.EphemeralContainers: those
	// never created in the pod's running sandbox (they never restart).
	EphemeralContainersToStart []int
	ContainersToKill           []ContainerToKill
	// ContainersToResize index pod.Spec.Containers: running containers
	// whose resources differ from their allocation, updated in place.
	ContainersToResize []int
	// InitContainersToResize index pod.Spec.InitContainers likewise:
	// running sidecars, or the running init container.
	InitContainersToResize []int
	// UpdatePodResources: a container restarts for a resize, and the pod
	// cgroup must take the allocation first.
	UpdatePodResources bool
	// BackingOff are the containers that would be started but whose
	// crash-loop backoff has not expired; they wait as CrashLoopBackOff.
	BackingOff []BackingOff
}

// none reports whether a pass would do nothing at all.
func (a PodActions) none() bool {
	return !a.KillPod && !a.CreateSandbox && len(a.InitContainersToStart) == 0 && len(a.ContainersToStart) == 0 &&
		len(a.EphemeralContainersToStart) == 0 && len(a.ContainersToKill) == 0 && len(a.BackingOff) == 0 &&
		len(a.ContainersToResize) == 0 && len(a.InitContainersToResize) == 0
}

// ContainerToKill is a container instance a sync pass stops.
type ContainerToKill struct {
	ID, Name, Message string
	// GracePeriod, when set, replaces the pod's: a probe's own
	// terminationGracePeriodSeconds for a container it failed.
	GracePeriod *int64
}

// BackingOff is a container waiting for its restart backoff to expire.
type BackingOff struct {
	Name      string
	Init      bool
	Remaining time.Duration
	Message   string
}

// ComputePodActions decides one sync pass of a pod that should run, as
// upstream's computePodActions (without RestartAllContainers).
// backoff may be nil (no backoff); probes are the results of the pod's
// probes (nil: none yet).
func ComputePodActions(pod *v1.Pod, status *PodStatus, backoff *Backoff, probes results.Pod, now time.Time) PodActions {
	if status == nil {
		status = &PodStatus{}
	}
	create, attempt, sandboxID := sandboxChanged(pod, status)
	a := PodActions{KillPod: create, CreateSandbox: create, SandboxID: sandboxID, Attempt: attempt}
	if create {
		computeNewSandboxActions(pod, status, &a)
	} else {
		computeRunningSandboxActions(pod, status, probes, &a)
		if !a.KillPod {
			a.EphemeralContainersToStart = ephemeralContainersToStart(pod, status)
		}
	}
	applyBackoff(pod, status, backoff, now, &a)
	return a
}

func computeNewSandboxActions(pod *v1.Pod, status *PodStatus, a *PodActions) {
	if pod.Spec.RestartPolicy == v1.RestartPolicyNever && a.Attempt != 0 && len(status.ContainerStatuses) != 0 {
		// The pod ran and must not run again: only kill what is left.
		a.CreateSandbox = false
		return
	}
	var toStart []int
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && containerSucceeded(c.Name, status) {
			continue
		}
		toStart = append(toStart, i)
	}
	if len(toStart) == 0 && hasAnyRegularContainerCreated(pod, status) {
		a.CreateSandbox = false
		return
	}
	if len(pod.Spec.InitContainers) != 0 {
		a.InitContainersToStart = []int{0}
		return
	}
	a.ContainersToStart = toStart
}

func computeRunningSandboxActions(pod *v1.Pod, status *PodStatus, probes results.Pod, a *PodActions) {
	if !computeInitContainerActions(pod, status, probes, a) || a.KillPod {
		return
	}
	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		cs := status.FindContainer(c.Name)
		if cs == nil || cs.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			if shouldContainerBeRestarted(pod, c, status) {
				a.ContainersToStart = append(a.ContainersToStart, i)
				if cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN {
					// Its state is unknown: make sure no second instance runs.
					a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
						Message: fmt.Sprintf("Container is in %q state, try killing it before restart", cs.State)})
				}
			}
			continue
		}
		if cs.Hash != HashContainer(c) {
			// A changed definition restarts the container whatever the
			// restart policy.
			a.ContainersToStart = append(a.ContainersToStart, i)
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
				Message: fmt.Sprintf("Container %s definition changed, will be restarted", c.Name)})
			continue
		}
		switch decideContainerResize(c, cs.Resources) {
		case resizeRestart:
			// Its resizePolicy asks for a restart: the new instance starts
			// at the allocation, as upstream's computePodResizeAction.
			a.ContainersToStart = append(a.ContainersToStart, i)
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
			a.UpdatePodResources = true
			continue
		case resizeUpdate:
			a.ContainersToResize = append(a.ContainersToResize, i)
		}
		if kill, ok := probeKill(c, cs.ID, probes, "Container"); ok {
			// A failed liveness or startup probe kills the container; it
			// starts again unless the pod never restarts, as upstream.
			if pod.Spec.RestartPolicy != v1.RestartPolicyNever {
				kill.Message += ", will be restarted"
				a.ContainersToStart = append(a.ContainersToStart, i)
			}
			a.ContainersToKill = append(a.ContainersToKill, kill)
			continue
		}
		keep++
	}
	if keep == 0 && len(a.ContainersToStart) == 0 {
		a.KillPod = true
		// Sidecars must not keep a finished pod alive.
		a.InitContainersToStart = nil
	}
}

// computeInitContainerActions follows upstream: it walks the init
// containers backwards, because completed ones may have been removed, and
// reports whether initialization is done.
func computeInitContainerActions(pod *v1.Pod, status *PodStatus, probes results.Pod, a *PodActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}
	initialized := hasAnyActiveRegularContainerStarted(pod, status)
	previouslyInitialized := initialized
	restartOnFailure := pod.Spec.RestartPolicy != v1.RestartPolicyNever
	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		cs := status.findActiveContainer(c.Name)
		if cs == nil {
			if previouslyInitialized && isRestartableInit(c) {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			}
			continue
		}
		if previouslyInitialized && !isRestartableInit(c) {
			continue
		}
		switch cs.State {
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			// Created but never started: the start failed, try again.
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			if !isRestartableInit(c) {
				// A running init container is resized in place
				// (validation allows it no RestartContainer policy).
				if decideContainerResize(c, cs.Resources) != resizeNone {
					a.InitContainersToResize = append(a.InitContainersToResize, i)
				}
				break
			}
			// A sidecar with a startup probe counts as started, and lets
			// the next init container start, once the probe succeeded; a
			// failed startup probe restarts it.
			if startup := probes.Of(cs.ID).Startup; c.StartupProbe != nil && startup != results.Success {
				if startup == results.Failure {
					kill, _ := probeKill(c, cs.ID, probes, "Init container")
					a.ContainersToKill = append(a.ContainersToKill, kill)
					a.InitContainersToStart = append(a.InitContainersToStart, i)
				}
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !previouslyInitialized {
				a.InitContainersToStart = append(a.InitContainersToStart, i+1)
			}
			if cs.Hash != HashContainer(c) {
				a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
					Message: fmt.Sprintf("Init container %s definition changed", c.Name)})
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if r := decideContainerResize(c, cs.Resources); r == resizeRestart {
				a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
					Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				a.UpdatePodResources = true
				break
			} else if r == resizeUpdate {
				a.InitContainersToResize = append(a.InitContainersToResize, i)
			}
			// A sidecar's liveness probe does not hold the next init
			// container back, but its failure restarts the sidecar.
			if c.LivenessProbe != nil && probes.Of(cs.ID).Liveness == results.Failure {
				kill, _ := probeKill(c, cs.ID, probes, "Init container")
				a.ContainersToKill = append(a.ContainersToKill, kill)
				a.InitContainersToStart = append(a.InitContainersToStart, i)
			}
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			if isRestartableInit(c) {
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if initContainerFailed(cs) {
				if !restartOnFailure {
					a.KillPod = true
					a.InitContainersToStart = nil
					return false
				}
				a.InitContainersToStart = append(a.InitContainersToStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				a.InitContainersToStart = append(a.InitContainersToStart, i+1)
			}
		default:
			if !isRestartableInit(c) && !restartOnFailure {
				a.KillPod = true
				a.InitContainersToStart = nil
				return false
			}
			a.ContainersToKill = append(a.ContainersToKill, ContainerToKill{ID: cs.ID, Name: c.Name,
				Message: fmt.Sprintf("Init container is in %q state, try killing it before restart", cs.State)})
			a.InitContainersToStart = append(a.InitContainersToStart, i)
		}
		previouslyInitialized = true
	}
	if !previouslyInitialized {
		a.InitContainersToStart = append(a.InitContainersToStart, 0)
	}
	slices.Reverse(a.InitContainersToStart)
	return initialized
}

// probeKill is the kill of a running container instance that failed its
// liveness or startup probe, as upstream words it ("Container NAME failed
// liveness probe"; what is "Init container" for a sidecar), with the
// probe's own terminationGracePeriodSeconds when it has one.
func probeKill(c *v1.Container, id string, probes results.Pod, what string) (ContainerToKill, bool) {
	r := probes.Of(id)
	var probe *v1.Probe
	var kind string
	switch {
	case c.LivenessProbe != nil && r.Liveness == results.Failure:
		probe, kind = c.LivenessProbe, "liveness"
	case c.StartupProbe != nil && r.Startup == results.Failure:
		probe, kind = c.StartupProbe, "startup"
	default:
		return ContainerToKill{}, false
	}
	return ContainerToKill{ID: id, Name: c.Name, GracePeriod: probe.TerminationGracePeriodSeconds,
		Message: fmt.Sprintf("%s %s failed %s probe", what, c.Name, kind)}, true
}

// applyBackoff moves the containers whose crash-loop backoff runs from the
// start lists to BackingOff. It does not record anything: SyncPod calls
// Backoff.Next when it really restarts a container.
func applyBackoff(pod *v1.Pod, status *PodStatus, backoff *Backoff, now time.Time, a *PodActions) {
	if backoff == nil {
		return
	}
	filter := func(idx []int, containers []v1.Container, init bool) []int {
		var kept []int
		for _, i := range idx {
			c := &containers[i]
			if wait, ok := crashLoopWait(pod, c, status, backoff, now); ok {
				a.BackingOff = append(a.BackingOff, BackingOff{Name: c.Name, Init: init, Remaining: wait,
					Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
						backoff.Get(ContainerBackoffKey(pod, c)), c.Name, pod.Name, pod.Namespace, pod.UID)})
				continue
			}
			kept = append(kept, i)
		}
		return kept
	}
	a.InitContainersToStart = filter(a.InitContainersToStart, pod.Spec.InitContainers, true)
	a.ContainersToStart = filter(a.ContainersToStart, pod.Spec.Containers, false)
}

// crashLoopWait is upstream's doBackOff without its side effect: the backoff
// counts from when the newest exited instance finished.
func crashLoopWait(pod *v1.Pod, c *v1.Container, status *PodStatus, backoff *Backoff, now time.Time) (time.Duration, bool) {
	var exited *ContainerStatus
	for _, cs := range status.ContainerStatuses {
		if cs.Name == c.Name && cs.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			exited = cs
			break
		}
	}
	if exited == nil {
		return 0, false
	}
	in, left := backoff.inBackoffAt(ContainerBackoffKey(pod, c), exited.FinishedAt, now)
	return left, in
}

// ContainerBackoffKey identifies a (pod, container) for the crash-loop
// backoff; a new image starts a new backoff, as upstream.
func ContainerBackoffKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", pod.Namespace, pod.Name, pod.UID, c.Name, c.Image)
}

// sandboxChanged is upstream's PodSandboxChanged: whether a new sandbox is
// needed, with which attempt, and the current sandbox's ID.
func sandboxChanged(pod *v1.Pod, status *PodStatus) (bool, uint32, string) {
	if len(status.SandboxStatuses) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	s := status.SandboxStatuses[0]
	next := s.GetMetadata().GetAttempt() + 1
	switch {
	case ready > 1, s.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		return true, next, s.Id
	case !hostUsers(pod) && !sandboxInPodUserNamespace(s):
		// A sandbox of a pod that asks for a user namespace runs in the
		// host's (one made before actorlet refused such pods): it must go.
		return true, next, s.Id
	case s.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkNamespace(pod):
		return true, next, ""
	case !pod.Spec.HostNetwork && s.Network != nil && s.Network.Ip == "":
		return true, next, s.Id
	}
	return false, s.GetMetadata().GetAttempt(), s.Id
}

func containerSucceeded(name string, status *PodStatus) bool {
	cs := status.FindContainer(name)
	return cs != nil && cs.State == runtimeapi.ContainerState_CONTAINER_EXITED && cs.ExitCode == 0
}

func initContainerFailed(cs *ContainerStatus) bool {
	return cs.Reason == "OOMKilled" ||
		(cs.State == runtimeapi.ContainerState_CONTAINER_EXITED && cs.ExitCode != 0) ||
		cs.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

func isRestartableInit(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

func shouldContainerBeRestarted(pod *v1.Pod, c *v1.Container, status *PodStatus) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	cs := status.FindContainer(c.Name)
	switch {
	case cs == nil:
		return true
	case cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING:
		return false
	case cs.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN, cs.State == runtimeapi.ContainerState_CONTAINER_CREATED:
		return true
	case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
		return false
	case pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure:
		return cs.ExitCode != 0
	}
	return true
}

func hasAnyRegularContainerCreated(pod *v1.Pod, status *PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		cs := status.FindContainer(c.Name)
		if cs != nil && cs.State != runtimeapi.ContainerState_CONTAINER_UNKNOWN {
			return true
		}
	}
	return false
}

func hasAnyActiveRegularContainerStarted(pod *v1.Pod, status *PodStatus) bool {
	for _, c := range pod.Spec.Containers {
		cs := status.findActiveContainer(c.Name)
		if cs != nil && (cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING || cs.State == runtimeapi.ContainerState_CONTAINER_EXITED) {
			return true
		}
	}
	return false
}

func networkNamespace(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostNetwork {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}

func pidNamespace(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostPID {
		return runtimeapi.NamespaceMode_NODE
	}
	if pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace {
		return runtimeapi.NamespaceMode_POD
	}
	return runtimeapi.NamespaceMode_CONTAINER
}

func ipcNamespace(pod *v1.Pod) runtimeapi.NamespaceMode {
	if pod.Spec.HostIPC {
		return runtimeapi.NamespaceMode_NODE
	}
	return runtimeapi.NamespaceMode_POD
}
