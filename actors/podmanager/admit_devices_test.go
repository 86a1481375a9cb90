package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// TestAdmitDevices: device plugin resources are admitted as upstream's
// device manager allocates them, before the predicates.
func TestAdmitDevices(t *testing.T) {
	const gpu = "example.com/gpu"
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), gpu: resource.MustParse("2")}
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod
		admitted []*v1.Pod
		devices  map[v1.ResourceName]int64
		holders  map[v1.ResourceName][]types.UID
		want     string
	}{
		{"free devices", podReq(gpu, "2"), nil, map[v1.ResourceName]int64{gpu: 2}, nil, ""},
		{"held by an admitted pod", podReq(gpu, "2"), []*v1.Pod{podReq(gpu, "1")}, map[v1.ResourceName]int64{gpu: 2}, nil,
			"Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"},
		{"none healthy", podReq(gpu, "1"), nil, map[v1.ResourceName]int64{gpu: 0}, nil,
			"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/gpu, which is unexpected"},
		{"none healthy, but the pod holds its devices (a restart before the plugin is back)", podReq(gpu, "1"), nil, map[v1.ResourceName]int64{gpu: 0},
			map[v1.ResourceName][]types.UID{gpu: {podReq(gpu, "1").UID}}, ""},
		{"another pod's holding does not count", podReq(gpu, "1"), nil, map[v1.ResourceName]int64{gpu: 0},
			map[v1.ResourceName][]types.UID{gpu: {"other"}},
			"Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/gpu, which is unexpected"},
		{"not a device plugin resource: the predicates decide", podReq(gpu, "3"), nil, nil, nil,
			"Node didn't have enough resource: example.com/gpu, requested: 3, used: 0, capacity: 2"},
		{"a pod asking for none", podReq("cpu", "1"), nil, map[v1.ResourceName]int64{gpu: 0}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := admit(tc.pod, tc.admitted, Admission{MaxPods: 10, Allocatable: alloc, Devices: tc.devices, DeviceHolders: tc.holders})
			got := ""
			if r != nil {
				got = r.Message
				if tc.devices != nil && r.Reason != ReasonUnexpected {
					t.Errorf("reason %s", r.Reason)
				}
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestAdmitHeldDevicesAfterRestart: a pod that holds its devices passes
// the predicates while the Node lists none of them (its plugin not back
// after a restart), as upstream's sanitizeNodeAllocatable; a pod that
// holds none is still held to the Node's count.
func TestAdmitHeldDevicesAfterRestart(t *testing.T) {
	const gpu = "example.com/gpu"
	alloc := v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("1Gi"), gpu: resource.MustParse("0")}
	holder, other := podReq(gpu, "1"), podReq(gpu, "1")
	holder.UID, other.UID = "holder", "other"
	holders := map[v1.ResourceName][]types.UID{gpu: {"holder"}}
	a := Admission{MaxPods: 10, Allocatable: alloc, Devices: map[v1.ResourceName]int64{gpu: 0}, DeviceHolders: holders}
	if r := admit(holder, nil, a); r != nil {
		t.Errorf("the holder refused: %s %s", r.Reason, r.Message)
	}
	if r := admit(other, []*v1.Pod{holder}, a); r == nil {
		t.Error("a pod holding no device admitted with none healthy")
	}
}
