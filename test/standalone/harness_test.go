package standalone

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/actorlet/actorlet/test/agent"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// node is one actorlet in standalone mode on the environment's containerd
// (agent.Node), with the debug listener's readers the tests use.
type node struct{ *agent.Node }

func newNode(t testing.TB) *node {
	t.Helper()
	return &node{agent.NewNode(t, binary, agent.NamePrefix("sa-"))}
}

func containerIDs(p *v1.Pod) map[string]string {
	out := map[string]string{}
	for _, cs := range p.Status.ContainerStatuses {
		out[cs.Name] = cs.ContainerID
	}
	return out
}

// manifest renders a pod manifest with the environment's busybox image.
func manifest(name, spec string) string { return agent.Manifest(name, spec) }

// debugActor is what the tests read of one actor in /debug/actors.json.
type debugActor struct {
	Path, Kind, State, LastFailure string
	Restarts                       int
	MailboxDepth                   int64
}

// actors reads the registry's live actors through the debug listener.
func (n *node) actors() ([]debugActor, error) {
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/actors.json", n.Debug))
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	var snap struct{ Actors []debugActor }
	if err := json.NewDecoder(res.Body).Decode(&snap); err != nil {
		return nil, err
	}
	return snap.Actors, nil
}

// workerPath is the registry path of a static pod's pod-worker.
func workerPath(p *v1.Pod) string {
	return fmt.Sprintf("bootstrap/pod-manager/default/%s@%s", p.Name, string(p.UID)[:8])
}
