package podmanager

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/dra"
)

// withoutDRAExtended is the pod as the resource checks see it, as
// upstream's removeMissingExtendedResources: the extended resources the
// scheduler allocated through DRA (its extendedResourceClaimStatus maps
// them) are dropped from the containers' requests, since the node's
// allocatable does not list them and the dra-manager prepares their claim.
// Limits go too, as a request missing falls back to its limit here.
func withoutDRAExtended(pod *v1.Pod) *v1.Pod {
	if pod.Status.ExtendedResourceClaimStatus == nil {
		return pod
	}
	out := pod.DeepCopy()
	for _, cs := range [][]v1.Container{out.Spec.InitContainers, out.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			for _, l := range []v1.ResourceList{c.Resources.Requests, c.Resources.Limits} {
				for name := range l {
					if dra.IsExtendedResourceName(name) && dra.BackedByDRA(pod, c.Name, name) {
						delete(l, name)
					}
				}
			}
		}
	}
	return out
}
