package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/parallel"
	"github.com/actorlet/actorlet/internal/podref"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
)

const (
	// minGracePeriod is upstream's minimumGracePeriodInSeconds: even a
	// forced stop gives the process 2 seconds after SIGTERM.
	minGracePeriod = 2
	// defaultGracePeriod is the API default of terminationGracePeriodSeconds.
	defaultGracePeriod = 30
)

// KillPod stops every container of the pod in parallel with the grace
// period (each running container's preStop hook, then StopContainer with
// what the hook left of it: the runtime sends SIGTERM, then SIGKILL at the
// deadline), then stops the sandboxes and removes containers and
// sandboxes: the pod is gone from its sources, so nothing of it is kept
// (upstream's pod-container deleter removes a deleted pod's dead containers
// as soon as they die; the sandbox, which upstream's container GC would
// remove within a minute, goes at once). gracePeriod nil is the pod's
// terminationGracePeriodSeconds as recorded on its containers. To shorten a
// kill in flight, cancel its ctx and call KillPod again.
//
// Without the pod's spec (an orphan), its Killing events refer to each
// container as an "implicitly required container", as upstream's do for
// pods restored from container labels; KillPodWithSpec refers to them by
// their place in the spec.
func (r *Runtime) KillPod(ctx context.Context, uid types.UID, name, namespace string, gracePeriod *int64) error {
	return r.killPod(ctx, metaPod(uid, name, namespace), gracePeriod, nil)
}

// KillPodWithSpec is KillPod for a pod whose spec is known (a pod being
// deleted or removed from its source, or one that ran to completion): the
// same kill, with the events referring to spec.containers{NAME} as
// upstream's, and its sidecars stopped after its regular containers, in
// upstream's order (an orphan's containers all stop at once). A pod that
// ran to completion (Succeeded or Failed before the kill: nothing runs and, by its restart policy, nothing starts again) is
// only stopped: as upstream, its dead containers and its sandbox stay, so
// that its logs can still be read, until container GC removes them by its
// policy, or entirely once the pod is gone.
func (r *Runtime) KillPodWithSpec(ctx context.Context, pod *v1.Pod, gracePeriod *int64) error {
	return r.killPod(ctx, pod, gracePeriod, nil)
}

// Kill is one kill as a pod-worker asks for it.
type Kill struct {
	// Pod is the pod's spec (KillPodWithSpec); nil for an orphan, known
	// by UID, Name and Namespace only (KillPod).
	Pod             *v1.Pod
	UID             types.UID
	Name, Namespace string
	// GracePeriod nil is the one recorded on the containers.
	GracePeriod *int64
	// Stopped, when set, is called once the pod's containers and sandbox
	// are stopped, before anything is removed: nothing of the pod runs any
	// more, so it may go from the API (upstream deletes it then, and
	// leaves the removal to GC). final is the pod as the runtime shows it
	// then, its containers' exit codes for the pod's terminal status; nil
	// when reading it failed.
	Stopped func(final *PodStatus)
}

// Kill runs KillPodWithSpec, or KillPod without a spec, telling k.Stopped
// when everything is stopped.
func (r *Runtime) Kill(ctx context.Context, k Kill) error {
	pod := k.Pod
	if pod == nil {
		pod = metaPod(k.UID, k.Name, k.Namespace)
	}
	return r.killPod(ctx, pod, k.GracePeriod, k.Stopped)
}

// killPod stops and removes the pod; a failure is upstream's
// FailedKillPod event, unless the kill was cancelled.
func (r *Runtime) killPod(ctx context.Context, pod *v1.Pod, gracePeriod *int64, stopped func(*PodStatus)) error {
	err := r.kill(ctx, pod, gracePeriod, stopped)
	if err != nil && ctx.Err() == nil {
		r.podEvent(pod, v1.EventTypeWarning, events.FailedToKillPod, fmt.Sprintf("error killing pod: %v", err))
	}
	return err
}

func (r *Runtime) kill(ctx context.Context, pod *v1.Pod, gracePeriod *int64, stopped func(*PodStatus)) error {
	uid, name, namespace := pod.UID, pod.Name, pod.Namespace
	status, err := r.GetPodStatus(ctx, uid, name, namespace)
	if err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", namespace, name, err)
	}
	grace := recordedGracePeriod(status)
	if gracePeriod != nil {
		grace = *gracePeriod
	}
	completed := ranToCompletion(pod, status)
	if err := r.stopPod(ctx, pod, status, grace); err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", namespace, name, err)
	}
	if r.Opts.Cgroups != nil {
		r.Opts.Cgroups.Forget(uid)
	}
	if stopped != nil {
		final, err := r.GetPodStatus(ctx, uid, name, namespace)
		if err != nil {
			final = nil
		}
		stopped(final)
	}
	// Nothing of the pod runs: what was applied to its containers goes,
	// that of a pod that ran to completion too (its containers stay for
	// GC, but no status is made of them any more), or it would stay for
	// good, in memory and in the checkpoint.
	if err := r.Opts.Actuated.Forget(uid); err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", namespace, name, err)
	}
	if completed {
		return nil
	}
	var errs []error
	for _, c := range status.ContainerStatuses {
		sctx, cancel := r.callCtx(ctx)
		_, err := r.RT.RemoveContainer(sctx, &runtimeapi.RemoveContainerRequest{ContainerId: c.ID})
		cancel()
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %s (%s): %w", c.Name, c.ID, err))
			continue
		}
		r.unlinkContainerLog(name, namespace, c.Name, c.ID)
	}
	for _, s := range status.SandboxStatuses {
		sctx, cancel := r.callCtx(ctx)
		_, err := r.RT.RemovePodSandbox(sctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: s.Id})
		cancel()
		if err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s: %w", s.Id, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("kill pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ranToCompletion reports whether the pod, as status and its status last
// reported show it, reached Succeeded or Failed by itself. Only a pod with a spec can: an orphan's
// restart policy is unknown. The phase is computed from the runtime alone,
// as the sync's, so that a kill racing the pod's last exit decides as the
// sync that saw it would have.
func ranToCompletion(pod *v1.Pod, status *PodStatus) bool {
	if len(pod.Spec.Containers) == 0 {
		return false // an orphan: metaPod has no spec
	}
	for _, c := range status.ContainerStatuses {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			return false
		}
	}
	// The status last reported tells a pod that ended for a reason the
	// runtime does not show (its active deadline passed).
	phase := GenerateAPIStatus(pod, status, nil, nil, &pod.Status, time.Now()).Phase
	return phase == v1.PodSucceeded || phase == v1.PodFailed
}

// RemovePodLogs removes the pod's log directory, once the pod is gone for
// good (its logs cannot be served any more without its containers).
func (r *Runtime) RemovePodLogs(uid types.UID, name, namespace string) error {
	return os.RemoveAll(logs.PodLogsDir(r.Opts.PodLogsDir, namespace, name, uid))
}

// stopPod stops the containers still running in parallel, each as
// killContainer does (its preStop hook first), then the sandboxes. A pod
// with sidecars, whose spec is known, stops them in upstream's order: the
// regular containers first, then the sidecars in reverse order, within the
// one grace period.
func (r *Runtime) stopPod(ctx context.Context, pod *v1.Pod, status *PodStatus, grace int64) error {
	var (
		parts   parallel.Group
		mu      sync.Mutex
		errs    []error
		running []string
	)
	for _, c := range status.ContainerStatuses {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED {
			running = append(running, c.Name)
		}
	}
	order := newTerminationOrder(pod, running)
	for _, c := range status.ContainerStatuses {
		if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			continue
		}
		r.killingEvent(pod, c.ID, c.Name, "")
		parts.Go(func() {
			if err := r.killContainer(ctx, r.containerKill(pod, status, c.ID, c.Name, grace, order)); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		})
	}
	parts.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, s := range status.SandboxStatuses {
		if s.State != runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		sctx, cancel := r.callCtx(ctx)
		_, err := r.RT.StopPodSandbox(sctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.Id})
		cancel()
		if err != nil && !isNotFound(err) {
			return fmt.Errorf("stop sandbox %s: %w", s.Id, err)
		}
	}
	return nil
}

// containerKill is the kill of the pod's container instance id, as status
// shows it: its preStop hook runs only if it is running.
func (r *Runtime) containerKill(pod *v1.Pod, status *PodStatus, id, name string, grace int64, order *terminationOrder) containerKill {
	k := containerKill{pod: pod, podIP: firstIP(status.IPs), id: id, name: name, spec: podref.Container(pod, name), grace: grace, order: order}
	for _, cs := range status.ContainerStatuses {
		if cs.ID == id {
			k.running = cs.State == runtimeapi.ContainerState_CONTAINER_RUNNING
		}
	}
	return k
}

// killingEvent records upstream's Killing event for a container about to be
// stopped: why, when the sync says, else "Stopping container NAME".
func (r *Runtime) killingEvent(pod *v1.Pod, id, name, message string) {
	if message == "" {
		message = "Stopping container " + name
	}
	r.containerEvent(pod, name, id, v1.EventTypeNormal, events.KillingContainer, message)
}

func (r *Runtime) stopContainer(ctx context.Context, id, name string, grace int64) error {
	grace = max(grace, minGracePeriod)
	d := r.Opts.RuntimeRequestTimeout
	if d <= 0 {
		d = defaultRuntimeRequestTimeout
	}
	sctx, cancel := context.WithTimeout(ctx, time.Duration(grace)*time.Second+d)
	defer cancel()
	_, err := r.RT.StopContainer(sctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: grace})
	if err == nil || isNotFound(err) || r.exitedWithin(ctx, id, exitReportDelay) {
		// A container that exits by itself while being stopped can make
		// containerd 1.6 fail the stop ("ttrpc: closed"), and report the
		// exit a moment later: it is stopped all the same.
		return nil
	}
	return fmt.Errorf("stop container %s (%s) with grace period %ds: %w", name, id, grace, err)
}

// exitReportDelay bounds how long after a failed stop the runtime may take
// to report the container's own exit.
const exitReportDelay = 2 * time.Second

// exitedWithin reports whether the container has exited or is gone, or
// does within d.
func (r *Runtime) exitedWithin(ctx context.Context, id string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		sctx, cancel := r.callCtx(ctx)
		resp, err := r.RT.ContainerStatus(sctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
		cancel()
		switch {
		case err != nil:
			return isNotFound(err)
		case resp.GetStatus().GetState() == runtimeapi.ContainerState_CONTAINER_EXITED:
			return true
		case time.Now().After(deadline) || ctx.Err() != nil:
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// recordedGracePeriod is the pod's grace period from its containers'
// annotations: KillPod may run without the pod's spec (an orphan found
// after a restart).
func recordedGracePeriod(status *PodStatus) int64 {
	for _, c := range status.ContainerStatuses {
		if c.gracePeriod != nil {
			return *c.gracePeriod
		}
	}
	return defaultGracePeriod
}

// podGracePeriod is the grace period for killing the pod's containers
// during a sync: the deletion grace period once the pod is being deleted.
func podGracePeriod(pod *v1.Pod) int64 {
	if pod.DeletionGracePeriodSeconds != nil {
		return *pod.DeletionGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return defaultGracePeriod
}

func parseGracePeriod(annotations map[string]string) *int64 {
	for _, k := range []string{AnnotationPodDeletionGracePeriod, AnnotationPodTerminationGracePeriod} {
		if v, err := strconv.ParseInt(annotations[k], 10, 64); err == nil {
			return &v
		}
	}
	return nil
}
