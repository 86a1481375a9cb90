package podmanager

import (
	"maps"
	"slices"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

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
	m.deleteOrphanedMirrors()
}

// orphanedMirrors returns, sorted by full name, the live mirror pods whose
// static pod no source has: no pod of the same full name is held (run,
// waiting or rejected). An API pod cannot share a mirror pod's full name.
func orphanedMirrors(mirrors map[string]*v1.Pod, held map[string]bool) []*v1.Pod {
	var out []*v1.Pod
	for _, name := range slices.Sorted(maps.Keys(mirrors)) {
		if mp := mirrors[name]; mp.DeletionTimestamp == nil && !held[name] {
			out = append(out, mp)
		}
	}
	return out
}

// deleteOrphanedMirrors asks, once every source has sent its set, for the
// deletion of each orphaned mirror pod, once per mirror pod. A static pod
// removed while actorlet runs has its mirror deleted by its own last status
// write; one whose manifest went while actorlet was down has no worker that
// would, and its mirror pod would stay in the API for good.
func (m *Machine) deleteOrphanedMirrors() {
	if !m.ready {
		return
	}
	held := make(map[string]bool, len(m.pods)+len(m.waiting)+len(m.rejected))
	for _, p := range m.pods {
		if p.Pod != nil {
			held[fullName(p.Pod)] = true
		}
	}
	for _, w := range m.waiting {
		held[fullName(w.pod)] = true
	}
	for _, p := range m.rejected {
		held[fullName(p)] = true
	}
	asked := make(map[types.UID]bool, len(m.mirrorsDeleting))
	for _, mp := range orphanedMirrors(m.mirrors, held) {
		asked[mp.UID] = true
		if m.mirrorsDeleting[mp.UID] {
			continue
		}
		m.log(zerolog.InfoLevel, "the static pod of this mirror pod is gone: deleting the mirror pod", map[string]any{"pod": fullName(mp), "uid": string(mp.UID)})
		m.emit(CmdDeleteMirror{Pod: mp})
	}
	// A mirror pod no longer an orphan, or gone, may be asked for again.
	m.mirrorsDeleting = asked
}
