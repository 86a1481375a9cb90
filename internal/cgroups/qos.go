package cgroups

import (
	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// QOSClass is the pod's QoS class as upstream's GetPodQOS: the one in its
// status when set, else computed (ComputePodQOS): from pod-level
// resources when set, else from each init and regular container's cpu and
// memory — Guaranteed when every container's requests equal its non-zero
// limits, BestEffort when none sets any, Burstable otherwise.
func QOSClass(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputeQOSClass(pod)
}

// ComputeQOSClass is upstream's ComputePodQOS, ignoring the status.
func ComputeQOSClass(pod *v1.Pod) v1.PodQOSClass {
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return requirementsQOS(pod.Spec.Resources)
	}
	var qos v1.PodQOSClass
	for _, cs := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := requirementsQOS(&cs[i].Resources)
			switch {
			case c == v1.PodQOSBurstable:
				return c
			case qos == "":
				qos = c
			case qos != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if qos == "" {
		return v1.PodQOSBestEffort
	}
	return qos
}

func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return v1.PodQOSBestEffort
	}
	var qos v1.PodQOSClass
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		var c v1.PodQOSClass
		switch {
		case !req.Equal(lim):
			return v1.PodQOSBurstable
		case req.IsZero():
			c = v1.PodQOSBestEffort
		default:
			c = v1.PodQOSGuaranteed
		}
		if qos == "" {
			qos = c
		} else if qos != c {
			return v1.PodQOSBurstable
		}
	}
	return qos
}
