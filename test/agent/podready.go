package agent

import v1 "k8s.io/api/core/v1"

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
