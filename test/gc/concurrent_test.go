package gc

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// TestGCDuringPodCreation: container GC passes run while 20 pods are being
// created (the first as soon as the file source has reported, a second one
// half-way) and remove nothing of theirs: all reach Running without a
// restart, each with exactly its one sandbox and one container, the ones
// it started with.
func TestGCDuringPodCreation(t *testing.T) {
	const pods = 20
	n := newNode(t, "")
	for i := range pods {
		n.WriteManifest(fmt.Sprintf("p%02d.yaml", i), manifest(fmt.Sprintf("p%02d", i), agent.SleepSpec("sleep", n.busybox(), 2)))
	}
	n.Start()

	// containerIDs remembers the first container each pod ran: a
	// container removed under a pod would come back with another ID.
	containerIDs := map[string]string{}
	injected, passesDuringCreation := false, 0
	var all []v1.Pod
	n.Eventually(fmt.Sprintf("%d pods running", pods), 3*60*time.Second, func() error {
		list, err := n.Pods()
		if err != nil {
			return err
		}
		running := 0
		for i := range list {
			p := &list[i]
			if isRunning(p) != nil {
				continue
			}
			running++
			id := p.Status.ContainerStatuses[0].ContainerID
			if first, ok := containerIDs[p.Name]; ok && first != id {
				t.Fatalf("pod %s: container %s replaced by %s", p.Name, first, id)
			}
			containerIDs[p.Name] = id
		}
		if running < pods {
			if running > 0 && !injected {
				injected = true
				n.runContainerGC()
			}
			return fmt.Errorf("%d of %d pods running", running, pods)
		}
		passesDuringCreation = len(n.completePasses())
		all = list
		return nil
	})
	if passesDuringCreation == 0 {
		t.Fatalf("no container GC pass ran while the pods were being created")
	}
	t.Logf("%d container GC passes while the pods were being created (a restart of the gc actor included: %v)", passesDuringCreation, injected)

	// One more pass with every pod running, then count.
	n.runContainerGC()
	for i := range all {
		p := &all[i]
		if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].RestartCount != 0 {
			t.Errorf("pod %s: container statuses %+v, want one that never restarted", p.Name, cs)
		}
		containers, sandboxes := n.containers(string(p.UID)), n.sandboxes(string(p.UID))
		if len(containers) != 1 || "containerd://"+containers[0].Id != containerIDs[p.Name] ||
			containers[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("pod %s: containers %v, want its first one %s, running", p.Name, containers, containerIDs[p.Name])
		}
		if len(sandboxes) != 1 || sandboxes[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
			t.Errorf("pod %s: sandboxes %v, want one, ready", p.Name, sandboxes)
		}
	}
}
