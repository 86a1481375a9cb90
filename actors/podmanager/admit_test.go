package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func podWith(cpu, mem string) *v1.Pod {
	req := v1.ResourceList{}
	if cpu != "" {
		req[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		req[v1.ResourceMemory] = resource.MustParse(mem)
	}
	return &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Resources: v1.ResourceRequirements{Requests: req}}}}}
}

func TestAdmit(t *testing.T) {
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		maxPods  int
		reason   string
		message  string
	}{
		{name: "fits", pod: podWith("500m", "100Mi"), admitted: []*v1.Pod{podWith("1", "")}, maxPods: 10},
		{name: "best effort always fits resources", pod: podWith("", ""), admitted: []*v1.Pod{podWith("2", "1Gi")}, maxPods: 10},
		{name: "too many pods", pod: podWith("", ""), admitted: []*v1.Pod{podWith("", ""), podWith("", "")}, maxPods: 2,
			reason: "OutOfpods", message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"},
		{name: "too much cpu", pod: podWith("1500m", ""), admitted: []*v1.Pod{podWith("1", "")}, maxPods: 10,
			reason: "OutOfcpu", message: "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000"},
		{name: "too much memory", pod: podWith("", "2Gi"), maxPods: 10,
			reason: "OutOfmemory", message: "Node didn't have enough resource: memory, requested: 2147483648, used: 0, capacity: 1073741824"},
		{name: "limits stand in for requests", pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c",
			Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")}}}}}}, maxPods: 10, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "the largest init container counts", pod: &v1.Pod{Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "i", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2500m")}}}},
			Containers:     []v1.Container{{Name: "c"}}}}, maxPods: 10, reason: "OutOfcpu",
			message: "Node didn't have enough resource: cpu, requested: 2500, used: 0, capacity: 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(tc.pod, tc.admitted, tc.maxPods, alloc)
			switch {
			case tc.reason == "" && r != nil:
				t.Errorf("rejected: %+v", r)
			case tc.reason != "" && (r == nil || r.Reason != tc.reason || r.Message != tc.message):
				t.Errorf("got %+v, want %s: %s", r, tc.reason, tc.message)
			}
		})
	}
}
