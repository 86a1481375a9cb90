// Package eviction runs actorlet as the environment's node against the real
// kube-apiserver, kube-controller-manager and containerd with eviction
// thresholds set above what the machine has free (issue #21), so that the
// pressure is real without filling anything: the node conditions and the
// controller-manager's taints set and cleared, the BestEffort pod evicted
// before the Burstable one, Failed with reason Evicted and upstream's
// message and event, a new BestEffort pod refused under memory pressure, and
// under disk pressure the gc actor asked for space before any pod.
// Upstream kubelet v1.37.2 is the reference for every expectation.
package eviction

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/test/agent"
)

var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// Thresholds no machine meets without pressure: memory.available below 99%
// of the memory (the node's working set is more than 1%), nodefs.available
// below 99% of the root directory's filesystem. imageMinimumGCAge keeps the
// environment's images from the disk-pressure reclaim: images detected
// this very run are younger than it.
const (
	memoryPressure = "evictionHard:\n  memory.available: \"99%\"\nevictionPressureTransitionPeriod: 5s\n"
	diskPressure   = "evictionHard:\n  nodefs.available: \"99%\"\nevictionPressureTransitionPeriod: 5s\nimageMinimumGCAge: 1000h\n"
	// softPressure: the same memory threshold, soft, with a grace period
	// no test waits for.
	softPressure = "evictionSoft:\n  memory.available: \"99%\"\nevictionSoftGracePeriod:\n  memory.available: 1h\n" +
		"evictionPressureTransitionPeriod: 5s\n"
)

// within bounds each wait: a pass every 10 s, a node status update every
// 10 s, a controller-manager pass; 3x slack.
const within = 90 * time.Second

// condition returns nil once the Node's condition typ has status and
// reason.
func condition(n *agent.APIPods, typ v1.NodeConditionType, status v1.ConditionStatus, reason string) func() error {
	return func() error {
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == typ {
				if c.Status != status || c.Reason != reason {
					return fmt.Errorf("%s=%s (%s: %s), want %s %s", typ, c.Status, c.Reason, c.Message, status, reason)
				}
				return nil
			}
		}
		return fmt.Errorf("no %s condition", typ)
	}
}

// taint returns nil once the Node has (want) or lacks the taint key with
// effect NoSchedule, which the controller-manager's node lifecycle
// controller sets from the conditions.
func taint(n *agent.APIPods, key string, want bool) func() error {
	return func() error {
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		has := false
		for _, t := range node.Spec.Taints {
			has = has || t.Key == key && t.Effect == v1.TaintEffectNoSchedule
		}
		if has != want {
			return fmt.Errorf("taint %s present: %v, want %v (taints %v)", key, has, want, node.Spec.Taints)
		}
		return nil
	}
}

// failedEvicted returns the pod once the API shows it Failed with reason
// Evicted.
func failedEvicted(n *agent.APIPods, name string) (*v1.Pod, error) {
	p, err := n.Get(name)
	if err != nil {
		return nil, err
	}
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Evicted" {
		return nil, fmt.Errorf("%s: phase %s reason %q message %q", name, p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	return p, nil
}

func restart(t *testing.T, n *agent.APIPods, config string) {
	t.Helper()
	n.Stop(syscall.SIGTERM) // the containers keep running
	n.Configure(config)
	n.Start()
	agent.Eventually(t, "node Ready", 30*time.Second, n.Ready)
}

// TestEviction: a pod over its ephemeral-storage limit is evicted; pods
// run; the node restarts with a memory threshold above
// what it has free: MemoryPressure and its taint, the BestEffort pod
// evicted while the Burstable one runs, then the Burstable one, a new
// BestEffort pod refused; restarted with a disk threshold instead:
// MemoryPressure cleared, DiskPressure set, the gc actor asked for space
// first; restarted with a soft memory threshold: DiskPressure cleared,
// MemoryPressure set, a Burstable pod admitted and not evicted within the
// grace period; restarted without any: no pressure left.
func TestEviction(t *testing.T) {
	n := agent.NewAPIPods(t, binary)
	n.Configure("")
	n.Up(t, "evict")

	be := n.NewPod("besteffort", nil, n.Sleeper("c"))
	burst := n.NewPod("burstable", nil, n.Sleeper("c"))
	burst.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("50Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("200Mi")},
	}
	n.Run(t, be)
	n.Run(t, burst)

	t.Log("local storage limits")
	hog := n.NewPod("storage-hog", nil, n.Busybox("c", "dd if=/dev/zero of=/hog bs=1M count=8 && exec sleep 3600"))
	hog.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("2Mi")}
	n.Create(t, hog)
	agent.Eventually(t, "the pod over its ephemeral-storage limit evicted", within, func() error {
		p, err := failedEvicted(n, hog.Name)
		if err != nil {
			return err
		}
		if want := "Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. "; p.Status.Message != want &&
			p.Status.Message != `Container c exceeded its local ephemeral storage limit "2Mi". ` {
			return fmt.Errorf("message %q, want %q", p.Status.Message, want)
		}
		return nil
	})

	t.Log("memory pressure")
	restart(t, n, memoryPressure)
	agent.Eventually(t, "MemoryPressure True", within, condition(n, v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory"))
	var evicted *v1.Pod
	agent.Eventually(t, "the BestEffort pod evicted", within, func() error {
		p, err := failedEvicted(n, be.Name)
		if err != nil {
			return err
		}
		evicted = p
		// One pod per pass, BestEffort first: the Burstable one still runs.
		b, err := n.Get(burst.Name)
		if err != nil {
			return err
		}
		if b.Status.Phase != v1.PodRunning {
			t.Errorf("the Burstable pod is %s (%s) when the BestEffort one is evicted", b.Status.Phase, b.Status.Message)
		}
		return nil
	})
	const lowMemory = "The node was low on resource: memory. Threshold quantity: "
	if !strings.HasPrefix(evicted.Status.Message, lowMemory) || !strings.Contains(evicted.Status.Message, ", available: ") {
		t.Errorf("message %q, want upstream's %q...", evicted.Status.Message, lowMemory)
	}
	var disruption bool
	for _, c := range evicted.Status.Conditions {
		disruption = disruption || c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet
	}
	if !disruption {
		t.Errorf("no DisruptionTarget condition: %+v", evicted.Status.Conditions)
	}
	n.Event(t, be.Name, "Evicted", lowMemory)
	agent.Eventually(t, "its containers terminated", within, func() error {
		p, err := n.Get(be.Name)
		if err != nil {
			return err
		}
		for _, c := range p.Status.ContainerStatuses {
			if c.State.Terminated == nil {
				return fmt.Errorf("container %s: %+v", c.Name, c.State)
			}
		}
		return nil
	})

	late := n.NewPod("late-besteffort", nil, n.Sleeper("c"))
	n.Create(t, late)
	agent.Eventually(t, "a new BestEffort pod refused", within, func() error {
		p, err := failedEvicted(n, late.Name)
		if err != nil {
			return err
		}
		if want := "The node had condition: [MemoryPressure]. "; !strings.Contains(p.Status.Message, want) {
			return fmt.Errorf("message %q, want %q", p.Status.Message, want)
		}
		return nil
	})
	agent.Eventually(t, "the Burstable pod evicted next", within, func() error {
		_, err := failedEvicted(n, burst.Name)
		return err
	})
	agent.Eventually(t, "memory-pressure taint", within, taint(n, v1.TaintNodeMemoryPressure, true))

	t.Log("disk pressure")
	restart(t, n, diskPressure)
	agent.Eventually(t, "MemoryPressure cleared", within, condition(n, v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory"))
	agent.Eventually(t, "DiskPressure True", within, condition(n, v1.NodeDiskPressure, v1.ConditionTrue, "KubeletHasDiskPressure"))
	agent.Eventually(t, "the gc actor asked for disk space", within, func() error {
		if !strings.Contains(n.Logs(), "node-level disk space reclaimed") {
			return fmt.Errorf("no reclaim in the log")
		}
		return nil
	})
	agent.Eventually(t, "disk-pressure taint", within, taint(n, v1.TaintNodeDiskPressure, true))
	agent.Eventually(t, "memory-pressure taint gone", within, taint(n, v1.TaintNodeMemoryPressure, false))

	t.Log("soft memory pressure")
	restart(t, n, softPressure)
	agent.Eventually(t, "DiskPressure cleared", within, condition(n, v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure"))
	agent.Eventually(t, "MemoryPressure True", within, condition(n, v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory"))
	// Under memory pressure alone a Burstable pod is admitted; a soft
	// threshold within its grace period evicts nothing.
	soft := n.NewPod("soft-burstable", nil, n.Sleeper("c"))
	soft.Spec.Containers[0].Resources = burst.Spec.Containers[0].Resources
	n.Run(t, soft)
	agent.Consistently(t, "the Burstable pod not evicted within the soft grace period", 25*time.Second, time.Second, func() error {
		p, err := n.Get(soft.Name)
		if err != nil {
			return err
		}
		return agent.PodRunning(p)
	})

	t.Log("no pressure")
	restart(t, n, "")
	agent.Eventually(t, "MemoryPressure cleared", within, condition(n, v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory"))
	agent.Eventually(t, "disk-pressure taint gone", within, taint(n, v1.TaintNodeDiskPressure, false))
	agent.Eventually(t, "memory-pressure taint gone", within, taint(n, v1.TaintNodeMemoryPressure, false))
}
