package cgroups

import (
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Layout names the node's cgroups, in cgroupfs form (the systemd
// driver's slices expanded into their paths, as the runtime is given
// them), as upstream's container manager names them.
type Layout struct {
	// CgroupRoot is the configuration's cgroupRoot ("" is "/").
	CgroupRoot string
	// Driver is the cgroup driver (CgroupDriverCgroupfs or
	// CgroupDriverSystemd).
	Driver string
	// PerQOS is cgroupsPerQOS: false puts every pod's sandbox straight
	// into CgroupRoot, with no kubepods, QoS or pod cgroup, as upstream's
	// podContainerManagerNoop.
	PerQOS bool
}

// NodeAllocatable is upstream's NodeAllocatableRoot: cgroupRoot/kubepods
// with cgroupsPerQOS, cgroupRoot itself without.
func (l Layout) NodeAllocatable() (string, error) {
	if l.PerQOS {
		return PodsCgroupParent(l.CgroupRoot, l.Driver)
	}
	return RootCgroup(l.CgroupRoot, l.Driver)
}

// QoS is the cgroup of the QoS class's pods below kubepods (root):
// kubepods itself for Guaranteed, its burstable and besteffort children
// for the others.
func (l Layout) QoS(root string, class v1.PodQOSClass) string {
	switch class {
	case v1.PodQOSBurstable, v1.PodQOSBestEffort:
		return ChildCgroup(root, l.Driver, strings.ToLower(string(class)))
	}
	return root
}

// Pod is the cgroup of the pod uid of QoS class below kubepods (root),
// the sandbox's CgroupParent; without cgroupsPerQOS, root itself.
func (l Layout) Pod(root string, uid types.UID, class v1.PodQOSClass) string {
	if !l.PerQOS {
		return root
	}
	return PodCgroupName(l.QoS(root, class), l.Driver, uid)
}

// PodParents are the cgroups that hold pod cgroups below kubepods (root):
// kubepods, burstable and besteffort; none without cgroupsPerQOS.
func (l Layout) PodParents(root string) []string {
	if !l.PerQOS {
		return nil
	}
	return []string{root, l.QoS(root, v1.PodQOSBurstable), l.QoS(root, v1.PodQOSBestEffort)}
}
