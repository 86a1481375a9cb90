package volume

import (
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/volume/ownership"
)

// localVolumeOwnership gives dir to the pod's fsGroup (group ownership,
// group rw, setgid on directories) as upstream's SetVolumeOwnership, for
// the emptyDir and local volumes. A nil fsGroup changes nothing.
func localVolumeOwnership(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy) error {
	return ownership.Set(dir, fsGroup, policy, false)
}

// fsGroupOf is the pod's fsGroup, nil when it has none.
func fsGroupOf(pod *v1.Pod) *int64 {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroup
	}
	return nil
}

// fsGroupChangePolicyOf is the pod's fsGroupChangePolicy, nil when unset.
func fsGroupChangePolicyOf(pod *v1.Pod) *v1.PodFSGroupChangePolicy {
	if sc := pod.Spec.SecurityContext; sc != nil {
		return sc.FSGroupChangePolicy
	}
	return nil
}
