package statusreporter

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

func TestSameForAdmission(t *testing.T) {
	base := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "1"}, ResourceVersion: "1"},
		Spec:   v1.NodeSpec{Taints: []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoExecute}}},
		Status: v1.NodeStatus{Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}}}
	for _, tc := range []struct {
		name   string
		change func(*v1.Node)
		same   bool
	}{
		{"a heartbeat", func(n *v1.Node) {
			n.ResourceVersion = "2"
			n.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
		}, true},
		{"the same quantity written otherwise", func(n *v1.Node) { n.Status.Allocatable[v1.ResourceCPU] = resource.MustParse("2000m") }, true},
		{"a label", func(n *v1.Node) { n.Labels["b"] = "2" }, false},
		{"a taint", func(n *v1.Node) { n.Spec.Taints = nil }, false},
		{"allocatable", func(n *v1.Node) { n.Status.Allocatable["example.com/gpu"] = resource.MustParse("1") }, false},
		{"the runtime's features", func(n *v1.Node) {
			n.Status.Features = &v1.NodeFeatures{SupplementalGroupsPolicy: ptrTo(true)}
		}, false},
	} {
		changed := base.DeepCopy()
		tc.change(changed)
		if got := sameForAdmission(base, changed); got != tc.same {
			t.Errorf("%s: same %v, want %v", tc.name, got, tc.same)
		}
	}
}

// nodeInbox is a pod-manager that keeps the NodeChanged it receives.
type nodeInbox struct {
	mu   sync.Mutex
	got  []*messages.NodeChanged
	seen chan struct{}
}

func (b *nodeInbox) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*messages.NodeChanged); ok {
		b.mu.Lock()
		b.got = append(b.got, m)
		b.mu.Unlock()
		select {
		case b.seen <- struct{}{}:
		default:
		}
	}
}

// waitFor waits for a NodeChanged that ok accepts.
func (b *nodeInbox) waitFor(t *testing.T, what string, ok func(*messages.NodeChanged) bool) {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		b.mu.Lock()
		for _, m := range b.got {
			if ok(m) {
				b.mu.Unlock()
				return
			}
		}
		b.mu.Unlock()
		select {
		case <-b.seen:
		case <-deadline:
			b.mu.Lock()
			for _, m := range b.got {
				t.Logf("got: from API %v, labels %v, taints %v", m.FromAPI, m.Node.Labels, m.Node.Spec.Taints)
			}
			b.mu.Unlock()
			t.Fatalf("no NodeChanged %s", what)
		}
	}
}

// TestNodeForAdmission: the pod-manager gets the Node once registered, on
// request, and when someone else labels it (through the watch).
func TestNodeForAdmission(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	inbox := &nodeInbox{seen: make(chan struct{}, 1)}
	pm, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return inbox }), "pm")
	if err != nil {
		t.Fatal(err)
	}
	kube := fake.NewClientset()
	cfg := &kubeletconfigv1beta1.KubeletConfiguration{
		NodeStatusUpdateFrequency: metav1.Duration{Duration: time.Hour}, NodeStatusReportFrequency: metav1.Duration{Duration: time.Hour},
		NodeLeaseDurationSeconds: 40, RegisterWithTaints: []v1.Taint{{Key: "initial", Effect: v1.TaintEffectNoExecute}},
	}
	sr, err := system.Root.SpawnNamed(actor.PropsFromProducer(New(Params{
		Kube: kube, NodeName: "n1", Config: cfg, NodeLabels: map[string]string{"from": "flags"},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("2")}, RootDir: t.TempDir(),
		PodManager: pm, Log: zerolog.Nop(),
	})), "sr")
	if err != nil {
		t.Fatal(err)
	}
	inbox.waitFor(t, "from the API once registered", func(m *messages.NodeChanged) bool {
		return m.FromAPI && m.Node.Labels["from"] == "flags" && len(m.Node.Spec.Taints) == 1 &&
			!m.Node.Status.Allocatable.Name(v1.ResourceEphemeralStorage, resource.BinarySI).IsZero()
	})
	inbox.mu.Lock()
	inbox.got = nil
	inbox.mu.Unlock()
	supervision.TellFromOutside(system.ActorSystem, sr, &messages.RefreshNode{})
	inbox.waitFor(t, "answering RefreshNode, changed or not", func(m *messages.NodeChanged) bool { return m.FromAPI })
	node, err := kube.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node.Labels["added"] = "later"
	if _, err := kube.CoreV1().Nodes().Update(context.Background(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	inbox.waitFor(t, "with a label added through the API", func(m *messages.NodeChanged) bool {
		return m.FromAPI && m.Node.Labels["added"] == "later"
	})
}
