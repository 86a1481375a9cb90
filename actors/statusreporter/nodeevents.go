package statusreporter

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/oomwatch"
)

// nodeEvent is one event about the Node.
type nodeEvent struct{ Type, Reason, Message string }

// nodeEvents is what the Node's events of its status updates depend on,
// as upstream's setters keep it.
type nodeEvents struct {
	// unschedulable is spec.unschedulable as last seen: false at start,
	// as upstream's lastNodeUnschedulable, so a Node cordoned before the
	// start gets NodeNotSchedulable once.
	unschedulable bool
	// rebooted: the Rebooted event was recorded; upstream records it once
	// a process.
	rebooted bool
}

// step returns the events of one node status update: previousBootID is
// the Node's boot ID before it, bootID this boot's, node the Node after it.
func (s *nodeEvents) step(name, bootID, previousBootID string, node *v1.Node) []nodeEvent {
	var out []nodeEvent
	if previousBootID != "" && previousBootID != bootID && !s.rebooted {
		s.rebooted = true
		out = append(out, nodeEvent{v1.EventTypeWarning, events.NodeRebooted,
			fmt.Sprintf("Node %s has been rebooted, boot id: %s", name, bootID)})
	}
	if node != nil && node.Spec.Unschedulable != s.unschedulable {
		s.unschedulable = node.Spec.Unschedulable
		reason := events.NodeSchedulable
		if s.unschedulable {
			reason = events.NodeNotSchedulable
		}
		out = append(out, nodeEvent{v1.EventTypeNormal, reason, fmt.Sprintf(events.NodeStatusMessage, name, reason)})
	}
	return out
}

// oomEvent is the event of an OOM kill the kernel reported, as upstream's
// OOM watcher records it: only a kill for the whole system's memory.
func oomEvent(o oomwatch.OOM) (nodeEvent, bool) {
	if !o.System() {
		return nodeEvent{}, false
	}
	msg := "System OOM encountered"
	if o.Process != "" && o.PID != 0 {
		msg = fmt.Sprintf("%s, victim process: %s, pid: %d", msg, o.Process, o.PID)
	}
	return nodeEvent{v1.EventTypeWarning, events.SystemOOM, msg}, true
}
