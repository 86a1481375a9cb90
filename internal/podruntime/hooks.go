package podruntime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/events"
)

// Hooks runs a container's lifecycle hook handler (exec, httpGet or sleep)
// and returns its message (an exec's output) and error: lifecycle.Runner
// is the node's.
type Hooks interface {
	Run(ctx context.Context, pod *v1.Pod, podIP, containerID string, c *v1.Container, h *v1.LifecycleHandler) (string, error)
}

// Event reasons and the waiting reason of the hooks, as upstream's.
const (
	// ReasonPostStartHookError is the waiting reason of a container whose
	// postStart hook failed, until it starts again.
	ReasonPostStartHookError = "PostStartHookError"
)

// errNoHooks is the failure of every hook on a Runtime without Options.Hooks:
// a hook the pod asks for is never skipped silently.
var errNoHooks = errors.New("lifecycle hooks are not available on this node")

func (r *Runtime) runHook(ctx context.Context, pod *v1.Pod, podIP, id string, c *v1.Container, h *v1.LifecycleHandler) (string, error) {
	if r.Opts.Hooks == nil {
		return "", errNoHooks
	}
	return r.Opts.Hooks.Run(ctx, pod, podIP, id, c, h)
}

// postStart runs the container's postStart hook right after its start and
// reports whether it succeeded. The pass waits for it, so the container is
// reported Running only after it returns, as upstream's sync. On failure,
// as upstream: a FailedPostStartHook event without the hook's message
// (which may hold secrets), the container killed (its preStop hook runs),
// and the start counts as failed: PostStartHookError until the crash-loop
// backoff lets it start again.
func (s *syncPass) postStart(ctx context.Context, c *v1.Container, id string) bool {
	pod, r := s.pod, s.r
	ip := firstIP(s.podIPs)
	msg, err := r.runHook(ctx, pod, ip, id, c, c.Lifecycle.PostStart)
	if err == nil {
		return true
	}
	if ctx.Err() != nil {
		// The pass was cancelled (the pod is being killed): the hook was
		// cut short, and the pod's kill stops the container.
		s.fail(fmt.Errorf("postStart hook of container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
		return false
	}
	r.containerEvent(pod, c.Name, id, v1.EventTypeWarning, events.FailedPostStartHook, "PostStartHook failed")
	r.killingEvent(pod, id, c.Name, "FailedPostStartHook")
	s.stopped = true
	if kerr := r.killContainer(ctx, containerKill{pod: pod, podIP: ip, id: id, name: c.Name, spec: c, running: true, grace: podGracePeriod(pod)}); kerr != nil {
		s.fail(kerr)
	}
	s.waiting[c.Name] = WaitingReason{ReasonPostStartHookError, msg}
	s.fail(fmt.Errorf("postStart hook of container %s of pod %s/%s: %w", c.Name, pod.Namespace, pod.Name, err))
	return false
}

// containerKill is one container instance to stop, as upstream's
// killContainer stops it.
type containerKill struct {
	pod   *v1.Pod
	podIP string
	id    string
	name  string
	// spec is the container's spec; nil for an orphan's container, whose
	// preStop hook is read from the annotation recorded on it.
	spec *v1.Container
	// running: only a running container's preStop hook runs.
	running bool
	grace   int64
	// order, when set, holds the stop back until the containers this one
	// must outlive have stopped (a sidecar), within the grace period.
	order *terminationOrder
}

// killContainer stops one container as upstream's killContainer: its
// preStop hook first, given at most the grace period; then, for a sidecar,
// its turn, within what is left; then StopContainer with what is left
// after both, at least minGracePeriod.
func (r *Runtime) killContainer(ctx context.Context, k containerKill) error {
	grace := k.grace
	if k.running && grace > 0 {
		spec := k.spec
		if spec == nil {
			spec = r.restoreContainerSpec(ctx, k.id, k.name)
		}
		if spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil {
			hookCtx, cancel := context.WithCancel(ctx)
			elapsed, done := r.preStop(hookCtx, k.pod, k.podIP, k.id, spec, grace)
			grace -= elapsed
			// The hook is not waited for beyond the grace period; once the
			// container is stopped it has nothing left to act on.
			defer func() {
				cancel()
				if p := <-done; p != nil {
					panic(p)
				}
			}()
		}
	}
	if k.order != nil && grace > 0 {
		grace -= k.order.waitForTurn(ctx, k.name, grace)
	}
	if err := r.stopContainer(ctx, k.id, k.name, grace); err != nil {
		return err
	}
	if k.order != nil {
		// As upstream, a container whose stop failed holds the ones that
		// wait for it until their grace period ends.
		k.order.terminated(k.name)
	}
	return nil
}

// preStop runs the container's preStop hook and waits for it at most grace
// seconds, as upstream's executePreStopHook: it returns the whole seconds
// spent, and a channel that yields the hook's panic (nil if none) once the
// hook returns. A failure is recorded as a FailedPreStopHook event without
// the hook's message (which may hold secrets).
func (r *Runtime) preStop(ctx context.Context, pod *v1.Pod, podIP, id string, c *v1.Container, grace int64) (int64, <-chan any) {
	start := time.Now()
	done := make(chan any, 1)
	go func() {
		var panicked any
		defer func() {
			if rec := recover(); rec != nil {
				panicked = rec
			}
			done <- panicked
		}()
		// A hook cut short by its context (the container stopped, or the
		// kill cancelled) did not fail by itself.
		if _, err := r.runHook(ctx, pod, podIP, id, c, c.Lifecycle.PreStop); err != nil && ctx.Err() == nil {
			r.containerEvent(pod, c.Name, id, v1.EventTypeWarning, events.FailedPreStopHook, "PreStopHook failed")
		}
	}()
	t := time.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	finished := make(chan any, 1)
	select {
	case p := <-done:
		finished <- p
	case <-t.C:
		// Past the grace period the container is stopped all the same.
		go func() { finished <- <-done }()
	case <-ctx.Done():
		go func() { finished <- <-done }()
	}
	return int64(time.Since(start).Seconds()), finished
}

// restoreContainerSpec is the part of an orphan's container spec a kill
// needs, from the annotations recorded on the container (upstream's
// restoreSpecsFromContainerLabels): its preStop hook and its ports, which
// an httpGet hook may name. nil when the container cannot be read.
func (r *Runtime) restoreContainerSpec(ctx context.Context, id, name string) *v1.Container {
	sctx, cancel := r.callCtx(ctx)
	defer cancel()
	resp, err := r.RT.ContainerStatus(sctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil || resp.GetStatus() == nil {
		return nil
	}
	a := resp.Status.Annotations
	c := &v1.Container{Name: name}
	if raw := a[AnnotationContainerPreStopHandler]; raw != "" {
		h := &v1.LifecycleHandler{}
		if json.Unmarshal([]byte(raw), h) == nil {
			c.Lifecycle = &v1.Lifecycle{PreStop: h}
		}
	}
	if raw := a[AnnotationContainerPorts]; raw != "" {
		_ = json.Unmarshal([]byte(raw), &c.Ports)
	}
	return c
}

func firstIP(ips []string) string {
	if len(ips) == 0 {
		return ""
	}
	return ips[0]
}
