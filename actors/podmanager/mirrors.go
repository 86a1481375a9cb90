package podmanager

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/manifest"
	"github.com/actorlet/actorlet/messages"
)

// fullName is a pod's namespace/name, which a static pod and its mirror
// pod share.
func fullName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// splitMirrors sets the mirror pods of a set of API pods apart from the
// pods to run, keeping the order of each.
func splitMirrors(pods []*v1.Pod) (regular, mirrors []*v1.Pod) {
	regular = make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		if manifest.IsMirror(p) {
			mirrors = append(mirrors, p)
		} else {
			regular = append(regular, p)
		}
	}
	return regular, mirrors
}

// mirrorsGone returns, sorted, the full names whose mirror pod was live
// (present and not being deleted) in old and is not in cur: deleted, or
// being deleted. Their static pods need their mirror checked now.
func mirrorsGone(old, cur map[string]*v1.Pod) []string {
	var gone []string
	for name, m := range old {
		if m.DeletionTimestamp != nil {
			continue
		}
		if now, ok := cur[name]; !ok || now.DeletionTimestamp != nil {
			gone = append(gone, name)
		}
	}
	slices.Sort(gone)
	return gone
}

// setMirrors keeps the API server's mirror pods, and asks the
// status-reporter to check at once the mirror of each running static pod
// whose mirror went: it is recreated, and nothing of the static pod is
// touched.
func (m *Machine) setMirrors(mirrors []*v1.Pod) {
	cur := make(map[string]*v1.Pod, len(mirrors))
	for _, mp := range mirrors {
		cur[fullName(mp)] = mp
	}
	for _, name := range mirrorsGone(m.mirrors, cur) {
		for _, uid := range slices.Sorted(maps.Keys(m.pods)) {
			p := m.pods[uid]
			if p.Pod != nil && p.Source != messages.SourceAPI && p.Terminate == nil && fullName(p.Pod) == name {
				m.emit(CmdCheckMirror{UID: uid})
			}
		}
	}
	m.mirrors = cur
}
