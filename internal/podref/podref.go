// Package podref names a pod and its containers as upstream's kubelet does
// in events and messages, for every package that records them (podruntime,
// prober, lifecycle).
package podref

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// FieldPath is where the container is in the pod's spec, as upstream's
// GenerateContainerRef: "implicitly required container NAME" for a
// container the spec does not have (a pod killed without its spec, a
// container removed from it).
func FieldPath(pod *v1.Pod, name string) string {
	for _, c := range pod.Spec.Containers {
		if c.Name == name {
			return fmt.Sprintf("spec.containers{%s}", name)
		}
	}
	for _, c := range pod.Spec.InitContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.initContainers{%s}", name)
		}
	}
	for _, c := range pod.Spec.EphemeralContainers {
		if c.Name == name {
			return fmt.Sprintf("spec.ephemeralContainers{%s}", name)
		}
	}
	return "implicitly required container " + name
}

// Desc is upstream's format.Pod: NAME_NAMESPACE(UID).
func Desc(pod *v1.Pod) string {
	return fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID)
}

// Container is the named container of pod, among its containers, init
// containers and ephemeral containers (an EphemeralContainerCommon has a
// Container's fields); nil when the spec does not name it.
func Container(pod *v1.Pod, name string) *v1.Container {
	for i := range pod.Spec.Containers {
		if pod.Spec.Containers[i].Name == name {
			return &pod.Spec.Containers[i]
		}
	}
	for i := range pod.Spec.InitContainers {
		if pod.Spec.InitContainers[i].Name == name {
			return &pod.Spec.InitContainers[i]
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return (*v1.Container)(&ec.EphemeralContainerCommon)
		}
	}
	return nil
}
