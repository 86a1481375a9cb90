package statusreporter

import (
	"context"
	"slices"
	"testing"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/actorlet/actorlet/messages"
)

// TestProbeStorage: the plugin-manager's storage error holds Ready, as
// upstream's storageErrors; no answer holds nothing.
func TestProbeStorage(t *testing.T) {
	system := actor.NewActorSystem()
	defer system.Shutdown()
	answering := func(err string) *actor.PID {
		return system.Root.Spawn(actor.PropsFromFunc(func(ctx actor.Context) {
			if _, ok := ctx.Message().(*messages.StorageStateRequest); ok {
				ctx.Respond(&messages.StorageState{Err: err})
			}
		}))
	}
	silent := system.Root.Spawn(actor.PropsFromFunc(func(actor.Context) {}))
	for _, tc := range []struct {
		name string
		pid  *actor.PID
		want []string
	}{
		{"not asked", nil, nil},
		{"storage ready", answering(""), nil},
		{"CSINode not made", answering("CSINode is not yet initialized"), []string{"CSINode is not yet initialized"}},
		{"no answer", silent, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := probe(context.Background(), system, &Params{PluginManager: tc.pid}, 0)
			if !slices.Equal(h.Problems, tc.want) {
				t.Errorf("problems %q, want %q", h.Problems, tc.want)
			}
		})
	}
}
