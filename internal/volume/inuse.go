package volume

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// InUse is what one pod's set-up knows and learns of the node's
// status.volumesInUse. As upstream's reconciler, the set-up of an
// attachable volume goes no further than naming it until the Node lists
// it in use: the attach-detach controller never detaches a volume the Node
// lists, so a volume is listed before it is staged, and stays listed
// until it is torn down. It belongs to one set-up, which runs its volumes
// one after another: it is not safe for concurrent use.
type InUse struct {
	// Reported are the volumes the Node's status lists, as of the
	// set-up's start.
	Reported map[v1.UniqueVolumeName]bool
	// Wanted collects the attachable volumes the set-up resolved, set up
	// or not: the volume-manager lists them in use from then on.
	Wanted []v1.UniqueVolumeName
}

type inUseKey struct{}

// WithInUse returns ctx carrying iu to the set-ups run with it. Without
// one, a set-up neither waits for volumes to be listed in use nor collects
// them (a node without a Node object to list them in).
func WithInUse(ctx context.Context, iu *InUse) context.Context {
	return context.WithValue(ctx, inUseKey{}, iu)
}

// wantInUse records that the set-up of an attachable volume needs it
// listed in use, and tells whether it is.
func wantInUse(ctx context.Context, name string) error {
	iu, _ := ctx.Value(inUseKey{}).(*InUse)
	if iu == nil {
		return nil
	}
	un := v1.UniqueVolumeName(name)
	iu.Wanted = append(iu.Wanted, un)
	if !iu.Reported[un] {
		return &NotInUseError{Name: un}
	}
	return nil
}

// NotInUseError is the set-up of an attachable volume stopped until the
// Node lists the volume in use: a wait of one node status update, not a
// failure worth an event.
type NotInUseError struct{ Name v1.UniqueVolumeName }

// Error is upstream's VerifyControllerAttachedVolume message.
func (e *NotInUseError) Error() string {
	return fmt.Sprintf("Volume has not been added to the list of VolumesInUse in the node's volume status for volume %q", e.Name)
}
