package gc

import (
	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// reclaim is the eviction manager's call for disk space before it evicts
// a pod, as upstream's DeleteAllUnusedContainers and DeleteUnusedImages: a
// container pass, and an image pass that removes every unused image past
// imageMinimumGCAge whatever the thresholds. A pass already under way
// counts for it. The askers hear DiskSpaceReclaimed once both are done.
func (a *Actor) reclaim(ctx actor.Context) {
	if s := ctx.Sender(); s != nil {
		a.reclaimers = append(a.reclaimers, s)
	}
	a.reclaimFreed = messages.DiskSpaceReclaimed{}
	a.containerGC(ctx)
	a.reclaimContainers = a.collecting
	if !a.imaging {
		a.imageFreeAll = true
		a.imageGC(ctx)
		if !a.imaging {
			a.imageFreeAll = false
		}
	}
	a.reclaimImages = a.imaging
	a.reclaimAnswer(ctx)
}

// reclaimAnswer tells the askers once neither pass they wait for runs.
func (a *Actor) reclaimAnswer(ctx actor.Context) {
	if a.reclaimContainers || a.reclaimImages || len(a.reclaimers) == 0 {
		return
	}
	for _, pid := range a.reclaimers {
		done := a.reclaimFreed
		supervision.Tell(ctx, pid, &done)
	}
	a.reclaimers = nil
}
