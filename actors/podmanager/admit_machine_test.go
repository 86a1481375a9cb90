package podmanager

import (
	"reflect"
	"testing"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/messages"
)

// TestAdmissionSteps drives a machine that awaits the Node through
// admission's waits: for the Node, for one from the API, and for the Node
// read again when node affinity alone failed.
func TestAdmissionSteps(t *testing.T) {
	configNode := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
	apiNode := configNode.DeepCopy()
	apiNode.Labels["disk"] = "ssd"
	ssd := func(uid string) *v1.Pod {
		p := testPod(uid, "")
		p.Spec.NodeSelector = map[string]string{"disk": "ssd"}
		return p
	}
	fast := func(uid string) *v1.Pod {
		p := testPod(uid, "")
		p.Spec.NodeSelector = map[string]string{"disk": "nvme"}
		return p
	}
	besteffort := testPod("a", "")
	affinityMsg := "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
	rejectedAs := func(p *v1.Pod, reason, msg string) []Command {
		return []Command{
			CmdLog{Level: zerolog.WarnLevel, Message: "pod rejected: " + msg, Fields: map[string]any{"pod": fullName(p), "reason": reason}},
			CmdEvent{Pod: p, Type: v1.EventTypeWarning, Reason: reason, Message: msg},
			CmdReportStatus{Pod: p, Status: v1.PodStatus{Phase: v1.PodFailed, Reason: reason, Message: "Pod was rejected: " + msg, QOSClass: v1.PodQOSBestEffort}},
			CmdReportFinished{Pod: p},
		}
	}
	start := []Event{EvStarted{First: true}, EvSourceSet{Source: messages.SourceFile}, EvSourceSet{Source: messages.SourceAPI}}
	for _, tc := range []struct {
		name    string
		events  []Event
		want    []Command
		waiting []types.UID
	}{
		{name: "an API pod waits for the Node",
			events: append(start, set(messages.SourceAPI, testPod("a", ""))), waiting: []types.UID{"a"}},
		{name: "and for the Node from the API",
			events: append(start, set(messages.SourceAPI, testPod("a", "")), EvNode{Node: configNode}), waiting: []types.UID{"a"}},
		{name: "which admits it",
			events: append(start, set(messages.SourceAPI, testPod("a", "")), EvNode{Node: configNode}, EvNode{Node: apiNode, FromAPI: true}),
			want:   []Command{spawn("a")}},
		{name: "a static pod needs only the Node of the configuration",
			events: append(start, EvNode{Node: configNode}, set(messages.SourceFile, testPod("s", ""))),
			want:   []Command{spawn("s")}},
		{name: "waiting pods are admitted in their order of arrival",
			events: append(start, set(messages.SourceAPI, testPod("b", "")), set(messages.SourceAPI, testPod("b", ""), testPod("a", "")), EvNode{Node: apiNode, FromAPI: true}),
			want:   []Command{spawn("b"), spawn("a")}},
		{name: "a waiting pod removed is forgotten",
			events: append(start, set(messages.SourceAPI, testPod("a", "")), set(messages.SourceAPI), EvNode{Node: apiNode, FromAPI: true})},
		{name: "a waiting pod is no orphan",
			events:  append(start, set(messages.SourceAPI, testPod("a", "")), EvRuntimeEvents{Events: []messages.PodLifecycleEvent{started("a", "p-a")}}),
			waiting: []types.UID{"a"}},
		{name: "node affinity alone failing reads the Node again",
			events: append(start, EvNode{Node: configNode, FromAPI: true}, set(messages.SourceAPI, ssd("a"))),
			want:   []Command{CmdRefreshNode{}}, waiting: []types.UID{"a"}},
		{name: "once for many pods",
			events:  append(start, EvNode{Node: configNode, FromAPI: true}, set(messages.SourceAPI, ssd("a")), set(messages.SourceAPI, ssd("a"), ssd("b"))),
			waiting: []types.UID{"a", "b"}},
		{name: "the Node read again admits it",
			events: append(start, EvNode{Node: configNode, FromAPI: true}, set(messages.SourceAPI, ssd("a")), EvNode{Node: apiNode, FromAPI: true}),
			want:   []Command{spawn("a")}},
		{name: "or rejects it",
			events: append(start, EvNode{Node: apiNode, FromAPI: true}, set(messages.SourceAPI, fast("a")), EvNode{Node: apiNode, FromAPI: true}),
			want:   rejectedAs(fast("a"), "NodeAffinity", affinityMsg)},
		{name: "memory pressure refuses a BestEffort pod",
			events: append(start, EvNode{Node: apiNode, FromAPI: true}, EvNodePressure{Conditions: []v1.NodeConditionType{v1.NodeMemoryPressure}}, set(messages.SourceAPI, besteffort)),
			want:   rejectedAs(besteffort, "Evicted", "The node had condition: [MemoryPressure]. ")},
		{name: "pressure gone, it is admitted",
			events: append(start, EvNode{Node: apiNode, FromAPI: true}, EvNodePressure{Conditions: []v1.NodeConditionType{v1.NodeMemoryPressure}}, EvNodePressure{}, set(messages.SourceAPI, besteffort)),
			want:   []Command{spawn("a")}},
		{name: "a rejected pod, Failed in the API after a restart, is never started",
			events: append(start, EvNode{Node: apiNode, FromAPI: true}, set(messages.SourceAPI, withPhase(fast("a"), v1.PodFailed, "NodeAffinity"))),
			want:   []Command{spawn("a")}}, // a worker that only stops what may be left (the runtime was not listed)
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMachine(Config{Sources: []string{messages.SourceFile, messages.SourceAPI}, MaxPods: 10, AwaitNode: true})
			var cmds []Command
			for _, ev := range tc.events {
				cmds = m.Step(ev, t0)
			}
			cmds = warningsOnly(cmds)
			if !reflect.DeepEqual(cmds, tc.want) {
				t.Errorf("commands:\n got %s\nwant %s", describe(cmds), describe(tc.want))
			}
			var waiting []types.UID
			for _, uid := range []types.UID{"a", "b", "s"} {
				if _, ok := m.waiting[uid]; ok {
					waiting = append(waiting, uid)
				}
			}
			if !reflect.DeepEqual(waiting, tc.waiting) {
				t.Errorf("waiting %v, want %v", waiting, tc.waiting)
			}
		})
	}
}

// warningsOnly drops the commands logging below the warning level, the
// allocations' checkpoints and the admissions' counts.
func warningsOnly(cmds []Command) []Command {
	var out []Command
	for _, c := range cmds {
		if l, ok := c.(CmdLog); ok && l.Level < zerolog.WarnLevel {
			continue
		}
		if _, ok := c.(CmdSaveAllocations); ok {
			continue // the resize tests' concern
		}
		if _, ok := c.(CmdCountAdmission); ok {
			continue // metrics_test.go's concern
		}
		out = append(out, c)
	}
	return out
}
