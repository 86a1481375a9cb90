// Package runtimeclass runs actorlet as the environment's node against the
// real kube-apiserver and containerd with pods of a RuntimeClass (issue
// #21): the class's handler reaches the runtime (containerd here has only
// runc), a class that does not exist fails the sandbox's creation with
// upstream's FailedCreatePodSandBox event until it appears, and a handler
// the runtime does not have fails it with the runtime's error. Upstream
// kubelet v1.37.2 is the reference for every expectation:
//
//	RUNTIMECLASS_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/runtimeclass/
package runtimeclass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// RUNTIMECLASS_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "RUNTIMECLASS_KUBELET") }

func newNode(t *testing.T) *agent.APIPods {
	t.Helper()
	return kubelet.NewAPIPods(t)
}

// class creates a RuntimeClass (cluster-wide, so named uniquely) with
// handler and overhead, deleted at the test's end, and returns its name.
func class(t *testing.T, n *agent.APIPods, handler string, overhead v1.ResourceList) string {
	t.Helper()
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "actorlet-" + handler + "-" + hex.EncodeToString(b)}, Handler: handler}
	if overhead != nil {
		rc.Overhead = &nodev1.Overhead{PodFixed: overhead}
	}
	if _, err := n.Admin.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create RuntimeClass %s: %v", rc.Name, err)
	}
	t.Cleanup(func() { deleteClass(n, rc.Name) })
	return rc.Name
}

func deleteClass(n *agent.APIPods, name string) {
	err := n.Admin.NodeV1().RuntimeClasses().Delete(context.Background(), name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		n.T.Errorf("delete RuntimeClass %s: %v", name, err)
	}
}

func podOfClass(n *agent.APIPods, name, class string) *v1.Pod {
	p := n.NewPod(name, nil, n.Sleeper("app"))
	p.Spec.RuntimeClassName = &class
	return p
}

// sandboxHandler is the runtime handler containerd reports for the pod's
// sandbox (CRI PodSandboxStatus runtime_handler).
func sandboxHandler(t *testing.T, n *agent.APIPods, uid string) string {
	t.Helper()
	ctx := context.Background()
	list, err := n.RT.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid},
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 {
		t.Fatalf("%d ready sandboxes of pod %s, want 1", len(list.Items), uid)
	}
	st, err := n.RT.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: list.Items[0].Id})
	if err != nil {
		t.Fatal(err)
	}
	if st.Status.RuntimeHandler != list.Items[0].RuntimeHandler {
		t.Errorf("status's handler %q, list's %q", st.Status.RuntimeHandler, list.Items[0].RuntimeHandler)
	}
	return st.Status.RuntimeHandler
}

// TestRuntimeClassRuns: a pod of a class whose handler is runc runs, its
// sandbox created with that handler, and the class's overhead (set on the
// pod by the API server's RuntimeClass admission) is on the pod the node
// runs.
func TestRuntimeClassRuns(t *testing.T) {
	n := newNode(t)
	n.Up(t, "rtclass")
	overhead := v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m"), v1.ResourceMemory: resource.MustParse("8Mi")}
	name := class(t, n, "runc", overhead)

	pod := n.Run(t, podOfClass(n, "classy", name))
	if h := sandboxHandler(t, n, string(pod.UID)); h != "runc" {
		t.Errorf("sandbox's runtime handler %q, want runc", h)
	}
	if cpu := pod.Spec.Overhead[v1.ResourceCPU]; cpu.Cmp(overhead[v1.ResourceCPU]) != 0 {
		t.Errorf("pod's overhead %v, want the class's %v", pod.Spec.Overhead, overhead)
	}
	// A pod without a class runs with the default handler, "".
	plain := n.Run(t, n.NewPod("plain", nil, n.Sleeper("app")))
	if h := sandboxHandler(t, n, string(plain.UID)); h != "" {
		t.Errorf("sandbox of a pod without a class: handler %q, want the default", h)
	}
}

// TestUnknownRuntimeClass: a pod whose RuntimeClass is gone by the time
// the node creates its sandbox (the API server refuses a pod of a class
// that does not exist, so the class is deleted behind it while the node is
// down) never runs: upstream's FailedCreatePodSandBox event quotes the
// API's NotFound, the pod stays Pending, and the sandbox's creation is
// retried, so that the pod runs once the class exists again.
func TestUnknownRuntimeClass(t *testing.T) {
	n := newNode(t)
	n.NS = n.Namespace("rtclass")
	name := class(t, n, "runc", nil)
	pod := n.Create(t, podOfClass(n, "orphan-class", name))
	deleteClass(n, name)
	agent.Eventually(t, "RuntimeClass "+name+" gone", 30*time.Second, func() error {
		_, err := n.Admin.NodeV1().RuntimeClasses().Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	n.Start()
	agent.Eventually(t, "node Ready", 30*time.Second, n.Ready)

	n.Event(t, pod.Name, "FailedCreatePodSandBox",
		fmt.Sprintf(`Failed to create pod sandbox: runtimeclass.node.k8s.io %q not found`, name))
	agent.Consistently(t, "the pod Pending without a sandbox", 5*time.Second, 500*time.Millisecond, func() error {
		p, err := n.Get(pod.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodPending {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		if s, _ := n.RuntimeObjects(string(p.UID)); s != 0 {
			return fmt.Errorf("%d sandboxes", s)
		}
		return nil
	})

	// The class appears: the retried creation finds it.
	rc := &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Handler: "runc"}
	if _, err := n.Admin.NodeV1().RuntimeClasses().Create(context.Background(), rc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := n.Running(t, pod.Name, 90*time.Second)
	if h := sandboxHandler(t, n, string(running.UID)); h != "runc" {
		t.Errorf("sandbox's runtime handler %q, want runc", h)
	}
}

// TestUnknownRuntimeHandler: a class whose handler the runtime does not
// have fails the sandbox's creation in the runtime, with containerd's
// error in upstream's FailedCreatePodSandBox event; the pod never runs.
func TestUnknownRuntimeHandler(t *testing.T) {
	n := newNode(t)
	n.Up(t, "rtclass")
	name := class(t, n, "no-such-handler", nil)
	pod := n.Create(t, podOfClass(n, "bad-handler", name))
	n.Event(t, pod.Name, "FailedCreatePodSandBox", "Failed to create pod sandbox: rpc error:", `"no-such-handler"`)
	agent.Consistently(t, "the pod Pending without a sandbox", 5*time.Second, 500*time.Millisecond, func() error {
		p, err := n.Get(pod.Name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodPending {
			return fmt.Errorf("phase %s", p.Status.Phase)
		}
		return nil
	})
}
