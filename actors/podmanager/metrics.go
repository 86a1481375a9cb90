package podmanager

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/actorlet/actorlet/internal/cgroups"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/messages"
)

// recordPodCounts sets kubelet_desired_pods, kubelet_active_pods and
// kubelet_mirror_pods, as upstream's pod cleanup does.
func (a *Actor) recordPodCounts() {
	desired, active := a.m.podCounts()
	for static, n := range desired {
		metrics.DesiredPods.WithLabelValues(static).Set(float64(n))
		metrics.ActivePods.WithLabelValues(static).Set(float64(active[static]))
	}
	// As its help says: one mirror pod per admitted static pod.
	metrics.MirrorPods.Set(float64(active[metrics.StaticTrue]))
	metrics.ManagedEphemeralContainers.Set(float64(a.m.ephemeralContainers()))
}

// ephemeralContainers counts the ephemeral containers of the desired pods,
// as upstream's pod manager those of the pods it holds.
func (m *Machine) ephemeralContainers() int {
	n := 0
	for _, p := range m.pods {
		if p.Pod != nil {
			n += len(p.Pod.Spec.EphemeralContainers)
		}
	}
	for _, p := range m.rejected {
		n += len(p.Spec.EphemeralContainers)
	}
	for _, w := range m.waiting {
		n += len(w.pod.Spec.EphemeralContainers)
	}
	return n
}

// podCounts counts, by the static label, the desired pods (those the
// sources want, rejected ones included) and the active ones (those
// admission counts against the node).
func (m *Machine) podCounts() (desired, active map[string]int) {
	desired = map[string]int{metrics.StaticFalse: 0, metrics.StaticTrue: 0}
	active = map[string]int{metrics.StaticFalse: 0, metrics.StaticTrue: 0}
	for _, p := range m.pods {
		if p.Pod != nil {
			desired[staticLabel(p.Pod)]++
		}
	}
	for _, p := range m.rejected {
		desired[staticLabel(p)]++
	}
	for _, w := range m.waiting {
		desired[staticLabel(w.pod)]++
	}
	for _, p := range m.admitted() {
		active[staticLabel(p)]++
	}
	return desired, active
}

// staticLabel is "true" for a pod from a file or URL, as upstream's
// IsStaticPod: any source but the API server.
func staticLabel(pod *v1.Pod) string {
	source, ok := pod.Annotations[manifest.ConfigSourceAnnotation]
	if ok && source != messages.SourceAPI {
		return metrics.StaticTrue
	}
	return metrics.StaticFalse
}

// CmdCountAdmission: admission accepted a pod, for
// kubelet_pod_level_resources_admission_total.
type CmdCountAdmission struct{ ConfigMode, QOSClass string }

func (CmdCountAdmission) isCommand() {}

// admissionCount is what kubelet_pod_level_resources_admission_total counts
// of a pod admission accepted, as upstream's HandlePodAdditions: where its
// resources are set (at the pod level, in any regular or init container)
// and its QoS class in lower case. Every admission counts, that of a pod
// admitted again after a restart of actorlet too, as upstream's.
func admissionCount(pod *v1.Pod) CmdCountAdmission {
	set := func(cs []v1.Container) bool {
		for _, c := range cs {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				return true
			}
		}
		return false
	}
	return CmdCountAdmission{
		ConfigMode: metrics.PodResourcesConfigMode(resourcehelper.IsPodLevelResourcesSet(pod), set(pod.Spec.Containers) || set(pod.Spec.InitContainers)),
		QOSClass:   strings.ToLower(string(cgroups.QOSClass(pod))),
	}
}
