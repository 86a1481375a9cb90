package bootstrap

import (
	"fmt"

	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/actors/volumemanager"
	"github.com/actorlet/actorlet/internal/userns"
)

// newUserNamespaces is upstream's MakeUserNsManager: the kubelet's range
// (from the subordinate IDs of the user "kubelet", else every ID from
// idsPerPod up) in slots of userNamespaces.idsPerPod IDs, enough for
// maxPods, with the ranges of the pods on disk recorded.
func newUserNamespaces(rootDir string, c *kubeletconfigv1beta1.KubeletConfiguration) (*userns.Manager, error) {
	idsPerPod := idsPerPod(c)
	r, err := userns.KubeletRange(idsPerPod)
	if err != nil {
		return nil, fmt.Errorf("kubelet mappings: %w", err)
	}
	return userns.NewManager(rootDir, r, idsPerPod, int(c.MaxPods))
}

// idsPerPod is upstream's GetUserNamespacesIDsPerPod: the configured
// length, or the default when unset or 0. The configuration's validation
// has kept it to multiples of 65536 below 1<<32.
func idsPerPod(c *kubeletconfigv1beta1.KubeletConfiguration) uint32 {
	if c.UserNamespaces == nil || c.UserNamespaces.IDsPerPod == nil || *c.UserNamespaces.IDsPerPod == 0 {
		return userns.DefaultIDsPerPod
	}
	return uint32(*c.UserNamespaces.IDsPerPod)
}

// userNamespaces is what frees the pods' user namespace ranges: none
// without a manager (and no typed nil in the interface).
func (e *runtimeEnv) userNamespaces() volumemanager.UserNamespaces {
	if e.userns == nil {
		return nil
	}
	return e.userns
}
