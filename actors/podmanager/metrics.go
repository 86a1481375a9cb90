package podmanager

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/manifest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/metrics"
)

// recordPodCounts sets kubelet_desired_pods and kubelet_active_pods, as
// upstream's pod cleanup does: desired are the pods the sources want,
// rejected ones included; active are those admission counts against the
// node.
func (a *Actor) recordPodCounts() {
	desired := map[string]int{metrics.StaticFalse: 0, metrics.StaticTrue: 0}
	active := map[string]int{metrics.StaticFalse: 0, metrics.StaticTrue: 0}
	for _, e := range a.pods {
		if e.pod != nil {
			desired[staticLabel(e.pod)]++
		}
	}
	for _, p := range a.rejected {
		desired[staticLabel(p)]++
	}
	for _, p := range a.admitted() {
		active[staticLabel(p)]++
	}
	for static, n := range desired {
		metrics.DesiredPods.WithLabelValues(static).Set(float64(n))
		metrics.ActivePods.WithLabelValues(static).Set(float64(active[static]))
	}
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
