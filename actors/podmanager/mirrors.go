package podmanager

import (
	"slices"

	"github.com/asynkron/protoactor-go/actor"
	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/manifest"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
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
func (a *Actor) setMirrors(ctx actor.Context, mirrors []*v1.Pod) {
	cur := make(map[string]*v1.Pod, len(mirrors))
	for _, m := range mirrors {
		cur[fullName(m)] = m
	}
	for _, name := range mirrorsGone(a.mirrors, cur) {
		for uid, e := range a.pods {
			if e.pod != nil && e.source != messages.SourceAPI && e.terminate == nil && fullName(e.pod) == name {
				supervision.Tell(ctx, a.p.StatusReporter, &messages.CheckMirrorPod{UID: uid})
			}
		}
	}
	a.mirrors = cur
}
