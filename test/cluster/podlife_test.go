package cluster

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// sandboxesNamed lists the sandboxes of pods named namespace/name, whatever
// their UID: a static pod's, and any other pod's of the same name.
func (n *clusterNode) sandboxesNamed(namespace, name string) []*runtimeapi.PodSandbox {
	n.T.Helper()
	return agent.Sandboxes(n.T, n.RT, podNamed(namespace, name))
}

// containersNamed lists the containers of pods named namespace/name.
func (n *clusterNode) containersNamed(namespace, name string) []*runtimeapi.Container {
	n.T.Helper()
	return agent.Containers(n.T, n.RT, podNamed(namespace, name))
}

// podNamed is the label selector of the pods named namespace/name.
func podNamed(namespace, name string) map[string]string {
	return map[string]string{"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": namespace}
}

// TestMirrorPodIsNeverRun: the mirror pod of a static pod is its
// reflection in the API, not a pod to run. Over several resyncs of every
// pod (syncFrequency is short here) and across a restart of actorlet there
// is exactly one sandbox of that name, the static pod's; deleting the mirror pod brings a new one and touches no
// container; the mirror's logs are the static pod's container's.
func TestMirrorPodIsNeverRun(t *testing.T) {
	// Held across the restart: another test binary's actorlet, on the same
	// node, would meanwhile take this one's static pod for an orphan.
	env.HoldRuntime(t)
	n := startClusterNode(t, onPodNetwork(), withConfig("syncFrequency: 10s\n"))
	marker := fmt.Sprintf("static pod says hello %d", time.Now().UnixNano())
	n.WriteManifest("mirrored.yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: mirrored
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo '%s'; exec sleep 3600"]
`, n.Env.BusyboxImage, marker))
	name := "mirrored-" + n.Name
	var mirror *v1.Pod
	eventually(t, "mirror pod Running in the API", 60*time.Second, func() error {
		p, err := n.get("default", name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].State.Running == nil {
			return fmt.Errorf("phase %s, containers %+v", p.Status.Phase, p.Status.ContainerStatuses)
		}
		mirror = p
		return nil
	})
	containerID := mirror.Status.ContainerStatuses[0].ContainerID
	sbs := n.sandboxesNamed("default", name)
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes named %s, want the static pod's only", len(sbs), name)
	}
	sandbox, staticUID := sbs[0].Id, sbs[0].Metadata.Uid
	if staticUID == string(mirror.UID) {
		t.Fatalf("the sandbox is the mirror pod's (uid %s)", mirror.UID)
	}
	// exactlyOne checks, every 2 s for d, that the static pod's sandbox and
	// container are the only ones of that name.
	exactlyOne := func(when string, d time.Duration) {
		t.Helper()
		agent.Consistently(t, "only the static pod's sandbox and container named "+name+", "+when, d, 2*time.Second, func() error {
			sbs := n.sandboxesNamed("default", name)
			cs := n.containersNamed("default", name)
			if len(sbs) != 1 || sbs[0].Id != sandbox || len(cs) != 1 || "containerd://"+cs[0].Id != containerID {
				ids := []string{}
				for _, sb := range sbs {
					ids = append(ids, sb.Id[:12]+" uid "+sb.Metadata.Uid+" "+sb.State.String())
				}
				return fmt.Errorf("sandboxes %v and %d containers named %s; want only the static pod's sandbox %s (uid %s) and container %s",
					ids, len(cs), name, sandbox[:12], staticUID, containerID)
			}
			return nil
		})
	}
	// resyncs spans two periodic resyncs of every pod.
	const resyncs = 25 * time.Second
	exactlyOne("before the restart", resyncs)
	n.Stop(syscall.SIGTERM)
	for _, sb := range n.sandboxesNamed("default", name) {
		t.Logf("once actorlet stopped: sandbox %s %s", sb.Id[:12], sb.State)
	}
	n.Start()
	eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
	exactlyOne("after the restart", resyncs)

	// Deleting the mirror pod gives a new mirror; the static pod runs on.
	if err := n.Admin.CoreV1().Pods("default").Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a new mirror pod, Running, showing the same container", 60*time.Second, func() error {
		p, err := n.get("default", name)
		if err != nil {
			return err
		}
		if p.UID == mirror.UID || p.DeletionTimestamp != nil {
			return fmt.Errorf("still the old mirror %s", p.UID)
		}
		if p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].ContainerID != containerID ||
			p.Status.ContainerStatuses[0].RestartCount != 0 {
			return fmt.Errorf("new mirror %s: phase %s, containers %+v", p.UID, p.Status.Phase, p.Status.ContainerStatuses)
		}
		return nil
	})
	exactlyOne("after the mirror pod's deletion", 6*time.Second)

	// kubectl logs of the mirror pod: the API server asks the node for the
	// logs of the pod of that name, the static pod.
	eventually(t, "the mirror pod's logs", 30*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		raw, err := n.Admin.CoreV1().Pods("default").GetLogs(name, &v1.PodLogOptions{Container: "c"}).DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(raw), marker) {
			return fmt.Errorf("logs %q, want %q", raw, marker)
		}
		return nil
	})
}

// TestEndedPodsStayEnded: a pod that succeeded, and a pod rejected at
// admission, are never started again: not after a restart of actorlet,
// not once the succeeded pod's remains are removed (as GC or crictl rmp
// do), not after a restart without them.
func TestEndedPodsStayEnded(t *testing.T) {
	env.HoldRuntime(t) // across the restarts (see TestMirrorPodIsNeverRun)
	n := startClusterNode(t)
	ns := n.Namespace("ended")
	once := n.create(n.apiPod(ns, "once", "echo done", 1, v1.RestartPolicyNever))
	big := n.apiPod(ns, "big", "sleep 3600", 1, v1.RestartPolicyAlways)
	big.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000")}
	big = n.create(big)
	eventually(t, "once Succeeded", 60*time.Second, n.inPhase(ns, "once", v1.PodSucceeded))
	var rejected v1.PodStatus
	eventually(t, "big rejected: Failed, OutOfcpu", 60*time.Second, func() error {
		p, err := n.get(ns, "big")
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodFailed || p.Status.Reason != "OutOfcpu" {
			return fmt.Errorf("phase %s reason %q", p.Status.Phase, p.Status.Reason)
		}
		rejected = p.Status
		return nil
	})
	t.Logf("big rejected: %s", rejected.Message)

	// stayEnded checks for d that both pods keep their end in the API and
	// that the runtime holds what is expected of once, and nothing of big.
	stayEnded := func(when string, d time.Duration, onceSandboxes, onceContainers int) {
		t.Helper()
		agent.Consistently(t, "both pods ended, "+when, d, time.Second, func() error {
			if p, err := n.get(ns, "once"); err != nil || p.Status.Phase != v1.PodSucceeded {
				return fmt.Errorf("once: %v, status %+v", err, p.Status)
			}
			if p, err := n.get(ns, "big"); err != nil || p.Status.Phase != v1.PodFailed || p.Status.Reason != rejected.Reason || p.Status.Message != rejected.Message {
				return fmt.Errorf("big: %v, status %s %q %q, want Failed %q %q", err, p.Status.Phase, p.Status.Reason, p.Status.Message, rejected.Reason, rejected.Message)
			}
			if sb, c := agent.RuntimeObjects(t, n.RT, string(once.UID)); sb != onceSandboxes || c != onceContainers {
				return fmt.Errorf("once has %d sandboxes and %d containers, want %d and %d", sb, c, onceSandboxes, onceContainers)
			}
			if sb, c := agent.RuntimeObjects(t, n.RT, string(big.UID)); sb+c != 0 {
				return fmt.Errorf("big has %d sandboxes and %d containers, want none", sb, c)
			}
			return nil
		})
	}
	// A completed pod keeps its sandbox and container for its logs.
	stayEnded("before any restart", 3*time.Second, 1, 1)
	n.Stop(syscall.SIGTERM)
	n.Start()
	eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
	stayEnded("after a restart", 15*time.Second, 1, 1)

	agent.RemoveSandboxes(t, n.RT, func(sb *runtimeapi.PodSandbox) bool { return sb.Metadata.Uid == string(once.UID) })
	stayEnded("once its remains were removed", 15*time.Second, 0, 0)
	n.Stop(syscall.SIGTERM)
	n.Start()
	eventually(t, "node Ready after the second restart", 30*time.Second, n.Ready)
	stayEnded("after a restart without its remains", 15*time.Second, 0, 0)
}

// TestDuplicateStaticPodsRunOnce: two manifests declaring the same pod
// give one pod; the other file is reported in the log and by an event,
// naming both files.
func TestDuplicateStaticPodsRunOnce(t *testing.T) {
	n := startClusterNode(t)
	for _, f := range []string{"first.yaml", "second.yaml"} {
		n.WriteManifest(f, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: twin
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sh", "-c", "echo %s; exec sleep 3600"]
`, n.Env.BusyboxImage, f))
	}
	name := "twin-" + n.Name
	eventually(t, "the mirror pod Running", 60*time.Second, n.inPhase("default", name, v1.PodRunning))
	first, second := n.Manifests+"/first.yaml", n.Manifests+"/second.yaml"
	eventually(t, "a FailedValidation event naming both files", 30*time.Second, func() error {
		evs, err := n.Admin.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		for _, e := range evs.Items {
			if e.Reason == "FailedValidation" && e.Type == v1.EventTypeWarning && strings.Contains(e.Message, first) && strings.Contains(e.Message, second) {
				t.Logf("event: %s", e.Message)
				return nil
			}
		}
		return fmt.Errorf("%d events, none FailedValidation naming both files", len(evs.Items))
	})
	logged := false
	for _, line := range strings.Split(n.Logs(), "\n") {
		if strings.Contains(line, "left out") && strings.Contains(line, first) && strings.Contains(line, second) {
			logged = true
		}
	}
	if !logged {
		t.Errorf("no log line names both files")
	}
	agent.Consistently(t, "one sandbox named "+name, 10*time.Second, 2*time.Second, func() error {
		if sbs := n.sandboxesNamed("default", name); len(sbs) != 1 {
			return fmt.Errorf("%d sandboxes named %s, want 1", len(sbs), name)
		}
		return nil
	})
}
