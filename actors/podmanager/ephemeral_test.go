package podmanager

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// kubelet_managed_ephemeral_containers counts the ephemeral containers of
// every pod the sources want, rejected and waiting ones included, as
// upstream's pod manager holds them.
func TestEphemeralContainers(t *testing.T) {
	withEphemeral := func(uid string, n int) *v1.Pod {
		p := sourcedPod(uid, messages.SourceAPI)
		for range n {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{})
		}
		return p
	}
	m := &Machine{
		pods: map[types.UID]*PodState{
			"running": {Pod: withEphemeral("running", 2)},
			"orphan":  {Phase: Orphaned, Terminate: &messages.TerminatePod{}},
		},
		rejected: map[types.UID]*v1.Pod{"rejected": withEphemeral("rejected", 1)},
	}
	if got := m.ephemeralContainers(); got != 3 {
		t.Fatalf("%d ephemeral containers, want 3", got)
	}
}
