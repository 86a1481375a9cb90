package podruntime

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// terminationOrder holds back the stop of a pod's sidecars (init containers
// with restartPolicy Always) as upstream's terminationOrdering: the regular
// containers stop first, in parallel; then the sidecars in reverse order of
// the spec, each once every regular container and the sidecar after it
// have stopped. Each waits at most its grace period, so that the pod's
// stop never takes longer than with no order.
type terminationOrder struct {
	mu sync.Mutex
	// stopped has a channel per container, closed once it has stopped
	// (at once for a container that was not running).
	stopped map[string]chan struct{}
	// after lists, per sidecar, the channels of the containers it waits
	// for.
	after map[string][]chan struct{}
}

// newTerminationOrder returns the order of the pod's containers for a kill
// of those named in running; nil when the pod has no sidecar (or no spec):
// then everything stops at once.
func newTerminationOrder(pod *v1.Pod, running []string) *terminationOrder {
	hasSidecar := false
	for i := range pod.Spec.InitContainers {
		hasSidecar = hasSidecar || isRestartableInit(&pod.Spec.InitContainers[i])
	}
	if !hasSidecar {
		return nil
	}
	isRunning := make(map[string]bool, len(running))
	for _, n := range running {
		isRunning[n] = true
	}
	o := &terminationOrder{stopped: map[string]chan struct{}{}, after: map[string][]chan struct{}{}}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		if !isRunning[name] {
			close(ch)
			return ch
		}
		o.stopped[name] = ch
		return ch
	}
	var regular []chan struct{}
	for _, c := range pod.Spec.Containers {
		regular = append(regular, channel(c.Name))
	}
	var next chan struct{} // the channel of the sidecar after this one
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		ch := channel(c.Name)
		if !isRestartableInit(c) {
			continue
		}
		o.after[c.Name] = append(o.after[c.Name], regular...)
		if next != nil {
			o.after[c.Name] = append(o.after[c.Name], next)
		}
		next = ch
	}
	return o
}

// waitForTurn waits until the containers the named one must outlive have
// stopped, at most grace seconds, and returns the whole seconds it waited,
// as upstream's (truncated, so that the container keeps the fraction).
func (o *terminationOrder) waitForTurn(ctx context.Context, name string, grace int64) int64 {
	if grace <= 0 {
		return 0
	}
	start := time.Now()
	t := time.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	for _, ch := range o.after[name] {
		select {
		case <-ch:
		case <-t.C:
			return int64(time.Since(start).Seconds())
		case <-ctx.Done():
			return int64(time.Since(start).Seconds())
		}
	}
	return int64(time.Since(start).Seconds())
}

// terminated records that the named container has stopped.
func (o *terminationOrder) terminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.stopped[name]; ok {
		close(ch)
		delete(o.stopped, name)
	}
}
