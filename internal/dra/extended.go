package dra

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"

	"github.com/actorlet/actorlet/internal/nodecapacity"
)

// IsExtendedResourceName is upstream's IsDRAExtendedResourceName: a name
// a DeviceClass may back, an extended resource or a device class's
// implicit deviceclass.resource.kubernetes.io/<class>.
func IsExtendedResourceName(name v1.ResourceName) bool {
	return nodecapacity.IsExtended(name) || strings.HasPrefix(string(name), resourceapi.ResourceDeviceClassPrefix)
}

// BackedByDRA tells whether the scheduler allocated the container's
// extended resource through DRA, as upstream's isDRAExtendedResource: the
// pod's extendedResourceClaimStatus maps the container's resource to a
// request of its claim. Such a resource is neither taken from a device
// plugin nor checked against the Node's allocatable.
func BackedByDRA(pod *v1.Pod, container string, name v1.ResourceName) bool {
	s := pod.Status.ExtendedResourceClaimStatus
	if s == nil {
		return false
	}
	for _, m := range s.RequestMappings {
		if m.ContainerName == container && m.ResourceName == string(name) {
			return true
		}
	}
	return false
}
