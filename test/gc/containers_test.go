package gc

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/test/agent"
)

// deadByName counts the exited instances of each container of a pod.
func deadByName(containers []*runtimeapi.Container) map[string]int {
	out := map[string]int{}
	for _, c := range containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			out[c.Labels[podruntime.LabelContainerName]]++
		}
	}
	return out
}

// TestDeadContainers: a container that exited five times keeps exactly one
// dead instance (the one `kubectl logs --previous` reads); a pod that ran
// to completion keeps its container, its log and its stopped sandbox while
// its manifest is there, and leaves nothing after GC once it is removed;
// a running pod whose manifest is removed leaves nothing either.
func TestDeadContainers(t *testing.T) {
	n := newNode(t, "")
	n.WriteManifest("crash.yaml", manifest("crash", fmt.Sprintf(`  restartPolicy: Always
  containers:
  - name: crash
    image: %s
    command: ["sh", "-c", "echo crash-$$; exit 1"]
`, n.busybox())))
	n.WriteManifest("done.yaml", manifest("done", fmt.Sprintf(`  restartPolicy: Never
  containers:
  - name: once
    image: %s
    command: ["sh", "-c", "echo ran-to-completion"]
`, n.busybox())))
	n.WriteManifest("goes.yaml", manifest("goes", agent.SleepSpec("sleep", n.busybox(), 2)))
	n.Start()
	goes := n.Running("goes", 60*time.Second)

	var crash *v1.Pod
	n.Eventually("crash exited five times", 3*30*time.Second, func() error {
		p, err := n.Pod("crash")
		if err != nil {
			return err
		}
		crash = p
		// At most the previous instance and the one that just died, until
		// the sync that follows its death (upstream's pod-container
		// deleter keeps one).
		if dead := deadByName(n.containers(string(p.UID)))["crash"]; dead > 2 {
			t.Fatalf("%d dead instances of crash: they pile up", dead)
		}
		if len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount < 5 {
			return fmt.Errorf("restarts: %+v", p.Status.ContainerStatuses)
		}
		return nil
	})
	var done *v1.Pod
	n.Eventually("done Succeeded", 60*time.Second, func() error {
		p, err := n.Pod("done")
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodSucceeded {
			return fmt.Errorf("phase %q", p.Status.Phase)
		}
		done = p
		return nil
	})

	// A pass with every pod known: crash keeps one dead instance; done,
	// finished, keeps its container and its sandbox, stopped.
	n.runContainerGC()
	n.Eventually("one dead instance of crash", 3*5*time.Second, func() error {
		if dead := deadByName(n.containers(string(crash.UID))); dead["crash"] != 1 || len(dead) != 1 {
			return fmt.Errorf("dead instances by container: %v", dead)
		}
		return nil
	})
	if cs := n.containers(string(done.UID)); len(cs) != 1 || cs[0].State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("containers of the completed pod: %v, want its exited one", cs)
	}
	if sbs := n.sandboxes(string(done.UID)); len(sbs) != 1 || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY {
		t.Fatalf("sandboxes of the completed pod: %v, want one, stopped", sbs)
	}
	doneLog := podLogDir(done) + "/once/0.log"
	if b, err := os.ReadFile(doneLog); err != nil || !strings.Contains(string(b), "ran-to-completion") {
		t.Fatalf("log of the completed pod %s: %q, %v", doneLog, b, err)
	}

	// Removed pods: done's remains are GC's, goes is removed with its kill.
	n.RemoveManifest("done.yaml")
	n.RemoveManifest("goes.yaml")
	n.Eventually("done and goes gone from /pods", 3*10*time.Second, func() error {
		for _, name := range []string{"done", "goes"} {
			if _, err := n.Pod(name); err == nil {
				return fmt.Errorf("%s still in /pods", name)
			}
		}
		return nil
	})
	n.runContainerGC()
	for _, p := range []*v1.Pod{done, goes} {
		n.Eventually(p.Name+" gone from the runtime and the disk", 3*5*time.Second, func() error {
			if c, s := len(n.containers(string(p.UID))), len(n.sandboxes(string(p.UID))); c+s > 0 {
				return fmt.Errorf("%d containers and %d sandboxes left", c, s)
			}
			if _, err := os.Stat(podLogDir(p)); !os.IsNotExist(err) {
				return fmt.Errorf("log directory %s still there (%v)", podLogDir(p), err)
			}
			return nil
		})
	}
	// And the crash loop went on undisturbed by the restarts of the gc actor.
	if p, err := n.Pod("crash"); err != nil || p.UID != crash.UID {
		t.Errorf("crash after GC: %v, %v", p, err)
	}
}
