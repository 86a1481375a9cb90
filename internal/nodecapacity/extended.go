package nodecapacity

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// IsExtended is upstream's IsExtendedResourceName: a qualified name outside
// the kubernetes.io/ namespace (and not a requests.* quota name).
func IsExtended(name v1.ResourceName) bool {
	s := string(name)
	if !strings.Contains(s, "/") || strings.Contains(s, v1.ResourceDefaultNamespacePrefix) || strings.HasPrefix(s, v1.DefaultResourceRequestsPrefix) {
		return false
	}
	return len(validation.IsQualifiedName(v1.DefaultResourceRequestsPrefix+s)) == 0
}

// StatusResources is upstream's MachineInfo status setter for the Node's
// resources: the node's own capacity (cpu, memory, pods, ephemeral-storage,
// hugepages) set over what the Node lists already, so that extended
// resources others advertise (an operator patching the Node's status, a
// test) stay; every resource of capacity gets its allocatable, the node's
// own as computed and another's at its capacity; and an extended resource
// gone from capacity leaves allocatable.
func StatusResources(current v1.NodeStatus, capacity, allocatable v1.ResourceList) (v1.ResourceList, v1.ResourceList) {
	c := current.Capacity.DeepCopy()
	if c == nil {
		c = v1.ResourceList{}
	}
	for name, q := range capacity {
		c[name] = q.DeepCopy()
	}
	a := current.Allocatable.DeepCopy()
	if a == nil {
		a = v1.ResourceList{}
	}
	for name := range a {
		if _, ok := c[name]; !ok && IsExtended(name) {
			delete(a, name)
		}
	}
	for name, q := range c {
		if _, own := capacity[name]; !own {
			a[name] = q.DeepCopy()
		}
	}
	for name, q := range allocatable {
		a[name] = q.DeepCopy()
	}
	return c, a
}
