package podmanager

import (
	"maps"
	"slices"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/internal/manifest"
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

// mirrorStatusDiverged reports whether a static pod's status, the one its
// worker last reported, must be written to its mirror pod again: the API
// shows a new version (cur) of the same mirror pod as before (old), live,
// mirroring this very static pod, with a status that differs from the
// node's in what the node owns (statusDiverged). Someone else wrote it (a
// PATCH of pods/status), or it is the late echo of an earlier write of
// ours, which the status-reporter's read before writing turns into no
// write. A mirror pod first seen is not compared: the status-reporter made
// it and writes its status in the same step, and after a restart of
// actorlet the worker's first report writes it anyway.
func mirrorStatusDiverged(old, cur, static *v1.Pod, status v1.PodStatus) bool {
	if old == nil || old.UID != cur.UID || old.ResourceVersion == cur.ResourceVersion || cur.DeletionTimestamp != nil {
		return false
	}
	if status.Phase == "" || cur.Annotations[manifest.ConfigMirrorAnnotation] != manifest.ConfigHash(static) {
		return false
	}
	return statusDiverged(cur.Status, status)
}

// reconcileMirrors hands the status of each running static pod whose
// mirror pod's status diverged (mirrorStatusDiverged) to the
// status-reporter again with Reconcile, as it does for an API pod whose
// status someone else changed: upstream's status manager reconciles a
// static pod against its mirror pod's status the same way (needsReconcile,
// through the pod manager's mirror pod), at its next 10 s sync.
func (m *Machine) reconcileMirrors(old, cur map[string]*v1.Pod) {
	var changed []string
	for name, mp := range cur {
		if prev := old[name]; prev != nil && prev.ResourceVersion != mp.ResourceVersion {
			changed = append(changed, name)
		}
	}
	slices.Sort(changed)
	for _, name := range changed {
		mp := cur[name]
		// The mirror's hash is its static pod's UID (manifest.MakeStatic);
		// mirrorStatusDiverged checks that it is.
		uid := types.UID(mp.Annotations[manifest.ConfigMirrorAnnotation])
		p := m.pods[uid]
		if p == nil || p.Phase != Running || p.Terminate != nil || p.Source == messages.SourceAPI || p.Pod == nil || fullName(p.Pod) != name {
			continue
		}
		if mirrorStatusDiverged(old[name], mp, p.Pod, p.Status) {
			m.emit(CmdReportStatus{Pod: p.Pod, Status: withResizePending(p.Status, m.pending[uid]), Reconcile: true})
		}
	}
}

// setMirrors keeps the API server's mirror pods, and asks the
// status-reporter to check at once the mirror of each running static pod
// whose mirror went: it is recreated, and nothing of the static pod is
// touched. A mirror pod whose status diverged from its static pod's gets
// the static pod's status again (reconcileMirrors).
func (m *Machine) setMirrors(mirrors []*v1.Pod) {
	cur := make(map[string]*v1.Pod, len(mirrors))
	for _, mp := range mirrors {
		cur[fullName(mp)] = mp
	}
	m.reconcileMirrors(m.mirrors, cur)
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
