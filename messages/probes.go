package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/probe/results"
)

// ProbeTargets tells a pod's prober what to probe: the pod's latest spec and
// its status as the last sync pass saw it (container IDs, running states
// and start times, the pod IP). The prober starts the probes of containers
// that run, resets those of a container whose instance changed, and stops
// the rest. Terminating: the pod is being stopped; its readiness probes go
// on until its containers stop, its liveness and startup probes stop (as
// upstream's StopLivenessAndStartup). A nil Pod stops every probe (the
// pod's containers have stopped).
// Sender: the pod-worker, after each sync pass and when the pod starts
// terminating. Receiver: its prober.
type ProbeTargets struct {
	Pod         *v1.Pod
	Status      v1.PodStatus
	Terminating bool
}

func (m *ProbeTargets) Summary() string {
	if m.Pod == nil {
		return "probe nothing (stopped)"
	}
	running := 0
	for _, s := range append(append([]v1.ContainerStatus(nil), m.Status.InitContainerStatuses...), m.Status.ContainerStatuses...) {
		if s.State.Running != nil {
			running++
		}
	}
	if m.Terminating {
		return fmt.Sprintf("probe targets (terminating, readiness only): %d running containers", running)
	}
	return fmt.Sprintf("probe targets: %d running containers", running)
}

// ProbeResultChanged reports that one probe's result for one container
// instance changed (a threshold was crossed, or the instance's probe was
// reset). The pod-worker keeps the results and syncs: a liveness or
// startup failure kills the container, readiness and startup changes show
// in the status. While the pod terminates only readiness changes count,
// and they show in the status without a sync.
// Sender: the pod's prober. Receiver: its pod-worker.
type ProbeResultChanged struct {
	// ContainerID is the runtime ID, without the "containerd://" prefix.
	ContainerID   string
	ContainerName string
	Kind          results.Kind
	Result        results.Result
}

func (m *ProbeResultChanged) Summary() string {
	return fmt.Sprintf("%s probe of %s: %s", m.Kind, m.ContainerName, m.Result)
}
