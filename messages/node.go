package messages

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NodeChanged carries what admission needs of this node's Node: its labels
// (node affinity, nodeSelector, the OS label), its taints (NoExecute taints
// a pod must tolerate) and its allocatable resources (extended resources,
// ephemeral-storage, hugepages). Sent first at start with the Node built
// from the configuration (--node-labels, registerWithTaints), as upstream's
// getNodeAnyWay falls back to it while the API has no Node, then whenever
// the Node as the API has it changes in any of those.
// Sender: the status-reporter. Receiver: the pod-manager.
type NodeChanged struct {
	// Node is a copy the receiver owns; only its labels, taints and
	// status.allocatable matter.
	Node *v1.Node
	// FromAPI: the Node was read from (or written to) the API server;
	// false for the Node built from the configuration.
	FromAPI bool
}

func (m *NodeChanged) Summary() string {
	if m.Node == nil {
		return "node: none"
	}
	from := "config"
	if m.FromAPI {
		from = "API"
	}
	return fmt.Sprintf("node %s from %s: %d labels, %d taints", m.Node.Name, from, len(m.Node.Labels), len(m.Node.Spec.Taints))
}

// NodePressure is the set of node conditions under pressure right now
// (v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure), empty
// when none is. Admission refuses pods as upstream's eviction manager does
// while any is set: with MemoryPressure alone only BestEffort pods (unless
// they tolerate the memory-pressure taint), with any other every pod but
// critical ones; reason "Evicted", message "The node had condition: [...]. ".
// Sent whenever the set changes, and again at every pass of the eviction
// manager (its monitoring interval): the set is the whole state, not a
// change, and a restarted pod-manager has lost it (until then it admits as
// if no condition were under pressure).
// Sender: the eviction actor. Receivers: the pod-manager, and the
// status-reporter (the Node's MemoryPressure, DiskPressure and PIDPressure
// conditions).
type NodePressure struct {
	Conditions []v1.NodeConditionType
}

func (m *NodePressure) Summary() string {
	if len(m.Conditions) == 0 {
		return "node pressure: none"
	}
	names := make([]string, len(m.Conditions))
	for i, c := range m.Conditions {
		names[i] = string(c)
	}
	return "node pressure: " + strings.Join(names, ", ")
}

// RefreshNode asks for the Node afresh: the status-reporter reads it from
// the API server (when registered; otherwise it has the Node built from
// the configuration) and answers with NodeChanged, changed or not. Sent
// when the pod-manager starts, and when node affinity alone refused a pod,
// as upstream reads the Node again before rejecting such a pod.
// Sender: the pod-manager. Receiver: the status-reporter.
type RefreshNode struct{}

func (m *RefreshNode) Summary() string { return "refresh node" }

// NodeRead is the outcome of reading the Node for a RefreshNode, run
// outside the status-reporter's mailbox.
// Sender and receiver: the status-reporter (from its own goroutine).
type NodeRead struct {
	Node *v1.Node
	Err  error
}

func (m *NodeRead) Summary() string {
	if m.Err != nil {
		return "node read failed: " + m.Err.Error()
	}
	return "node read"
}

// NodeWatched is a version of this node's Node the status-reporter's watch
// of it saw (added or updated), as upstream's node informer sees labels
// and taints others set; what admission needs of it goes on to the
// pod-manager as NodeChanged when it changed.
// Sender and receiver: the status-reporter (from its watch's goroutine).
type NodeWatched struct{ Node *v1.Node }

func (m *NodeWatched) Summary() string { return "node watched: " + m.Node.Name }
