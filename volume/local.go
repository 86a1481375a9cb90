package volume

import (
	v1 "k8s.io/api/core/v1"
)

// OWNER: helper H2 (emptyDir, hostPath, claims, teardown, subpaths, stats):
// emptydir.go, hostpath.go, claim.go, teardown.go, subpath.go, stats.go.

// localVolumeOwnership gives dir to the pod's fsGroup (group ownership,
// group rw, setgid on directories) as upstream's SetVolumeOwnership, for
// the emptyDir and local volumes. A nil fsGroup changes nothing.
//
// TODO(coordinator): set it to volume/ownership's function when H1's
// package is merged; until then it does nothing.
var localVolumeOwnership = func(dir string, fsGroup *int64, policy *v1.PodFSGroupChangePolicy) error {
	return nil
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
