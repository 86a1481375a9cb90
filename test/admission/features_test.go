package admission

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestUnimplementedFeatures creates pods that need what actorlet does not
// implement (issue #33): a container's restart policy other than the
// pod's, restart rules. Each is refused with upstream's
// PodFeatureUnsupported and a Warning event, never run without the
// feature. Upstream implements them, so the test does not run against it.
func TestUnimplementedFeatures(t *testing.T) {
	if kubelet.Upstream {
		t.Skip("upstream's kubelet implements container restart rules")
	}
	n := agent.NewAPIPods(t, kubelet.Binary)
	n.Up(t, "features")
	never := v1.ContainerRestartPolicyNever
	pod := func(name string, mutate func(*v1.Pod)) *v1.Pod {
		p := n.NewPod(name, nil, n.Sleeper("c"))
		mutate(p)
		return p
	}
	const unsupported = "PodFeatureUnsupported"
	for _, r := range []rejection{
		{pod("container-restart-policy", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyAlways
			p.Spec.Containers[0].RestartPolicy = &never
		}), unsupported, "Pod requires node features that are not available: ContainerRestartRules"},
		{pod("restart-rules", func(p *v1.Pod) {
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.Containers[0].RestartPolicy = &never
			p.Spec.Containers[0].RestartPolicyRules = []v1.ContainerRestartRule{{Action: v1.ContainerRestartRuleActionRestart,
				ExitCodes: &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOpIn, Values: []int32{42}}}}
		}), unsupported, "Pod requires node features that are not available: ContainerRestartRules"},
	} {
		n.Create(t, r.pod)
		t.Run(r.pod.Name, func(t *testing.T) {
			failedWith(t, n, r)
			n.Event(t, r.pod.Name, r.reason, r.message)
		})
	}
}
