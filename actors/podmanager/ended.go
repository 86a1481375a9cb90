package podmanager

import (
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/actors/podworker"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// ended tells a pod whose source says it has ended: its phase is Succeeded
// or Failed (upstream's IsPodPhaseTerminal). Such a pod is never started
// again, whatever is left of it in the runtime: its containers may have
// been removed meanwhile (by GC, by hand), and a sync would then create
// them anew. A pod this node rejected at admission is Failed in the API,
// and so stays rejected across restarts. Static pods always come Pending
// from their manifests: upstream gives them no terminal phase either.
func ended(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// endReason is the reason of the TerminatePod that stops an ended pod.
func endReason(pod *v1.Pod) string {
	return fmt.Sprintf("the pod has ended (phase %s in the API): stopping what is left of it, never starting it again", pod.Status.Phase)
}

// startEnded takes in a pod that had ended before this pod-manager saw it,
// without admission: if the runtime may hold something of it, a worker
// only stops that (keeping a completed pod's containers for its logs, as
// any kill of a pod that ran to completion); otherwise the pod is finished
// at once. Its status stays the API's.
func (a *Actor) startEnded(ctx actor.Context, source string, pod *v1.Pod) {
	e := &podEntry{pod: pod, source: source, status: *pod.Status.DeepCopy(),
		end: &messages.TerminatePod{Reason: endReason(pod), Pod: pod}}
	a.log.Debug().Str("pod", pod.Namespace+"/"+pod.Name).Str("phase", string(pod.Status.Phase)).
		Msg("the pod has ended: not starting it again")
	if a.isNew(e, pod.UID) {
		// The runtime had nothing of it at start, and no worker of this
		// pod-manager has run it: nothing to stop.
		e.finished, e.state = true, podworker.Terminated.String()
		a.pods[pod.UID] = e
		return
	}
	a.spawn(ctx, e, pod.UID, pod.Name, pod.Namespace)
}

// endPod stops a running pod whose API phase became terminal.
func (a *Actor) endPod(ctx actor.Context, e *podEntry) {
	a.log.Info().Str("pod", e.pod.Namespace+"/"+e.pod.Name).Str("phase", string(e.pod.Status.Phase)).
		Msg("the pod has ended in the API: stopping it")
	e.end = &messages.TerminatePod{Reason: endReason(e.pod), Pod: e.pod}
	if e.worker != nil {
		supervision.Tell(ctx, e.worker, e.end)
	}
}
