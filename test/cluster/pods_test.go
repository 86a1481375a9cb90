package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/test/agent"
)

// apiPod is a busybox pod bound to the node (no scheduler here), without a
// service account token, since volumes come with a later issue.
func (n *clusterNode) apiPod(ns, name, script string, grace int64, policy v1.RestartPolicy) *v1.Pod {
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PodSpec{
			NodeName:                      n.Name,
			RestartPolicy:                 policy,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Containers: []v1.Container{{Name: "c", Image: n.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
				Command: []string{"sh", "-c", script}}},
		},
	}
}

func (n *clusterNode) create(p *v1.Pod) *v1.Pod {
	n.T.Helper()
	created, err := n.Admin.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		n.T.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return created
}

func (n *clusterNode) get(ns, name string) (*v1.Pod, error) {
	return n.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
}

// inPhase is a check for eventually: nil once the API's pod ns/name is in
// phase.
func (n *clusterNode) inPhase(ns, name string, phase v1.PodPhase) func() error {
	return func() error {
		p, err := n.get(ns, name)
		if err != nil {
			return err
		}
		if p.Status.Phase != phase {
			return fmt.Errorf("%s: phase %s", name, p.Status.Phase)
		}
		return nil
	}
}

// gone is a check for eventually: nil once the API has no pod ns/name.
func (n *clusterNode) gone(ns, name string) func() error {
	return func() error {
		_, err := n.get(ns, name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("%s still there: %v", name, err)
	}
}

func TestAPIPodRunsAndReportsStatus(t *testing.T) {
	n := startClusterNode(t)
	ns := n.Namespace("run")
	n.create(n.apiPod(ns, "web", "sleep 3600", 2, v1.RestartPolicyAlways))
	var seen time.Time
	var pod *v1.Pod
	eventually(t, "pod Running and Ready in the API", 60*time.Second, func() error {
		p, err := n.get(ns, "web")
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodRunning || !agent.PodReady(p) {
			return fmt.Errorf("phase %s, ready %v", p.Status.Phase, agent.PodReady(p))
		}
		seen, pod = time.Now(), p
		return nil
	})
	if pod.Status.PodIP == "" || len(pod.Status.PodIPs) == 0 || pod.Status.HostIP != "127.0.0.1" {
		t.Errorf("podIP %q podIPs %v hostIP %q", pod.Status.PodIP, pod.Status.PodIPs, pod.Status.HostIP)
	}
	if len(pod.Status.ContainerStatuses) != 1 || pod.Status.ContainerStatuses[0].State.Running == nil || pod.Status.ContainerStatuses[0].ContainerID == "" {
		t.Fatalf("container statuses %+v", pod.Status.ContainerStatuses)
	}
	// startedAt has second precision: the status may be seen up to 1 s
	// "before" it, never long after. The product's bound is 2 s.
	started := pod.Status.ContainerStatuses[0].State.Running.StartedAt.Time
	if lag := seen.Sub(started); lag > 3*2*time.Second+time.Second {
		t.Errorf("status reached the API %v after the container started", lag)
	}
	t.Logf("status in the API %v after the container started (1 s precision, polled every 200 ms)", seen.Sub(started).Round(time.Millisecond))
}

func TestCrashLoopShowsInTheAPI(t *testing.T) {
	n := startClusterNode(t)
	ns := n.Namespace("crash")
	n.create(n.apiPod(ns, "crash", "exit 1", 2, v1.RestartPolicyAlways))
	sawBackoff := false
	eventually(t, "restarts and CrashLoopBackOff in the API", 90*time.Second, func() error {
		p, err := n.get(ns, "crash")
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("no container status")
		}
		cs := p.Status.ContainerStatuses[0]
		if cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff" {
			sawBackoff = true
		}
		if cs.RestartCount < 2 || !sawBackoff {
			return fmt.Errorf("restartCount %d, saw CrashLoopBackOff %v", cs.RestartCount, sawBackoff)
		}
		return nil
	})
}

func TestDeleteWithGracePeriod(t *testing.T) {
	n := startClusterNode(t)
	ns := n.Namespace("delete")
	// The container ignores SIGTERM: it goes at the deadline.
	n.create(n.apiPod(ns, "stubborn", "trap '' TERM; while true; do sleep 0.2; done", 30, v1.RestartPolicyAlways))
	var pod *v1.Pod
	eventually(t, "pod running", 60*time.Second, func() error {
		p, err := n.get(ns, "stubborn")
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		pod = p
		return nil
	})
	const grace = 3
	g := int64(grace)
	deleted := time.Now()
	if err := n.Admin.CoreV1().Pods(ns).Delete(context.Background(), "stubborn", metav1.DeleteOptions{GracePeriodSeconds: &g}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod gone from the API", 3*(grace+3)*time.Second, n.gone(ns, "stubborn"))
	took := time.Since(deleted)
	t.Logf("pod gone from the API %v after the delete (grace %ds)", took.Round(time.Millisecond), grace)
	if took < grace*time.Second {
		t.Errorf("gone after %v, before the grace period: the container ignores SIGTERM", took)
	}
	// The pod leaves the API once nothing of it runs; its stopped
	// containers and sandbox are removed right after, not before.
	eventually(t, "pod removed from the runtime", 30*time.Second, func() error {
		if sb, c := agent.RuntimeObjects(t, n.RT, string(pod.UID)); sb+c > 0 {
			return fmt.Errorf("%d sandboxes and %d containers left in the runtime", sb, c)
		}
		return nil
	})
}

// TestDeletedPodEndsTerminal deletes a running pod that a finalizer keeps
// in the API, as the Job controller's does: its last status must be
// terminal, every container terminated and the pod not Ready, as
// upstream's kubelet writes before the final delete; the finalizer's
// owner waits on that phase to let the pod go.
func TestDeletedPodEndsTerminal(t *testing.T) {
	n := startClusterNode(t)
	ns := n.Namespace("finalizer")
	const finalizer = "actorlet.test/hold"
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyAlways} {
		name := "held-" + strings.ToLower(string(policy))
		p := n.apiPod(ns, name, "sleep 600", 1, policy)
		p.Finalizers = []string{finalizer}
		n.create(p)
		eventually(t, name+" running", 60*time.Second, n.inPhase(ns, name, v1.PodRunning))
		if err := n.Admin.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" Failed", 60*time.Second, n.inPhase(ns, name, v1.PodFailed))
		got, err := n.get(ns, name)
		if err != nil {
			t.Fatal(err)
		}
		if agent.PodReady(got) {
			t.Errorf("%s: Ready in its terminal status", name)
		}
		for _, c := range got.Status.ContainerStatuses {
			if c.State.Terminated == nil || c.Ready {
				t.Errorf("%s: container %s %+v, ready %v; want terminated", name, c.Name, c.State, c.Ready)
			}
		}
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := n.Admin.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, name+" gone", 60*time.Second, n.gone(ns, name))
	}
}

func TestMirrorPodFollowsTheStaticPod(t *testing.T) {
	n := startClusterNode(t)
	n.WriteManifest("static.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: static
  namespace: default
spec:
`+agent.SleepSpec("c", n.Env.BusyboxImage, 1))
	name := "static-" + n.Name
	eventually(t, "mirror pod Running in the API", 60*time.Second, func() error {
		p, err := n.get("default", name)
		if err != nil {
			return err
		}
		if p.Annotations["kubernetes.io/config.mirror"] == "" {
			return fmt.Errorf("no mirror annotation: %v", p.Annotations)
		}
		if len(p.OwnerReferences) != 1 || p.OwnerReferences[0].Kind != "Node" || p.OwnerReferences[0].Name != n.Name {
			return fmt.Errorf("owner references %+v", p.OwnerReferences)
		}
		if p.Status.Phase != v1.PodRunning {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
	n.RemoveManifest("static.yaml")
	eventually(t, "mirror pod gone", 30*time.Second, n.gone("default", name))
}

func TestCompletedPodSucceedsInTheAPI(t *testing.T) {
	n := startClusterNode(t)
	ns := n.Namespace("done")
	n.create(n.apiPod(ns, "finisher", "sleep 3; exit 0", 2, v1.RestartPolicyNever))
	eventually(t, "pod Succeeded in the API", 60*time.Second, n.inPhase(ns, "finisher", v1.PodSucceeded))
}
