package messages

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// PodLifecycleEventType is what changed in the runtime, as upstream's PLEG
// names it.
type PodLifecycleEventType string

const (
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	ContainerDied    PodLifecycleEventType = "ContainerDied"
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	SandboxChanged   PodLifecycleEventType = "SandboxChanged"
	// SandboxRemoved: a sandbox is gone from the runtime (GC or a kill
	// removed it); unlike the other events it never reveals a live orphan.
	SandboxRemoved PodLifecycleEventType = "SandboxRemoved"
)

// PodLifecycleEvent is one change seen by a relist.
type PodLifecycleEvent struct {
	PodUID types.UID
	// PodName and PodNamespace come from the runtime's labels, so that a pod
	// no source knows (an orphan) can still be named and cleaned up.
	PodName, PodNamespace string
	Type                  PodLifecycleEventType
	// ID is the container's or sandbox's runtime ID.
	ID string
	// State is its CRI state after the change (e.g. "CONTAINER_RUNNING",
	// "SANDBOX_READY"); empty when it was removed. A pod-worker compares it
	// with what its last sync observed.
	State string
}

// PodLifecycleEvents carries the changes one relist found.
// Sender: the PLEG actor. Receiver: the pod-manager, which routes each event
// to the pod's worker.
type PodLifecycleEvents struct {
	Events []PodLifecycleEvent
}

func (m *PodLifecycleEvents) Summary() string {
	counts := map[PodLifecycleEventType]int{}
	pods := map[types.UID]bool{}
	for _, e := range m.Events {
		counts[e.Type]++
		pods[e.PodUID] = true
	}
	return fmt.Sprintf("%d events for %d pods (started %d, died %d, removed %d, sandbox %d)", len(m.Events), len(pods),
		counts[ContainerStarted], counts[ContainerDied], counts[ContainerRemoved], counts[SandboxChanged])
}

// RuntimeChanged tells a pod-worker that its pod changed in the runtime, so
// it syncs again. Sender: the pod-manager (routing PLEG events). Receiver:
// the pod's pod-worker.
type RuntimeChanged struct {
	Events []PodLifecycleEvent
}

func (m *RuntimeChanged) Summary() string {
	if len(m.Events) == 1 {
		e := m.Events[0]
		return fmt.Sprintf("%s %.12s", e.Type, e.ID)
	}
	return fmt.Sprintf("%d runtime events", len(m.Events))
}

// Relist asks the PLEG actor to list the runtime now.
// Sender and receiver: the PLEG actor (its period timer).
type Relist struct{}

func (m *Relist) Summary() string { return "relist" }

// HealthRequest asks an actor how healthy it is. The asker waits for a
// HealthReport with a timeout: an actor too busy to answer is unhealthy.
// Sender: the kubelet-API actor (for /healthz). Receiver: PLEG, pod-manager.
type HealthRequest struct{}

func (m *HealthRequest) Summary() string { return "health?" }

// HealthReport answers a HealthRequest.
// Sender: PLEG or pod-manager. Receiver: whoever asked.
type HealthReport struct {
	Name    string
	Healthy bool
	Detail  string
	// LastActivity is PLEG's last successful relist or the pod-manager's last
	// handled message.
	LastActivity time.Time
}

func (m *HealthReport) Summary() string {
	return fmt.Sprintf("%s healthy=%v %s", m.Name, m.Healthy, m.Detail)
}

// Relisted is the outcome of one relist, run outside PLEG's mailbox.
// Sender and receiver: the PLEG actor (from its own goroutine).
type Relisted struct {
	At         time.Time
	Sandboxes  []*runtimeapi.PodSandbox
	Containers []*runtimeapi.Container
	Err        error
}

func (m *Relisted) Summary() string {
	if m.Err != nil {
		return "relist failed: " + m.Err.Error()
	}
	return fmt.Sprintf("relisted %d sandboxes, %d containers", len(m.Sandboxes), len(m.Containers))
}
