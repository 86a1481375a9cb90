package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestComputePodActionsSidecars: init containers with restartPolicy
// Always start in order, each letting the next start once it runs; they
// restart on their own, whatever the pod's restart policy, and never keep
// a finished pod alive (upstream's computeInitContainerActions).
func TestComputePodActionsSidecars(t *testing.T) {
	pod := func(policy v1.RestartPolicy) *v1.Pod {
		p := sidecarPod([]string{"s", "i"}, "a") // s: a sidecar, i: a regular init container
		p.Spec.RestartPolicy = policy
		return p
	}
	always, never := v1.RestartPolicyAlways, v1.RestartPolicyNever
	tests := []actionsCase{
		{"the sidecar starts first", pod(always), func(*v1.Pod) *PodStatus { return readyStatus() }, nil,
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{"the sidecar runs: the next init container starts", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "s", running, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{1}}},
		{"init done, the sidecar runs: the apps start", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "i", exited, 0, 0), cstat(p, "s", running, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", ContainersToStart: []int{0}}},
		{"the sidecar exited before the init container ran: restarted first", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "s", exited, 1, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{"initialized, the sidecar crashed: only it restarts", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "s", exited, 3, 0), cstat(p, "i", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{"a Never pod's sidecar restarts too", pod(never), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "s", exited, 3, 0), cstat(p, "i", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{"initialized, the sidecar removed: started again, the init container not", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}}},
		{"the sidecar's definition changed: restarted", pod(always), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", running, 0, 0), cstat(p, "s", running, 0, 0), cstat(p, "i", exited, 0, 0))
		}, func(p *v1.Pod) { p.Spec.InitContainers[0].Image = "img:2" },
			PodActions{SandboxID: "sb1", InitContainersToStart: []int{0}, ContainersToKill: []ContainerToKill{{ID: "s-id", Name: "s", Message: "Init container s definition changed"}}}},
		{"a Never pod's app done: the pod is killed, its sidecar not restarted", pod(never), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", exited, 0, 0), cstat(p, "s", running, 0, 0), cstat(p, "i", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", KillPod: true}},
		{"an OnFailure pod's app done while its sidecar is down: killed, not restarted", pod(v1.RestartPolicyOnFailure), func(p *v1.Pod) *PodStatus {
			return readyStatus(cstat(p, "a", exited, 0, 0), cstat(p, "s", exited, 1, 0), cstat(p, "i", exited, 0, 0))
		}, nil, PodActions{SandboxID: "sb1", KillPod: true}},
	}
	runActions(t, tests)
}
