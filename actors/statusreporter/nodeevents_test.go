package statusreporter

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/oomwatch"
)

func TestNodeEvents(t *testing.T) {
	node := func(unschedulable bool) *v1.Node {
		return &v1.Node{Spec: v1.NodeSpec{Unschedulable: unschedulable}}
	}
	type update struct {
		previousBootID string
		node           *v1.Node
		want           []nodeEvent
	}
	notSchedulable := nodeEvent{"Normal", "NodeNotSchedulable", "Node n1 status is now: NodeNotSchedulable"}
	schedulable := nodeEvent{"Normal", "NodeSchedulable", "Node n1 status is now: NodeSchedulable"}
	rebooted := nodeEvent{"Warning", "Rebooted", "Node n1 has been rebooted, boot id: boot-2"}
	for _, tc := range []struct {
		name    string
		updates []update
	}{
		{"a new Node: no event", []update{{"", node(false), nil}, {"boot-2", node(false), nil}}},
		{"the same boot, schedulable", []update{{"boot-2", node(false), nil}}},
		{"cordoned before the start: once", []update{{"boot-2", node(true), []nodeEvent{notSchedulable}}, {"boot-2", node(true), nil}}},
		{"cordoned, then uncordoned", []update{
			{"boot-2", node(false), nil},
			{"boot-2", node(true), []nodeEvent{notSchedulable}},
			{"boot-2", node(false), []nodeEvent{schedulable}},
		}},
		{"rebooted: once a process", []update{{"boot-1", node(false), []nodeEvent{rebooted}}, {"boot-1", node(false), nil}}},
		{"rebooted and cordoned", []update{{"boot-1", node(true), []nodeEvent{rebooted, notSchedulable}}}},
		{"a failed read (no Node) changes nothing", []update{{"", nil, nil}, {"boot-2", node(true), []nodeEvent{notSchedulable}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s nodeEvents
			for i, u := range tc.updates {
				if got := s.step("n1", "boot-2", u.previousBootID, u.node); !reflect.DeepEqual(got, u.want) {
					t.Fatalf("update %d: %+v, want %+v", i, got, u.want)
				}
			}
		})
	}
}

func TestOOMEvent(t *testing.T) {
	for _, tc := range []struct {
		oom  oomwatch.OOM
		want *nodeEvent
	}{
		{oomwatch.OOM{Process: "stress", PID: 42, Container: "/", VictimContainer: "/"},
			&nodeEvent{"Warning", "SystemOOM", "System OOM encountered, victim process: stress, pid: 42"}},
		{oomwatch.OOM{Container: "/", VictimContainer: "/"}, &nodeEvent{"Warning", "SystemOOM", "System OOM encountered"}},
		{oomwatch.OOM{Process: "app", PID: 7, Container: "/kubepods/pod1/c", VictimContainer: "/kubepods/pod1"}, nil},
	} {
		got, ok := oomEvent(tc.oom)
		if ok != (tc.want != nil) || ok && got != *tc.want {
			t.Errorf("oomEvent(%+v) = %+v, %v; want %+v", tc.oom, got, ok, tc.want)
		}
	}
}
