package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
)

// node is one standalone actorlet with fault injection on (agent.Node),
// whose debug listener serves the dashboard.
type node struct{ *agent.Node }

// startNode runs actorlet and waits until it serves. Every pod of the node
// is removed from the runtime when the test ends.
func startNode(t testing.TB) *node {
	t.Helper()
	n := &node{agent.NewNode(t, binary, agent.NamePrefix("dash-"))}
	n.Start()
	return n
}

// url is an address on the debug listener, which serves the dashboard.
func (n *node) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", n.Debug, path)
}

// writePod places a static pod that sleeps, named name.
func (n *node) writePod(name string) {
	n.T.Helper()
	agent.WriteManifest(n.T, n.Manifests, name+".yaml", agent.Manifest(name, agent.SleepSpec("c", n.Env.BusyboxImage, 1)))
}

// actorInfo is the part of /debug/actors.json's actors the tests read.
type actorInfo struct {
	Path        string `json:"path"`
	Kind        string `json:"kind"`
	Restarts    int    `json:"restarts"`
	LastFailure string `json:"lastFailure"`
}

// watchActors polls /debug/actors.json every 50 ms in the background and
// returns a channel that gets the time at which cond first held and the
// actors then.
func (n *node) watchActors(ctx context.Context, cond func([]actorInfo) bool) <-chan registryEvent {
	out := make(chan registryEvent, 1)
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if actors, err := n.actors(ctx); err == nil && cond(actors) {
				out <- registryEvent{at: time.Now(), actors: actors}
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return out
}

type registryEvent struct {
	at     time.Time
	actors []actorInfo
}

func (n *node) actors(ctx context.Context) ([]actorInfo, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.url("/debug/actors.json"), nil)
	if err != nil {
		return nil, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var snap struct {
		Actors []actorInfo `json:"actors"`
	}
	if err := json.NewDecoder(res.Body).Decode(&snap); err != nil {
		return nil, fmt.Errorf("GET /debug/actors.json: %w", err)
	}
	return snap.Actors, nil
}
