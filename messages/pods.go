package messages

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// PodOp is how a PodUpdate changes the pods of its source, with the meanings
// of upstream's pod config.
type PodOp int

const (
	// OpSet replaces the source's whole set of pods: pods missing from it
	// are removed. Sources that rescan (files, URL) send SET.
	OpSet PodOp = iota
	// OpAdd adds pods that are new to the source.
	OpAdd
	// PodUpdate changes pods the source already sent.
	OpUpdate
	// OpDelete marks pods for graceful deletion (the API server set a
	// deletionTimestamp); they are terminated with their grace period.
	OpDelete
	// OpRemove removes pods from the source at once.
	OpRemove
	// OpReconcile carries status-only changes of pods already known.
	OpReconcile
)

func (o PodOp) String() string {
	switch o {
	case OpSet:
		return "SET"
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpDelete:
		return "DELETE"
	case OpRemove:
		return "REMOVE"
	case OpReconcile:
		return "RECONCILE"
	}
	return fmt.Sprintf("PodOp(%d)", int(o))
}

// Pod sources, as upstream names them (kubernetes.io/config.source).
const (
	SourceFile = "file"
	SourceHTTP = "http"
	SourceAPI  = "api"
)

// PodUpdate carries pods from one source.
// Sender: the config-source actor. Receiver: the pod-manager actor, which
// merges the sources into the desired set of pods.
type PodUpdate struct {
	Source string
	Op     PodOp
	Pods   []*v1.Pod
}

func (m *PodUpdate) Summary() string {
	names := make([]string, 0, min(len(m.Pods), 3))
	for _, p := range m.Pods[:min(len(m.Pods), 3)] {
		names = append(names, p.Namespace+"/"+p.Name)
	}
	more := ""
	if len(m.Pods) > 3 {
		more = fmt.Sprintf(" +%d more", len(m.Pods)-3)
	}
	return fmt.Sprintf("%s %s: %d pods [%s%s]", m.Source, m.Op, len(m.Pods), strings.Join(names, " "), more)
}

// ResendPods asks for every source's current pods again, as a SET each.
// Sender: the pod-manager when it (re)starts, since a restart loses the
// desired set. Receiver: the config-source.
type ResendPods struct{}

func (m *ResendPods) Summary() string { return "resend every source's pods" }
