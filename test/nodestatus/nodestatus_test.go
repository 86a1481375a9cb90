// Package nodestatus runs actorlet as the environment's node against the
// real kube-apiserver and checks what it registers about itself (issue
// #21): the labels of --node-labels and the taints of
// --register-with-taints on the Node it creates, the huge page capacity
// of the machine, and the refusal at start-up of a --node-labels label in
// the kubernetes.io namespaces that a kubelet may not set on its Node.
// Upstream kubelet v1.37.2 is the reference for every expectation:
//
//	NODESTATUS_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/nodestatus/
package nodestatus

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// NODESTATUS_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "NODESTATUS_KUBELET") }

// freshNode prepares the environment's node with a Node object deleted
// first, so that the registration is a creation: --node-labels and
// --register-with-taints apply only then, as upstream's. The Node is
// deleted again at the end, so that the test's labels and taints do not
// stay on it for the next test.
func freshNode(t *testing.T, opts ...agent.NodeOption) *agent.ClusterNode {
	t.Helper()
	n := agent.NewClusterNode(t, kubelet.Binary, kubelet.Options(opts...)...)
	deleteNode := func() error {
		err := n.Admin.CoreV1().Nodes().Delete(context.Background(), n.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	}
	if err := deleteNode(); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "the old Node gone", 30*time.Second, func() error {
		if _, err := n.NodeObject(); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	n.AtCleanup(func() {
		if err := deleteNode(); err != nil {
			t.Logf("cleanup: delete Node %s: %v", n.Name, err)
		}
	})
	return n
}

// TestLabelsTaintsAndHugePages: the Node is registered with the labels of
// --node-labels (a label of the node.kubernetes.io namespace, which a
// kubelet may set, and one of the operator's own), the taints of
// --register-with-taints, and the huge page capacity of the machine, as
// upstream reports it: one resource per page size the kernel supports,
// zero when none is pre-allocated, the same in allocatable.
func TestLabelsTaintsAndHugePages(t *testing.T) {
	n := freshNode(t, agent.WithArgs(
		"--node-labels", "node.kubernetes.io/pool=blue,example.com/team=nodes,topology.kubernetes.io/zone=zone-a",
		"--register-with-taints", "example.com/dedicated=test:NoSchedule,example.com/soft:PreferNoSchedule",
	))
	n.Start()
	agent.Eventually(t, "node Ready", 30*time.Second, n.Ready)
	node, err := n.NodeObject()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"node.kubernetes.io/pool": "blue", "example.com/team": "nodes",
		"topology.kubernetes.io/zone": "zone-a", "kubernetes.io/hostname": n.Name} {
		if got, ok := node.Labels[k]; !ok || got != v {
			t.Errorf("label %s = %q (present %v), want %q; labels %v", k, got, ok, v, node.Labels)
		}
	}
	for _, want := range []v1.Taint{
		{Key: "example.com/dedicated", Value: "test", Effect: v1.TaintEffectNoSchedule},
		{Key: "example.com/soft", Effect: v1.TaintEffectPreferNoSchedule},
	} {
		found := false
		for _, got := range node.Spec.Taints {
			found = found || (got.Key == want.Key && got.Value == want.Value && got.Effect == want.Effect)
		}
		if !found {
			t.Errorf("taint %s=%s:%s missing: %v", want.Key, want.Value, want.Effect, node.Spec.Taints)
		}
	}

	want := machineHugePages(t)
	if len(want) == 0 {
		t.Log("the kernel supports no huge pages: none reported")
	}
	for name, q := range want {
		t.Logf("%s: %s", name, q.String())
		for what, list := range map[string]v1.ResourceList{"capacity": node.Status.Capacity, "allocatable": node.Status.Allocatable} {
			got, ok := list[name]
			if !ok || got.Cmp(q) != 0 {
				t.Errorf("%s %s = %v (present %v), want %s", what, name, got.String(), ok, q.String())
			}
		}
	}
	for name := range node.Status.Capacity {
		if _, ok := want[name]; strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) && !ok {
			t.Errorf("capacity %s: no such page size on the machine", name)
		}
	}
}

// machineHugePages reads the huge pages of the machine from the kernel,
// as upstream's cadvisor does: hugepages-<size>kB directories, each with
// nr_hugepages.
func machineHugePages(t *testing.T) map[v1.ResourceName]resource.Quantity {
	t.Helper()
	dir := "/sys/kernel/mm/hugepages"
	entries, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	out := map[v1.ResourceName]resource.Quantity{}
	for _, e := range entries {
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(e.Name(), "hugepages-"), "kB"), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			t.Fatal(err)
		}
		pages, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		size := resource.NewQuantity(kb*1024, resource.BinarySI)
		out[v1.ResourceName("hugepages-"+size.String())] = *resource.NewQuantity(pages*kb*1024, resource.BinarySI)
	}
	return out
}

// TestForbiddenNodeLabel: a --node-labels label of the kubernetes.io
// namespaces outside the set a kubelet may set on its own Node stops the
// start with upstream's error, which names it.
func TestForbiddenNodeLabel(t *testing.T) {
	n := agent.NewNode(t, kubelet.Binary, kubelet.Options(agent.WithArgs("--node-labels", "node-role.kubernetes.io/worker=,example.com/fine=yes"))...)
	n.Launch()
	code, exited := n.Proc.ExitCode(30 * time.Second)
	if !exited {
		t.Fatalf("still running with a forbidden label:\n%s", n.Logs())
	}
	if code == 0 {
		t.Errorf("exit code 0, want a failure")
	}
	for _, want := range []string{
		"failed to validate kubelet flags: unknown 'kubernetes.io' or 'k8s.io' labels specified with --node-labels: [node-role.kubernetes.io/worker]",
		"--node-labels in the 'kubernetes.io' namespace must begin with an allowed prefix (kubelet.kubernetes.io, node.kubernetes.io)",
	} {
		if !strings.Contains(n.Logs(), want) {
			t.Errorf("the log lacks %q:\n%s", want, n.Logs())
		}
	}
}

// TestNodeEvents: the Node's events of a start and of a cordon, as
// upstream's: Starting once the kubelet starts, NodeNotSchedulable when
// spec.unschedulable is set, NodeSchedulable when it is cleared, each with
// upstream's message.
func TestNodeEvents(t *testing.T) {
	n := freshNode(t)
	since := time.Now().Add(-time.Second)
	n.Start()
	agent.Eventually(t, "node Ready", 30*time.Second, n.Ready)
	nodeEvent := func(reason, message string) func() error {
		return func() error {
			list, err := n.Admin.CoreV1().Events(metav1.NamespaceDefault).List(context.Background(), metav1.ListOptions{
				FieldSelector: "involvedObject.kind=Node,involvedObject.name=" + n.Name + ",reason=" + reason})
			if err != nil {
				return err
			}
			for _, e := range list.Items {
				if e.LastTimestamp.Time.Before(since) && e.EventTime.Time.Before(since) {
					continue // an earlier test's
				}
				if e.Message != message {
					return fmt.Errorf("%s: message %q, want %q", reason, e.Message, message)
				}
				return nil
			}
			return fmt.Errorf("no %s event since %s among %d", reason, since.Format(time.RFC3339), len(list.Items))
		}
	}
	agent.Eventually(t, "the Starting event", 30*time.Second, nodeEvent("Starting", "Starting kubelet."))
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
		// A cgroup v1 host: upstream's warning once the agent runs.
		agent.Eventually(t, "the CgroupV1 event", 30*time.Second, nodeEvent("CgroupV1",
			"cgroup v1 detected. cgroup v1 support is deprecated and will be removed in a future release. Please migrate to cgroup v2. More information at https://git.k8s.io/enhancements/keps/sig-node/5573-remove-cgroup-v1"))
	}
	cordon := func(unschedulable bool) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, unschedulable)
		if _, err := n.Admin.CoreV1().Nodes().Patch(context.Background(), n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cordon(true)
	agent.Eventually(t, "the NodeNotSchedulable event", 60*time.Second,
		nodeEvent("NodeNotSchedulable", "Node "+n.Name+" status is now: NodeNotSchedulable"))
	cordon(false)
	agent.Eventually(t, "the NodeSchedulable event", 60*time.Second,
		nodeEvent("NodeSchedulable", "Node "+n.Name+" status is now: NodeSchedulable"))
}
