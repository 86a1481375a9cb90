package statusreporter

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/messages"
)

// withDevices is a copy of the spec whose resources are the node's own
// and the device plugins' (all devices in capacity, the healthy ones in
// allocatable; a resource gone at 0, as upstream's). The spec is copied,
// never changed: the goroutines writing the Node share it.
func (s *nodeSpec) withDevices(capacity, allocatable v1.ResourceList, devices map[v1.ResourceName]messages.DeviceCount) *nodeSpec {
	out := *s
	out.Capacity, out.Allocatable = capacity.DeepCopy(), allocatable.DeepCopy()
	if out.Capacity == nil {
		out.Capacity = v1.ResourceList{}
	}
	if out.Allocatable == nil {
		out.Allocatable = v1.ResourceList{}
	}
	for name, c := range devices {
		out.Capacity[name] = *resource.NewQuantity(c.Capacity, resource.DecimalSI)
		out.Allocatable[name] = *resource.NewQuantity(c.Allocatable, resource.DecimalSI)
	}
	return &out
}
