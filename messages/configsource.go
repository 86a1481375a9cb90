package messages

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// SourceScanned is the result of one read of a static pod source: the
// manifest directory (or file), or the manifest URL.
// Sender: a reader goroutine of the config-source actor, from outside the
// tree (it does the blocking I/O so that the actor's mailbox never waits on
// a disk or a server). Receiver: the config-source actor, which sends the
// pod-manager a PodUpdate when the set changed.
type SourceScanned struct {
	Source string // SourceFile, SourceHTTP or SourceAPI
	// Pods is the source's complete set of valid static pods, unless Failed.
	Pods []*v1.Pod
	// Invalid lists the manifests left out, and why.
	Invalid []ManifestError
	// Failed means the source could not be read at all (the URL did not
	// answer, or served an invalid body): Pods is not a new set and the last
	// one sent stands, as upstream keeps a URL's pods through its outages.
	Failed bool
}

// ManifestError is a manifest left out of a SourceScanned, or a source
// that could not be read.
type ManifestError struct {
	Location string // the file's path or the URL
	Reason   string
	// Version identifies the content that failed (a hash), so that the
	// actor logs an error once per change of the file, not on every rescan;
	// "" when there was no content.
	Version string
	// Pod is the pod left out, when the manifest decoded and was left out
	// for declaring the same pod (namespace and name) as DuplicateOf, the
	// manifest kept: the receiver records a FailedValidation event on it,
	// as upstream does, naming both.
	Pod         *v1.Pod
	DuplicateOf string
}

func (m *SourceScanned) Summary() string {
	if m.Failed {
		return fmt.Sprintf("%s scanned: failed (%d errors)", m.Source, len(m.Invalid))
	}
	return fmt.Sprintf("%s scanned: %d pods, %d invalid", m.Source, len(m.Pods), len(m.Invalid))
}
