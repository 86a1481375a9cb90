package podmanager

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Rejection is why a pod was not admitted, in upstream's words: the pod
// fails with Reason (OutOfpods, OutOfcpu, OutOfmemory) and Message.
type Rejection struct {
	Reason, Message string
}

// admit decides whether pod fits beside the admitted pods, as upstream's
// predicate admit handler: the pod count against maxPods, then the sum of
// CPU and memory requests against allocatable.
func admit(pod *v1.Pod, admitted []*v1.Pod, maxPods int, allocatable v1.ResourceList) *Rejection {
	if len(admitted)+1 > maxPods {
		return &Rejection{Reason: "OutOfpods", Message: fmt.Sprintf(
			"Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", len(admitted), maxPods)}
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		capacity, ok := allocatable[name]
		if !ok {
			continue
		}
		requested := podRequest(pod, name)
		if requested.IsZero() {
			continue
		}
		used := resource.Quantity{}
		for _, p := range admitted {
			used.Add(podRequest(p, name))
		}
		total := used.DeepCopy()
		total.Add(requested)
		if total.Cmp(capacity) > 0 {
			return &Rejection{Reason: "OutOf" + string(name), Message: fmt.Sprintf(
				"Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
				name, amount(requested, name), amount(used, name), amount(capacity, name))}
		}
	}
	return nil
}

// amount is how upstream prints a quantity in admission messages: CPU in
// millicores, everything else in units.
func amount(q resource.Quantity, name v1.ResourceName) int64 {
	if name == v1.ResourceCPU {
		return q.MilliValue()
	}
	return q.Value()
}

// podRequest is the pod's effective request of a resource, as upstream's
// resource helpers compute it: the larger of the sum over app containers
// (plus restartable init containers, which run beside them) and the largest
// init container, plus the pod overhead.
func podRequest(pod *v1.Pod, name v1.ResourceName) resource.Quantity {
	sum := resource.Quantity{}
	for _, c := range pod.Spec.Containers {
		sum.Add(containerRequest(c, name))
	}
	sidecars := resource.Quantity{}
	maxInit := resource.Quantity{}
	for _, c := range pod.Spec.InitContainers {
		r := containerRequest(c, name)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.Add(r)
			continue
		}
		// A regular init container runs beside the sidecars started before it.
		r.Add(sidecars)
		if r.Cmp(maxInit) > 0 {
			maxInit = r
		}
	}
	sum.Add(sidecars)
	if maxInit.Cmp(sum) > 0 {
		sum = maxInit
	}
	if o, ok := pod.Spec.Overhead[name]; ok {
		sum.Add(o)
	}
	return sum
}

func containerRequest(c v1.Container, name v1.ResourceName) resource.Quantity {
	if q, ok := c.Resources.Requests[name]; ok {
		return q.DeepCopy()
	}
	if q, ok := c.Resources.Limits[name]; ok {
		return q.DeepCopy()
	}
	return resource.Quantity{}
}
