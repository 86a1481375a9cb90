package bootstrap

import (
	"github.com/actorlet/actorlet/internal/metrics"
	"github.com/actorlet/actorlet/supervision"
)

// actorCounts lists r's live actors for the actor metrics: the wiring
// adapts the framework's registry to what metrics reads, so that neither
// imports the other.
func actorCounts(r *supervision.Registry) metrics.ActorLister {
	return func() []metrics.ActorCounts {
		actors := r.Actors()
		out := make([]metrics.ActorCounts, len(actors))
		for i, a := range actors {
			out[i] = metrics.ActorCounts{Path: a.Path, Kind: a.Kind, Started: a.Started,
				MailboxDepth: a.MailboxDepth, Processed: a.Processed, MeanHandling: a.MeanHandling, Restarts: a.Restarts}
		}
		return out
	}
}
