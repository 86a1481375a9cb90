package kubeletapi

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/messages"
)

// snapshotMaxAge is how old the state /pods and /healthz answer from may
// be: however many requests come in, the pod-manager and PLEG are asked at
// most once per snapshotMaxAge on their behalf.
const snapshotMaxAge = time.Second

// missMaxAge bounds how often a lookup of a pod that the snapshot does not
// hold (exec, logs of a pod just created) asks again.
const missMaxAge = 100 * time.Millisecond

// nodeState is what the pod-manager and PLEG answered at one time.
type nodeState struct {
	at time.Time
	// pods is the pod-manager's answer to ListPods; nil with podsErr.
	pods    *messages.PodList
	podsErr error
	// podManager and pleg are the results of their health checks: nil
	// when healthy.
	podManager, pleg error
}

// stateCache holds the latest nodeState and takes a new one when asked for
// one younger than the one it has: one fetch at a time, whose result every
// request waiting meanwhile shares.
type stateCache struct {
	fetch func() *nodeState

	mu       sync.Mutex
	current  *nodeState
	inflight chan struct{}
}

// get returns a state taken less than maxAge ago, waiting for a fetch when
// there is none; an error only when ctx ends first.
func (c *stateCache) get(ctx context.Context, maxAge time.Duration) (*nodeState, error) {
	c.mu.Lock()
	if s := c.current; s != nil && time.Since(s.at) < maxAge {
		c.mu.Unlock()
		return s, nil
	}
	done := c.inflight
	if done == nil {
		done = make(chan struct{})
		c.inflight = done
		go func() {
			s := c.fetch()
			c.mu.Lock()
			c.current, c.inflight = s, nil
			c.mu.Unlock()
			close(done)
		}()
	}
	c.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current, nil
}

// fetchState asks the pod-manager for its pods and health and PLEG for its
// health, at once, each bounded by askTimeout. The time of the state is
// when the questions were asked: it is no newer than that.
func (a *Actor) fetchState() *nodeState {
	s := &nodeState{at: time.Now()}
	var wg sync.WaitGroup
	wg.Go(func() {
		res, err := a.ask(a.p.PodManager, &messages.ListPods{})
		if err != nil {
			s.podsErr = fmt.Errorf("pod-manager did not answer: %w", err)
			return
		}
		list, ok := res.(*messages.PodList)
		if !ok {
			s.podsErr = fmt.Errorf("pod-manager answered %T", res)
			return
		}
		s.pods = list
	})
	wg.Go(func() { s.podManager = a.healthOf(a.p.PodManager) })
	wg.Go(func() { s.pleg = a.healthOf(a.p.PLEG) })
	wg.Wait()
	return s
}

func (a *Actor) healthOf(pid *actor.PID) error {
	res, err := a.ask(pid, &messages.HealthRequest{})
	if err != nil {
		return fmt.Errorf("%s did not answer: %w", pid.Id, err)
	}
	report, ok := res.(*messages.HealthReport)
	if !ok {
		return fmt.Errorf("%s answered %T", pid.Id, res)
	}
	if !report.Healthy {
		return fmt.Errorf("%s", report.Detail)
	}
	return nil
}

// listPods is the pod-manager's pods from the snapshot, for the stats'
// volume names: a summary or /metrics asks the pod-manager no more than
// /pods does.
func (a *Actor) listPods(ctx context.Context) ([]v1.Pod, error) {
	state, err := a.state.get(ctx, snapshotMaxAge)
	if err != nil {
		return nil, err
	}
	if state.podsErr != nil {
		return nil, state.podsErr
	}
	return state.pods.Pods, nil
}
