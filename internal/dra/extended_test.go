package dra

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestExtendedResources: the names a DeviceClass may back, and which of a
// pod's containers' resources the scheduler allocated through DRA.
func TestExtendedResources(t *testing.T) {
	for name, want := range map[v1.ResourceName]bool{
		"example.com/gpu": true, "deviceclass.resource.kubernetes.io/gpu-class": true,
		"cpu": false, "hugepages-2Mi": false, "kubernetes.io/foo": false, "requests.example.com/gpu": false,
	} {
		if got := IsExtendedResourceName(name); got != want {
			t.Errorf("IsExtendedResourceName(%s) = %v, want %v", name, got, want)
		}
	}
	pod := &v1.Pod{Status: v1.PodStatus{ExtendedResourceClaimStatus: &v1.PodExtendedResourceClaimStatus{
		ResourceClaimName: "p-extended-resources",
		RequestMappings:   []v1.ContainerExtendedResourceRequest{{ContainerName: "a", ResourceName: "example.com/gpu", RequestName: "container-0-request-0"}},
	}}}
	for _, tc := range []struct {
		pod       *v1.Pod
		container string
		name      v1.ResourceName
		want      bool
	}{
		{pod, "a", "example.com/gpu", true},
		{pod, "b", "example.com/gpu", false},
		{pod, "a", "example.com/fpga", false},
		{&v1.Pod{}, "a", "example.com/gpu", false},
	} {
		if got := BackedByDRA(tc.pod, tc.container, tc.name); got != tc.want {
			t.Errorf("BackedByDRA(%s, %s) = %v, want %v", tc.container, tc.name, got, tc.want)
		}
	}
}
