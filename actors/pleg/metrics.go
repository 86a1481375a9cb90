package pleg

import (
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

// containerStates are the container_state label of each CRI container
// state: upstream's kubecontainer names.
var containerStates = map[runtimeapi.ContainerState]string{
	runtimeapi.ContainerState_CONTAINER_CREATED: metrics.ContainerStateCreated,
	runtimeapi.ContainerState_CONTAINER_RUNNING: metrics.ContainerStateRunning,
	runtimeapi.ContainerState_CONTAINER_EXITED:  metrics.ContainerStateExited,
	runtimeapi.ContainerState_CONTAINER_UNKNOWN: metrics.ContainerStateUnknown,
}

// runningCounts counts, in one relist, the pods with a ready sandbox and the
// containers by state. As for events, only the kubelet's objects (those
// with a pod UID label) count. Every state is present, zero included, so
// that a state no container is in any more reads 0 rather than its last
// count.
func runningCounts(m *messages.Relisted) (pods int, containers map[string]int) {
	ready := map[types.UID]bool{}
	for _, s := range m.Sandboxes {
		if uid := types.UID(s.Labels[labelPodUID]); uid != "" && s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			ready[uid] = true
		}
	}
	containers = make(map[string]int, len(containerStates))
	for _, state := range containerStates {
		containers[state] = 0
	}
	for _, c := range m.Containers {
		if c.Labels[labelPodUID] == "" {
			continue
		}
		state, ok := containerStates[c.State]
		if !ok {
			state = metrics.ContainerStateUnknown
		}
		containers[state]++
	}
	return len(ready), containers
}

// recordRelist sets the gauges upstream's PLEG sets after a successful
// relist: the time it was last seen active and the running pods and
// containers.
func recordRelist(m *messages.Relisted) {
	metrics.PLEGLastSeen.Set(float64(m.At.Unix()))
	pods, containers := runningCounts(m)
	metrics.RunningPods.Set(float64(pods))
	for state, n := range containers {
		metrics.RunningContainers.WithLabelValues(state).Set(float64(n))
	}
}
