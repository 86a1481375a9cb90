package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/version"
)

func TestNodeRegistersAndIsReady(t *testing.T) {
	n := newClusterNode(t)
	// A fresh registration: the Node of an earlier run must not count.
	if err := n.Admin.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, "the old Node gone", 30*time.Second, func() error {
		if _, err := n.NodeObject(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	started := time.Now()
	n.Start()
	// The product's bound is 10 s; 3x slack for a loaded machine.
	eventually(t, "node Ready", 30*time.Second, n.Ready)
	t.Logf("node registered and Ready %v after start", time.Since(started).Round(10*time.Millisecond))

	node, err := n.NodeObject()
	if err != nil {
		t.Fatal(err)
	}
	info := node.Status.NodeInfo
	if !strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") {
		t.Errorf("containerRuntimeVersion = %q", info.ContainerRuntimeVersion)
	}
	if info.KubeletVersion != version.NodeVersion() {
		t.Errorf("kubeletVersion = %q, want %q", info.KubeletVersion, version.NodeVersion())
	}
	for _, l := range []string{"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"} {
		if node.Labels[l] == "" {
			t.Errorf("label %s missing: %v", l, node.Labels)
		}
	}
	for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		if _, ok := node.Status.Allocatable[r]; !ok {
			t.Errorf("allocatable %s missing: %v", r, node.Status.Allocatable)
		}
	}

	first := leaseRenewTime(t, n)
	eventually(t, "lease renewed", 30*time.Second, func() error {
		l, err := lease(n)
		if err != nil {
			return err
		}
		if !l.Spec.RenewTime.After(first) {
			return fmt.Errorf("renewTime still %v", l.Spec.RenewTime)
		}
		if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != n.Name {
			return fmt.Errorf("holder %v", l.Spec.HolderIdentity)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID {
			return fmt.Errorf("ownerReferences %v, want the node %s", l.OwnerReferences, node.UID)
		}
		return nil
	})
}

func lease(n *clusterNode) (*coordinationv1.Lease, error) {
	return n.Admin.CoordinationV1().Leases("kube-node-lease").Get(context.Background(), n.Name, metav1.GetOptions{})
}

// leaseRenewTime waits for the node's lease and returns its renewTime.
func leaseRenewTime(t *testing.T, n *clusterNode) time.Time {
	t.Helper()
	var at time.Time
	eventually(t, "lease exists", 30*time.Second, func() error {
		l, err := lease(n)
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil {
			return fmt.Errorf("no renewTime")
		}
		at = l.Spec.RenewTime.Time
		return nil
	})
	return at
}

func TestNodeRestrictionIsOn(t *testing.T) {
	n := newClusterNode(t)
	ctx := context.Background()
	nodeClient := n.Env.NodeClient(t)
	other := "actorlet-other-node"
	zero := int64(0)
	_, err := n.Admin.CoreV1().Nodes().Create(ctx, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: other}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create node %s: %v", other, err)
	}
	t.Cleanup(func() { _ = n.Admin.CoreV1().Nodes().Delete(context.Background(), other, metav1.DeleteOptions{}) })

	_, err = nodeClient.CoreV1().Nodes().Patch(ctx, other, types.StrategicMergePatchType,
		[]byte(`{"metadata":{"labels":{"stolen":"true"}}}`), metav1.PatchOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("node %s patching node %s: got %v, want Forbidden", n.Name, other, err)
	}

	ns := n.Namespace("restriction")
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "elsewhere", Namespace: ns},
		Spec: v1.PodSpec{NodeName: other, TerminationGracePeriodSeconds: &zero,
			Containers: []v1.Container{{Name: "c", Image: n.Env.BusyboxImage}}},
	}
	if _, err := n.Admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create pod bound to %s: %v", other, err)
	}
	_, err = nodeClient.CoreV1().Pods(ns).Patch(ctx, pod.Name, types.StrategicMergePatchType,
		[]byte(`{"status":{"phase":"Running"}}`), metav1.PatchOptions{}, "status")
	if !apierrors.IsForbidden(err) {
		t.Errorf("node %s patching the status of a pod on %s: got %v, want Forbidden", n.Name, other, err)
	}
}

// TestAPIServerOutage stops the API server for a minute: the node keeps
// running, and its lease and Ready heartbeat are fresh again soon after the
// API server is back.
func TestAPIServerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute-long outage")
	}
	n := startClusterNode(t, withConfig("nodeStatusUpdateFrequency: 10s\n"))
	// One pod runs through the outage; another completes during it, so its
	// final status can only reach the API after the return.
	ns := n.Namespace("outage")
	n.create(n.apiPod(ns, "steady", "sleep 3600", 2, v1.RestartPolicyAlways))
	n.create(n.apiPod(ns, "finisher", "sleep 20; exit 0", 2, v1.RestartPolicyNever))
	var steady *v1.Pod
	eventually(t, "pods running", 60*time.Second, func() error {
		for _, name := range []string{"steady", "finisher"} {
			p, err := n.get(ns, name)
			if err != nil {
				return err
			}
			if p.Status.Phase != v1.PodRunning {
				return fmt.Errorf("%s: phase %s", name, p.Status.Phase)
			}
			if name == "steady" {
				steady = p
			}
		}
		return nil
	})

	n.Env.StopAPIServer(t)
	t.Cleanup(func() { n.Env.StartAPIServer(t) })
	time.Sleep(60 * time.Second)
	if !n.Proc.Alive() {
		t.Fatalf("actorlet exited during the outage")
	}
	// Nothing can reach the API server before it is started again, and
	// StartAPIServer returns only once it has answered /readyz: the node may
	// well have caught up by then, so catch-up is measured from the
	// timestamps the node wrote, relative to the restart.
	restarting := time.Now()
	n.Env.StartAPIServer(t)
	back := time.Now()

	var leaseAt, heartbeatAt time.Time
	eventually(t, "lease and Ready heartbeat fresh after the outage", 30*time.Second, func() error {
		l, err := lease(n)
		if err != nil {
			return err
		}
		if l.Spec.RenewTime == nil || l.Spec.RenewTime.Time.Before(restarting) {
			return fmt.Errorf("lease renewTime %v before the API server's restart %v", l.Spec.RenewTime, restarting)
		}
		leaseAt = l.Spec.RenewTime.Time
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeReady {
				// Heartbeats have second precision.
				if c.LastHeartbeatTime.Time.Before(restarting.Add(-time.Second)) {
					return fmt.Errorf("Ready heartbeat %v before the API server's restart %v", c.LastHeartbeatTime, restarting)
				}
				heartbeatAt = c.LastHeartbeatTime.Time
				return nil
			}
		}
		return fmt.Errorf("no Ready condition")
	})
	t.Logf("API server ready %v after its restart began; lease renewed %v and Ready heartbeat %v after that",
		back.Sub(restarting).Round(100*time.Millisecond), leaseAt.Sub(back).Round(100*time.Millisecond), heartbeatAt.Sub(back).Round(time.Second))

	eventually(t, "the status written during the outage reaches the API", 30*time.Second, n.inPhase(ns, "finisher", v1.PodSucceeded))
	p, err := n.get(ns, "steady")
	if err != nil {
		t.Fatal(err)
	}
	before, after := steady.Status.ContainerStatuses[0], p.Status.ContainerStatuses[0]
	if after.RestartCount != 0 || after.ContainerID != before.ContainerID || p.Status.Phase != v1.PodRunning {
		t.Errorf("the outage disturbed a running pod: %s restarts %d, container %s → %s", p.Status.Phase, after.RestartCount, before.ContainerID, after.ContainerID)
	}
}
