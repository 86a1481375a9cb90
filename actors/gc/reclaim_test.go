package gc

import (
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// TestReclaimDiskSpace: asked by the eviction manager, the gc actor runs a
// container pass and removes every unused image whatever its thresholds,
// answers once both are done, and reports no FreeDiskSpaceFailed for it.
func TestReclaimDiskSpace(t *testing.T) {
	const mib = 1 << 20
	// Thresholds a regular pass never reaches.
	rt, img, cfg := threeImages(t, 100, 99)
	rec := record.NewFakeRecorder(10)
	system := actor.NewActorSystem()
	t.Cleanup(system.Shutdown)
	pm := system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*messages.ListPods); ok {
			c.Respond(&messages.PodList{SourcesReady: true})
		}
	}))
	gcPID := system.Root.Spawn(actor.PropsFromProducer(New(Params{Runtime: rt, Images: img, Config: cfg, Events: rec, NodeName: "node-a",
		PodManager: pm, ContainerGCPeriod: time.Hour, ImageGCPeriod: time.Hour, PodLogsDir: t.TempDir(),
		Log: zerolog.New(zerolog.NewTestWriter(t))})))
	// The passes at start remove nothing.
	time.Sleep(300 * time.Millisecond)
	if got := img.removedIDs(); len(got) != 0 {
		t.Fatalf("a regular pass removed %v", got)
	}
	answers := make(chan *messages.DiskSpaceReclaimed, 2)
	system.Root.Spawn(actor.PropsFromFunc(func(c actor.Context) {
		switch m := c.Message().(type) {
		case *actor.Started:
			supervision.Tell(c, gcPID, &messages.ReclaimDiskSpace{})
		case *messages.DiskSpaceReclaimed:
			answers <- m
		}
	}))
	select {
	case m := <-answers:
		if m.ImagesRemoved != 1 || m.BytesFreed != 3*mib {
			t.Errorf("answer %+v, want the unused image", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no DiskSpaceReclaimed")
	}
	if got := img.removedIDs(); !slices.Equal(got, []string{"sha256:old"}) {
		t.Errorf("removed %v, want only the unused image", got)
	}
	noMoreEvents(t, rec)
}
