package podmanager

import (
	"fmt"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
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
func (m *Machine) startEnded(source string, pod *v1.Pod) {
	p := &PodState{Phase: Ending, Pod: pod, Source: source, Status: *pod.Status.DeepCopy(),
		End: &messages.TerminatePod{Reason: endReason(pod), Pod: pod}}
	m.log(zerolog.DebugLevel, "the pod has ended: not starting it again",
		map[string]any{"pod": fullName(pod), "phase": string(pod.Status.Phase)})
	if m.isNew(p, pod.UID) {
		// The runtime had nothing of it at start, and no worker of this
		// pod-manager has run it: nothing to stop.
		p.Phase = Finished
		m.pods[pod.UID] = p
		return
	}
	m.spawn(p, pod.UID, pod.Name, pod.Namespace)
}

// endPod stops a running pod whose API phase became terminal.
func (m *Machine) endPod(uid types.UID, p *PodState) {
	m.log(zerolog.InfoLevel, "the pod has ended in the API: stopping it",
		map[string]any{"pod": fullName(p.Pod), "phase": string(p.Pod.Status.Phase)})
	p.End = &messages.TerminatePod{Reason: endReason(p.Pod), Pod: p.Pod}
	p.Phase = Ending
	m.tell(uid, p.End)
}
