package configsource

import (
	"context"
	"testing"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/actorlet/actorlet/internal/manifest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
	"github.com/actorlet/actorlet/test/env"
)

// startAPI runs a config-source actor with the API server source alone,
// for node.
func startAPI(t *testing.T, kube kubernetes.Interface, node string) *harness {
	t.Helper()
	return start(t, Params{Kube: kube, NodeName: node})
}

func boundPod(name, node string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}}},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "c", Image: "busybox:1.36"}}},
	}
}

func TestAPISourceSendsEmptyFirstSet(t *testing.T) {
	h := startAPI(t, fake.NewClientset(), "node-1")
	// Sent although empty: the pod-manager waits for it before tearing
	// down the pods deleted while actorlet was down.
	h.expect(messages.SourceAPI)
	h.none()
}

func TestAPISourceTracksPods(t *testing.T) {
	kube := fake.NewClientset(boundPod("a", "node-1"))
	selectors := make(chan string, 10)
	kube.PrependReactor("list", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		selectors <- a.(k8stesting.ListAction).GetListRestrictions().Fields.String()
		return false, nil, nil
	})
	h := startAPI(t, kube, "node-1")
	u := h.expect(messages.SourceAPI, "a")
	if s := <-selectors; s != "spec.nodeName=node-1" {
		t.Errorf("listed with field selector %q, want spec.nodeName=node-1", s)
	}
	a := u.Pods[0]
	seen := a.Annotations[manifest.ConfigSeenAnnotation]
	if a.Annotations[manifest.ConfigSourceAnnotation] != "api" || seen == "" || a.ManagedFields != nil {
		t.Errorf("pod annotations %v, managedFields %v: want source api, a seen time, no managedFields", a.Annotations, a.ManagedFields)
	}

	ctx := context.Background()
	pods := kube.CoreV1().Pods("default")
	if _, err := pods.Create(ctx, boundPod("b", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	u = h.expect(messages.SourceAPI, "a", "b")
	if got := u.Pods[0].Annotations[manifest.ConfigSeenAnnotation]; got != seen {
		t.Errorf("seen time of a changed from %s to %s: want the first one kept", seen, got)
	}

	// A graceful deletion is an update the pod-manager acts on.
	b := boundPod("b", "node-1")
	b.DeletionTimestamp, b.DeletionGracePeriodSeconds = &metav1.Time{Time: time.Now()}, new(int64(5))
	if _, err := pods.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	u = h.expect(messages.SourceAPI, "a", "b")
	if g := u.Pods[1].DeletionGracePeriodSeconds; g == nil || *g != 5 {
		t.Errorf("deletion grace period %v, want 5", g)
	}

	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.expect(messages.SourceAPI, "b")
	h.none()
}

// TestAPISourceSetReusesUnchangedCopies: a set copies only the pods whose
// resourceVersion changed since the last set (or that have none).
func TestAPISourceSetReusesUnchangedCopies(t *testing.T) {
	withRV := func(name, rv string) *v1.Pod {
		p := boundPod(name, "node-1")
		p.ResourceVersion = rv
		return p
	}
	s := newAPISource(nil, "node-1", nil, zerolog.Nop())
	first := s.set([]any{withRV("a", "1"), withRV("b", "1"), withRV("c", "")})
	second := s.set([]any{withRV("c", ""), withRV("b", "2"), withRV("a", "1")})
	for i, tc := range []struct {
		name string
		same bool
	}{
		{"a", true},  // unchanged
		{"b", false}, // a new resourceVersion
		{"c", false}, // no resourceVersion: no way to tell
	} {
		if got := second.Pods[i].Name; got != tc.name {
			t.Fatalf("pod %d of the set is %s, want %s (sorted by name)", i, got, tc.name)
		}
		if same := first.Pods[i] == second.Pods[i]; same != tc.same {
			t.Errorf("pod %s sent as the same copy: %v, want %v", tc.name, same, tc.same)
		}
		if second.Pods[i].Annotations[manifest.ConfigSeenAnnotation] != first.Pods[i].Annotations[manifest.ConfigSeenAnnotation] {
			t.Errorf("pod %s: seen time changed between sets", tc.name)
		}
	}
	third := s.set([]any{withRV("a", "1")})
	if len(third.Pods) != 1 || third.Pods[0] != first.Pods[0] || len(s.sent) != 1 || len(s.seen) != 1 {
		t.Errorf("after b and c left: %d pods, %d copies and %d seen times kept; want 1 each, a's first copy", len(third.Pods), len(s.sent), len(s.seen))
	}
}

func TestAPISourceRestartsAndStops(t *testing.T) {
	kube := fake.NewClientset(boundPod("a", "node-1"))
	h := startAPI(t, kube, "node-1")
	h.expect(messages.SourceAPI, "a")

	// A restarted actor watches again, with one informer only: one change
	// gives one set.
	h.system.Root.Send(h.pid, &supervision.InjectPanic{Reason: "test"})
	h.expect(messages.SourceAPI, "a")
	if _, err := kube.CoreV1().Pods("default").Create(context.Background(), boundPod("b", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.expect(messages.SourceAPI, "a", "b")
	h.none()

	// Stopping returns once the informer is gone.
	if err := h.system.Root.StopFuture(h.pid).Wait(); err != nil {
		t.Fatal(err)
	}
	if _, err := kube.CoreV1().Pods("default").Create(context.Background(), boundPod("c", "node-1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.none()
}

// TestAPISourceRealAPIServer watches the test environment's API server for
// a node of its own; no actorlet runs.
func TestAPISourceRealAPIServer(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	admin := e.AdminClient(t)
	node := "configsource-test-" + rand.String(6)
	cfg := e.AdminRESTConfig(t)
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset for %s: %v", cfg.Host, err)
	}

	ctx := context.Background()
	pods := admin.CoreV1().Pods("default")
	create := func(name, node string) {
		t.Helper()
		pod := &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1.PodSpec{NodeName: node, AutomountServiceAccountToken: new(false),
				Containers: []v1.Container{{Name: "c", Image: e.BusyboxImage}}},
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create pod %s on node %s: %v", name, node, err)
		}
		t.Cleanup(func() {
			if err := pods.Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
				t.Errorf("delete pod %s: %v", name, err)
			}
		})
	}
	mine, other := node+"-a", node+"-other"
	create(other, node+"-elsewhere")

	h := startAPI(t, kube, node)
	h.expect(messages.SourceAPI)
	create(mine, node)
	u := h.expect(messages.SourceAPI, mine)
	if p := u.Pods[0]; p.Annotations[manifest.ConfigSourceAnnotation] != "api" || p.ManagedFields != nil {
		t.Errorf("pod %s: annotations %v, managedFields %v: want source api and no managedFields", p.Name, p.Annotations, p.ManagedFields)
	}

	if err := pods.Delete(ctx, mine, metav1.DeleteOptions{GracePeriodSeconds: new(int64(30))}); err != nil {
		t.Fatal(err)
	}
	// Deleting a pod bound to a node that runs no kubelet only marks it.
	for {
		u = h.expect(messages.SourceAPI, mine)
		if u.Pods[0].DeletionTimestamp != nil {
			break
		}
	}
}
