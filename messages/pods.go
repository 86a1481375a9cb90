package messages

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Pod sources, as upstream names them (kubernetes.io/config.source).
const (
	SourceFile = "file"
	SourceHTTP = "http"
	SourceAPI  = "api"
)

// PodUpdate carries one source's whole set of pods, as upstream's SET: pods
// missing from it are removed. Every source sends its whole set whenever it
// changes (files and URLs rescan; the API server's informer is listed).
// Sender: the config-source actor. Receiver: the pod-manager actor, which
// merges the sources into the desired set of pods.
type PodUpdate struct {
	Source string
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
	return fmt.Sprintf("%s: %d pods [%s%s]", m.Source, len(m.Pods), strings.Join(names, " "), more)
}

// ResendPods asks for every source's current pods again, a PodUpdate each.
// Sender: the pod-manager when it restarts, since a restart loses the
// desired set. Receiver: the config-source.
type ResendPods struct{}

func (m *ResendPods) Summary() string { return "resend every source's pods" }
