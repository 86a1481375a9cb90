package podruntime

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/probe/results"
)

// runtimeName prefixes container IDs in the API ("containerd://ID").
const runtimeName = "containerd"

// Condition reasons of upstream's pkg/kubelet/status.
const (
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonPodSandboxNotReady       = "PodSandboxNotReady" // kubetypes.PodSandboxNotReadyReason
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// GenerateAPIStatus is the pod's status as the API shows it, as upstream's
// generateAPIPodStatus: phase, conditions, IPs, start time and the
// container statuses, with waiting (per container name) for the reasons a
// sync pass found (CrashLoopBackOff, ErrImagePull, ...). previous is the
// status last reported; its start time, host IPs and unchanged conditions'
// transition times are kept. probes (nil: none yet) decide which running
// containers are started and ready, as upstream's probe manager does.
func GenerateAPIStatus(pod *v1.Pod, status *PodStatus, waiting map[string]WaitingReason, probes results.Pod, previous *v1.PodStatus, now time.Time) v1.PodStatus {
	return generateAPIStatus(pod, status, waiting, probes, previous, now, false)
}

// TerminalAPIStatus is the status of a pod the kubelet has terminated
// (upstream's generateAPIPodStatus with podIsTerminal), made from what the
// runtime shows once nothing of it runs: its containers will not start
// again whatever the restart policy, so a pod whose containers all
// stopped is Succeeded when every one exited 0 and Failed otherwise (a
// static pod keeps the phase its restart policy gives, as upstream's).
// Controllers wait on this phase: the Job controller removes its
// finalizer from a pod, and applies its pod failure policy, only then.
//
// It then settles what the runtime no longer shows, as upstream's status
// manager's TerminatePod: once the pod initialized, a container not
// terminated (never created, or removed) is terminated with
// ContainerStatusUnknown; so is every init container but the trailing
// ones that never started; and a pod that is not static is Failed if its
// phase is not terminal yet (deleted before anything of it ran).
func TerminalAPIStatus(pod *v1.Pod, status *PodStatus, previous *v1.PodStatus, now time.Time) v1.PodStatus {
	out := generateAPIStatus(pod, status, nil, nil, previous, now, true)
	if hasPodInitialized(pod, &out) {
		MarkUnknownTerminated(out.ContainerStatuses)
	}
	MarkUnknownTerminated(attemptedInitContainers(out.InitContainerStatuses))
	if !isStatic(pod) && out.Phase != v1.PodSucceeded && out.Phase != v1.PodFailed {
		out.Phase = v1.PodFailed
	}
	return out
}

// ReasonContainerStatusUnknown and MessageContainerStatusUnknown are upstream's for a
// container the runtime no longer shows when its pod is terminated.
const (
	ReasonContainerStatusUnknown  = "ContainerStatusUnknown"
	MessageContainerStatusUnknown = "The container could not be located when the pod was terminated"
)

// MarkUnknownTerminated terminates, with upstream's ContainerStatusUnknown
// and exit code 137 (a failure: whether it succeeded is not known), every
// status that is not terminated.
func MarkUnknownTerminated(statuses []v1.ContainerStatus) {
	for i := range statuses {
		s := &statuses[i]
		if s.State.Terminated != nil {
			continue
		}
		s.State = v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
			Reason: ReasonContainerStatusUnknown, Message: MessageContainerStatusUnknown, ExitCode: 137,
		}}
		s.Ready, s.Started = false, ptrTo(false)
	}
}

// hasPodInitialized is upstream's status manager's: a pod without init
// containers, one whose app containers left waiting at least once, or
// whose last init container exited 0 (or, a sidecar, runs and started)
// has initialized; only then are its app containers terminated.
func hasPodInitialized(pod *v1.Pod, status *v1.PodStatus) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, s := range status.ContainerStatuses {
		if s.LastTerminationState.Terminated != nil || s.State.Waiting == nil {
			return true
		}
	}
	l := len(status.InitContainerStatuses)
	if l == 0 || l != len(pod.Spec.InitContainers) {
		return false
	}
	last := status.InitContainerStatuses[l-1]
	if isRestartableInit(&pod.Spec.InitContainers[l-1]) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	for _, s := range []v1.ContainerState{last.LastTerminationState, last.State} {
		if s.Terminated != nil && s.Terminated.ExitCode == 0 {
			return true
		}
	}
	return false
}

// attemptedInitContainers is upstream's initializedContainers: the init
// container statuses but the trailing ones waiting for their first start,
// and at least the first.
func attemptedInitContainers(statuses []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State.Waiting == nil || statuses[i].LastTerminationState.Terminated != nil {
			return statuses[:i+1]
		}
	}
	if len(statuses) > 0 {
		return statuses[:1]
	}
	return nil
}

func generateAPIStatus(pod *v1.Pod, status *PodStatus, waiting map[string]WaitingReason, probes results.Pod, previous *v1.PodStatus, now time.Time, terminal bool) v1.PodStatus {
	if previous == nil {
		previous = &v1.PodStatus{}
	}
	if status == nil {
		status = &PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	hasInit := len(pod.Spec.InitContainers) > 0
	out := v1.PodStatus{
		QOSClass:                   cgroups.QOSClass(pod),
		HostIP:                     previous.HostIP,
		HostIPs:                    previous.HostIPs,
		InitContainerStatuses:      convertContainerStatuses(pod, status, waiting, previous.InitContainerStatuses, pod.Spec.InitContainers, hasInit, true),
		ContainerStatuses:          convertContainerStatuses(pod, status, waiting, previous.ContainerStatuses, pod.Spec.Containers, hasInit, false),
		EphemeralContainerStatuses: ephemeralContainerStatuses(pod, status, waiting, previous.EphemeralContainerStatuses),
	}
	applyProbes(pod, probes, out.InitContainerStatuses, pod.Spec.InitContainers, true)
	applyProbes(pod, probes, out.ContainerStatuses, pod.Spec.Containers, false)
	notStarted(out.InitContainerStatuses)
	notStarted(out.ContainerStatuses)
	all := append(slices.Clone(out.InitContainerStatuses), out.ContainerStatuses...)
	out.Phase = getPhase(pod, all, hasAnyRegularContainerStarted(pod, out.ContainerStatuses), terminal && !isStatic(pod))
	out.StartTime = previous.StartTime
	if out.StartTime == nil {
		t := metav1.NewTime(now)
		out.StartTime = &t
	}
	settlePhase(pod, &out, previous, now)
	ips := status.IPs
	if len(ips) == 0 && len(previous.PodIPs) > 0 {
		// The sandbox is gone (a finished pod): keep showing its IPs.
		for _, ip := range previous.PodIPs {
			ips = append(ips, ip.IP)
		}
	}
	if len(ips) > 0 {
		out.PodIP = ips[0]
		for _, ip := range ips {
			out.PodIPs = append(out.PodIPs, v1.PodIP{IP: ip})
		}
	}
	out.Conditions = podConditions(pod, status, all, out.Phase, previous, now)
	// The generation of the spec this status reflects (upstream's
	// PodObservedGenerationTracking, GA and locked on since 1.35), never
	// going back, as upstream's status manager keeps it.
	out.ObservedGeneration = max(pod.Generation, previous.ObservedGeneration)
	truncateTerminationMessages(pod, &out)
	return out
}

// settlePhase merges the phase the containers show with what was
// reported before, as upstream's generateAPIPodStatus: a terminal phase is
// final (a later observation must not revive it), the reason and message
// stay with the phase they came with, and a pod past its active deadline
// is Failed.
func settlePhase(pod *v1.Pod, out, previous *v1.PodStatus, now time.Time) {
	ended := previous.Phase == v1.PodFailed || previous.Phase == v1.PodSucceeded
	if ended {
		out.Phase = previous.Phase
	}
	if out.Phase == previous.Phase {
		out.Reason, out.Message = previous.Reason, previous.Message
	}
	if !ended {
		applyActiveDeadline(pod, out, now)
	}
}

func podConditions(pod *v1.Pod, status *PodStatus, all []v1.ContainerStatus, phase v1.PodPhase, previous *v1.PodStatus, now time.Time) []v1.PodCondition {
	var conds []v1.PodCondition
	// In upstream's order.
	conds = append(conds, readyToStartCondition(pod, status),
		initializedCondition(pod, all, phase),
		readyCondition(pod, all, phase, v1.PodReady, previous),
		readyCondition(pod, all, phase, v1.ContainersReady, previous),
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	// Conditions other components own (readiness gates, disruption
	// targets) stay as they were.
	for _, c := range previous.Conditions {
		if !slices.ContainsFunc(conds, func(n v1.PodCondition) bool { return n.Type == c.Type }) {
			conds = append(conds, c)
		}
	}
	for i := range conds {
		c := &conds[i]
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		for _, p := range previous.Conditions {
			if p.Type == c.Type && p.Status == c.Status && !p.LastTransitionTime.IsZero() {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return conds
}

// readyToStartCondition is upstream's PodReadyToStartContainers: True
// while the pod's sandbox is ready, else False with why a new one is
// needed.
func readyToStartCondition(pod *v1.Pod, status *PodStatus) v1.PodCondition {
	if msg := sandboxNotReadyReason(pod, status); msg != "" {
		return v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionFalse, Reason: reasonPodSandboxNotReady, Message: msg}
	}
	return v1.PodCondition{Type: v1.PodReadyToStartContainers, Status: v1.ConditionTrue}
}

// sandboxNotReadyReason is why the pod needs a new sandbox, in upstream's
// words (kubetypes' PodSandboxNotReadyMsg*, as PodSandboxChanged says);
// "" when it needs none.
func sandboxNotReadyReason(pod *v1.Pod, status *PodStatus) string {
	if len(status.SandboxStatuses) == 0 {
		return "no pod sandbox exists"
	}
	ready := 0
	for _, s := range status.SandboxStatuses {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready++
		}
	}
	s := status.SandboxStatuses[0]
	switch {
	case ready > 1:
		return "multiple pod sandboxes are ready and need to be reconciled"
	case s.State != runtimeapi.PodSandboxState_SANDBOX_READY:
		return "pod sandbox is not ready"
	case s.GetLinux().GetNamespaces().GetOptions().GetNetwork() != networkNamespace(pod):
		return "network namespace mode changed and sandbox needs to be recreated"
	case !pod.Spec.HostNetwork && s.Network != nil && s.Network.Ip == "":
		return "pod sandbox has no IP address"
	}
	if changed, _, _ := sandboxChanged(pod, status); changed {
		// actorlet's own reason for a new sandbox (one in the host's user
		// namespace for a pod that asks for its own).
		return "pod sandbox is not ready"
	}
	return ""
}

func initializedCondition(pod *v1.Pod, all []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	var unknown, incomplete []string
	for _, c := range pod.Spec.InitContainers {
		cs, ok := findStatus(all, c.Name)
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case isRestartableInit(&c) && (cs.Started == nil || !*cs.Started):
			incomplete = append(incomplete, c.Name)
		case !isRestartableInit(&c) && !cs.Ready:
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue, Reason: reasonPodCompleted}
	}
	if hasAnyRegularContainerStarted(pod, all) {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	}
	if msg := notReadyMessage(unknown, incomplete, "incomplete"); msg != "" {
		return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionFalse, Reason: reasonContainersNotInitialized, Message: msg}
	}
	return v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
}

// applyProbes sets started and ready of the running containers as
// upstream's probe manager: started once the startup probe succeeded (at
// once without one), ready once started and the readiness probe succeeded
// (at once without one). An init container that is not a sidecar is ready
// when it completed, whatever its probes.
func applyProbes(pod *v1.Pod, probes results.Pod, statuses []v1.ContainerStatus, containers []v1.Container, isInit bool) {
	for i := range statuses {
		s := &statuses[i]
		if s.State.Running == nil {
			continue
		}
		idx := slices.IndexFunc(containers, func(c v1.Container) bool { return c.Name == s.Name })
		if idx < 0 {
			continue
		}
		c := &containers[idx]
		r := probes.Of(strings.TrimPrefix(s.ContainerID, runtimeName+"://"))
		started := c.StartupProbe == nil || r.Startup == results.Success
		s.Started = ptrTo(started)
		if isInit && !isRestartableInit(c) {
			continue
		}
		s.Ready = started && (c.ReadinessProbe == nil || r.Readiness == results.Success)
	}
}

// readyCondition is ContainersReady or Ready; Ready also waits for the
// pod's readiness gates.
func readyCondition(pod *v1.Pod, all []v1.ContainerStatus, phase v1.PodPhase, t v1.PodConditionType, previous *v1.PodStatus) v1.PodCondition {
	var unknown, unready []string
	check := func(c *v1.Container) {
		if cs, ok := findStatus(all, c.Name); !ok {
			unknown = append(unknown, c.Name)
		} else if !cs.Ready {
			unready = append(unready, c.Name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isRestartableInit(&pod.Spec.InitContainers[i]) {
			check(&pod.Spec.InitContainers[i])
		}
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	switch {
	case phase == v1.PodFailed:
		return v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reasonPodFailed}
	case phase == v1.PodSucceeded && len(unknown) == 0:
		return v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reasonPodCompleted}
	}
	if msg := notReadyMessage(unknown, unready, "unready"); msg != "" {
		return v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reasonContainersNotReady, Message: msg}
	}
	if t == v1.PodReady {
		if msg := readinessGatesMessage(pod, previous); msg != "" {
			return v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reasonReadinessGatesNotReady, Message: msg}
		}
	}
	return v1.PodCondition{Type: t, Status: v1.ConditionTrue}
}

// readinessGatesMessage is why the pod's readiness gates hold it unready,
// in upstream's words; "" when every gate's condition is True. The gates'
// conditions are set by others through the API, so they are read from the
// status last known.
func readinessGatesMessage(pod *v1.Pod, previous *v1.PodStatus) string {
	var msgs []string
	for _, g := range pod.Spec.ReadinessGates {
		i := slices.IndexFunc(previous.Conditions, func(c v1.PodCondition) bool { return c.Type == g.ConditionType })
		switch {
		case i < 0:
			msgs = append(msgs, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case previous.Conditions[i].Status != v1.ConditionTrue:
			msgs = append(msgs, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, previous.Conditions[i].Status))
		}
	}
	return strings.Join(msgs, ", ")
}

func notReadyMessage(unknown, other []string, what string) string {
	var msgs []string
	if len(unknown) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(other) > 0 {
		msgs = append(msgs, fmt.Sprintf("containers with %s status: %s", what, other))
	}
	return strings.Join(msgs, ", ")
}

func findStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}

func hasAnyRegularContainerStarted(pod *v1.Pod, statuses []v1.ContainerStatus) bool {
	for _, c := range pod.Spec.Containers {
		if s, ok := findStatus(statuses, c.Name); ok && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// getPhase is upstream's getPhase without container restart rules;
// terminal is its podIsTerminal for a pod that is not static.
func getPhase(pod *v1.Pod, info []v1.ContainerStatus, initialized, terminal bool) v1.PodPhase {
	pendingInit, pendingSidecars, failedInit := 0, 0, 0
	var unknown, running, waiting, stopped, succeeded int
	for _, c := range pod.Spec.InitContainers {
		s, ok := findStatus(info, c.Name)
		if isRestartableInit(&c) {
			switch {
			case !ok:
				unknown++
			case s.State.Running != nil:
				if s.Started == nil || !*s.Started {
					pendingSidecars++
				}
				running++
			case s.State.Terminated != nil:
			case s.State.Waiting != nil && s.LastTerminationState.Terminated == nil:
				pendingSidecars++
				waiting++
			case s.State.Waiting == nil:
				pendingSidecars++
				unknown++
			}
			continue
		}
		switch {
		case !ok, s.State.Running != nil:
			pendingInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			if s.LastTerminationState.Terminated.ExitCode != 0 {
				failedInit++
			}
		default:
			pendingInit++
		}
	}
	for _, c := range pod.Spec.Containers {
		s, ok := findStatus(info, c.Name)
		switch {
		case !ok:
			unknown++
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil && s.LastTerminationState.Terminated != nil:
			stopped++
		case s.State.Waiting != nil:
			waiting++
		default:
			unknown++
		}
	}
	if failedInit > 0 && pod.Spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingInit > 0 || (pendingSidecars > 0 && !initialized) || waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		switch {
		case terminal && stopped == succeeded:
			return v1.PodSucceeded
		case terminal:
			return v1.PodFailed
		case pod.Spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning
		case stopped == succeeded:
			return v1.PodSucceeded
		case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		}
		return v1.PodRunning
	}
	return v1.PodPending
}

// convertContainerStatuses is upstream's convertToAPIContainerStatuses:
// the newest instance gives the state, the one before it the last
// termination state; containers never created wait as ContainerCreating
// (PodInitializing in pods with init containers); waiting overrides the
// state of containers that should be running.
func convertContainerStatuses(pod *v1.Pod, status *PodStatus, waiting map[string]WaitingReason, previous []v1.ContainerStatus, containers []v1.Container, hasInit, isInit bool) []v1.ContainerStatus {
	if len(containers) == 0 {
		return nil
	}
	defaultReason := ReasonContainerCreating
	if hasInit {
		defaultReason = ReasonPodInitializing
	}
	old := map[string]v1.ContainerStatus{}
	for _, s := range previous {
		old[s.Name] = s
	}
	statuses := map[string]*v1.ContainerStatus{}
	for _, c := range containers {
		s := &v1.ContainerStatus{Name: c.Name, Image: c.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultReason}}}
		if o, ok := old[c.Name]; ok {
			if o.State.Terminated != nil {
				s = &o
			} else {
				s.RestartCount = o.RestartCount
				s.LastTerminationState = o.LastTerminationState
			}
		}
		statuses[c.Name] = s
	}
	seen := map[string]int{}
	for _, cs := range status.ContainerStatuses { // newest first
		s, ok := statuses[cs.Name]
		if !ok || seen[cs.Name] >= 2 {
			continue
		}
		conv := toAPIContainerStatus(cs, isInit)
		if conv.State.Running != nil && isInit && slices.ContainsFunc(containers, func(c v1.Container) bool {
			return c.Name == cs.Name && isRestartableInit(&c)
		}) {
			conv.Ready = true // a running sidecar is ready
		}
		if seen[cs.Name] == 0 {
			*s = conv
		} else {
			s.LastTerminationState = conv.State
		}
		seen[cs.Name]++
	}
	for i := range containers {
		c := &containers[i]
		if isInit && containerSucceeded(c.Name, status) {
			continue
		}
		if !shouldContainerBeRestarted(pod, c, status) {
			continue
		}
		w, ok := waiting[c.Name]
		if !ok {
			continue
		}
		s := statuses[c.Name]
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: w.Reason, Message: w.Message}}
		s.Ready, s.Started = false, ptrTo(false)
	}
	out := make([]v1.ContainerStatus, 0, len(containers))
	for i := range containers {
		s := statuses[containers[i].Name]
		specDetails(&containers[i], s, status, ephemeralContainer(pod, containers[i].Name) == nil)
		out = append(out, *s)
	}
	if !isInit {
		// Upstream sorts app container statuses by name.
		slices.SortFunc(out, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	}
	return out
}

func toAPIContainerStatus(cs *ContainerStatus, isInit bool) v1.ContainerStatus {
	id := runtimeName + "://" + cs.ID
	s := v1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.RestartCount),
		Image:        cs.Image,
		ImageID:      cs.ImageRef,
		ContainerID:  id,
		Started:      ptrTo(false),
		User:         cs.User,
	}
	switch cs.State {
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		s.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
		s.Started = ptrTo(true)
		// Without readiness probes a running container is ready, except an
		// init container, which is ready once it completed.
		s.Ready = !isInit
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		s.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    cs.ExitCode,
			Reason:      cs.Reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: id,
		}
		s.Ready = isInit && cs.ExitCode == 0
	default:
		s.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return s
}

// notStarted marks every container that does not run as not started, as
// upstream's probe manager does for each status it sees (started is for
// running containers only).
func notStarted(statuses []v1.ContainerStatus) {
	for i := range statuses {
		if statuses[i].State.Running == nil {
			statuses[i].Started = ptrTo(false)
		}
	}
}

// specDetails adds what upstream's status shows of the container's spec:
// its volume mounts (RecursiveReadOnlyMounts, GA: recursive read-only is
// never enabled here, the runtime cannot), and, once an instance exists,
// its resources and allocated requests (InPlacePodVerticalScaling, GA):
// the resources applied to the instance, and the allocated requests (the
// spec the pod-manager gives is the allocation).
// An ephemeral container has no resources to show: upstream's allocation
// holds none for it (resizable false).
func specDetails(c *v1.Container, s *v1.ContainerStatus, status *PodStatus, resizable bool) {
	s.VolumeMounts = nil
	for _, m := range c.VolumeMounts {
		vm := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			vm.RecursiveReadOnly = ptrTo(v1.RecursiveReadOnlyDisabled)
		}
		s.VolumeMounts = append(s.VolumeMounts, vm)
	}
	if cs := status.FindContainer(c.Name); resizable && s.ContainerID != "" && cs != nil {
		// What was applied to the instance shows, the allocation while it is
		// not known; the allocation is the spec the pod-manager gave.
		s.Resources = c.Resources.DeepCopy()
		if cs.Resources != nil && cs.ID == s.ContainerID {
			s.Resources.Requests = withResizable(s.Resources.Requests, cs.Resources.Requests)
			s.Resources.Limits = withResizable(s.Resources.Limits, cs.Resources.Limits)
		}
		s.AllocatedResources = c.Resources.Requests.DeepCopy()
	}
}

func ptrTo[T any](v T) *T { return &v }

// ApplyReadiness is status with the ready flag of each running, started
// container that has a readiness probe set from that probe's result in
// probes (where one is known), and the pod's Ready and ContainersReady
// conditions made again from them, as upstream's status manager's
// SetContainerReadiness does with a probe's result between sync passes.
// It serves a terminating pod, which no sync pass reports any more while
// its readiness probes still run: a container that fails its readiness
// probe during its graceful shutdown shows ready false, and the pod
// Ready False, before it stops. changed reports whether anything differs
// from status; status itself is never changed. A condition whose status
// changed gets now as its transition time.
func ApplyReadiness(pod *v1.Pod, status v1.PodStatus, probes results.Pod, now time.Time) (out v1.PodStatus, changed bool) {
	if pod == nil || len(probes) == 0 {
		return status, false
	}
	out = *status.DeepCopy()
	apply := func(statuses []v1.ContainerStatus, containers []v1.Container, isInit bool) {
		for i := range statuses {
			s := &statuses[i]
			idx := slices.IndexFunc(containers, func(c v1.Container) bool { return c.Name == s.Name })
			if idx < 0 || s.State.Running == nil || s.Started == nil || !*s.Started {
				continue
			}
			c := &containers[idx]
			if c.ReadinessProbe == nil || isInit && !isRestartableInit(c) {
				continue
			}
			r := probes.Of(strings.TrimPrefix(s.ContainerID, runtimeName+"://")).Readiness
			if r == results.Unknown {
				continue // no verdict for this instance: as the pass left it
			}
			if ready := r == results.Success; s.Ready != ready {
				s.Ready, changed = ready, true
			}
		}
	}
	apply(out.InitContainerStatuses, pod.Spec.InitContainers, true)
	apply(out.ContainerStatuses, pod.Spec.Containers, false)
	if !changed {
		return status, false
	}
	all := append(slices.Clone(out.InitContainerStatuses), out.ContainerStatuses...)
	for _, t := range []v1.PodConditionType{v1.PodReady, v1.ContainersReady} {
		c := readyCondition(pod, all, out.Phase, t, &status)
		c.ObservedGeneration = pod.Generation
		c.LastTransitionTime = metav1.NewTime(now)
		i := slices.IndexFunc(out.Conditions, func(p v1.PodCondition) bool { return p.Type == t })
		if i < 0 {
			out.Conditions = append(out.Conditions, c)
			continue
		}
		if old := out.Conditions[i]; old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		}
		out.Conditions[i] = c
	}
	return out, true
}
