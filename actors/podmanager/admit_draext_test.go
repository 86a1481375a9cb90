package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestAdmitDRAExtendedResources: an extended resource the scheduler
// allocated through DRA (extendedResourceClaimStatus maps it to the
// container) is not held to the Node's allocatable nor to the device
// plugins' devices, as upstream's removeMissingExtendedResources and
// isDRAExtendedResource; one it did not map still is.
func TestAdmitDRAExtendedResources(t *testing.T) {
	const (
		gpu      = "example.com/gpu"
		implicit = "deviceclass.resource.kubernetes.io/bar"
	)
	mapped := func(p *v1.Pod, container string, names ...string) *v1.Pod {
		return mutate(p, func(p *v1.Pod) {
			s := p.Status.ExtendedResourceClaimStatus
			if s == nil {
				s = &v1.PodExtendedResourceClaimStatus{ResourceClaimName: "pod-extended-resources-abcde"}
			}
			for _, n := range names {
				s.RequestMappings = append(s.RequestMappings, v1.ContainerExtendedResourceRequest{ContainerName: container, ResourceName: n, RequestName: "container-0-request-0"})
			}
			p.Status.ExtendedResourceClaimStatus = s
		})
	}
	withLimits := func(p *v1.Pod) *v1.Pod {
		return mutate(p, func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Limits = p.Spec.Containers[0].Resources.Requests.DeepCopy()
		})
	}
	// The e2e spec's pod: an init container, a sidecar and a container,
	// each asking for an implicit and an explicit name, all mapped.
	both := v1.ResourceRequirements{Requests: v1.ResourceList{implicit: resource.MustParse("1"), gpu: resource.MustParse("1")},
		Limits: v1.ResourceList{implicit: resource.MustParse("1"), gpu: resource.MustParse("1")}}
	initAndSidecar := &v1.Pod{Spec: v1.PodSpec{
		InitContainers: []v1.Container{{Name: "init", Resources: both}, {Name: "side", Resources: both, RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways)}},
		Containers:     []v1.Container{{Name: "c", Resources: both}},
	}}
	for _, c := range []string{"init", "side", "c"} {
		initAndSidecar = mapped(initAndSidecar, c, implicit, gpu)
	}
	base := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi")}
	zeroGPU := base.DeepCopy()
	zeroGPU[gpu] = resource.MustParse("0")
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		alloc   v1.ResourceList
		devices map[v1.ResourceName]int64
		want    string
	}{
		{"implicit name backed by DRA", withLimits(mapped(podReq(implicit, "2"), "c", implicit)), base, nil, ""},
		{"implicit name not backed by DRA", withLimits(podReq(implicit, "2")), base, nil,
			"Node didn't have enough resource: deviceclass.resource.kubernetes.io/bar, requested: 2, used: 0, capacity: 0"},
		{"implicit name mapped for another container", withLimits(mapped(podReq(implicit, "2"), "other", implicit)), base, nil,
			"Node didn't have enough resource: deviceclass.resource.kubernetes.io/bar, requested: 2, used: 0, capacity: 0"},
		{"explicit name backed by DRA, allocatable 0", withLimits(mapped(podReq(gpu, "1"), "c", gpu)), zeroGPU, nil, ""},
		{"explicit name backed by DRA, allocatable absent", withLimits(mapped(podReq(gpu, "1"), "c", gpu)), base, nil, ""},
		{"explicit name not backed by DRA, allocatable 0", withLimits(podReq(gpu, "1")), zeroGPU, nil,
			"Node didn't have enough resource: example.com/gpu, requested: 1, used: 0, capacity: 0"},
		{"backed by DRA: no device plugin allocation", withLimits(mapped(podReq(gpu, "1"), "c", gpu)), zeroGPU, map[v1.ResourceName]int64{gpu: 0}, ""},
		{"two resources, the other not listed by the Node", withLimits(mapped(podReq(implicit, "1", "foo.com/baz", "1"), "c", implicit)), base, nil, ""},
		{"init containers, sidecars and containers, both names", initAndSidecar, zeroGPU, nil, ""},
		{"a container left unmapped", mutate(initAndSidecar, func(p *v1.Pod) {
			p.Status.ExtendedResourceClaimStatus.RequestMappings = p.Status.ExtendedResourceClaimStatus.RequestMappings[:4]
		}), zeroGPU, nil, "Node didn't have enough resource: deviceclass.resource.kubernetes.io/bar, requested: 1, used: 0, capacity: 0"},
		{"the other resources still count", withLimits(mapped(podReq(implicit, "1", v1.ResourceCPU.String(), "3"), "c", implicit)), base, nil,
			"Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(tc.pod, nil, Admission{MaxPods: 10, Allocatable: tc.alloc, Devices: tc.devices, DRA: true})
			got := ""
			if r != nil {
				got = r.Message
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
