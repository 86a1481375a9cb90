package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// node is one standalone actorlet with fault injection on, its own static
// pod directory, root directory, node name and ports.
type node struct {
	t         testing.TB
	env       *env.Env
	name      string
	manifests string
	healthz   int
	debug     int // --debug-address, which serves the dashboard
	readOnly  int
	proc      *agent.Process
}

// startNode runs actorlet and waits until its healthz listener answers.
// Every pod of the node is removed from the runtime when the test ends.
func startNode(t testing.TB) *node {
	t.Helper()
	e := env.Require(t)
	// Held until the pods are removed, after actorlet is stopped. Other
	// test binaries may hold it meanwhile: say how long it took.
	waiting := time.Now()
	env.HoldRuntime(t)
	if waited := time.Since(waiting); waited > time.Second {
		t.Logf("waited %v for the runtime lock", waited.Round(time.Millisecond))
	}
	dir := t.TempDir()
	n := &node{
		t: t, env: e,
		name:      fmt.Sprintf("dash-%06x", rand.Uint32()&0xffffff),
		manifests: filepath.Join(dir, "manifests"),
		healthz:   agent.FreePort(t),
		debug:     agent.FreePort(t),
		readOnly:  agent.FreePort(t),
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	// The dashboard is on the debug listener; the authenticated API on
	// 10250 is not needed, and the port may be taken.
	config := filepath.Join(dir, "config.yaml")
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 2s
readOnlyPort: %d
healthzPort: %d
enableServer: false
`, n.manifests, n.readOnly, n.healthz)
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.removePods)
	n.proc = agent.Start(t, binary, "--config", config, "--container-runtime-endpoint", e.RuntimeEndpoint,
		"--hostname-override", n.name, "--root-dir", filepath.Join(dir, "root"), "--address", "127.0.0.1",
		"--debug-fault-injection", "--debug-address", fmt.Sprintf("127.0.0.1:%d", n.debug))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("actorlet log:\n%s", n.proc.Logs())
		}
	})
	agent.Eventually(t, "actorlet answers /healthz", 30*time.Second, func() error {
		if !n.proc.Alive() {
			t.Fatalf("actorlet exited:\n%s", n.proc.Logs())
		}
		res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthz))
		if err != nil {
			return err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("GET /healthz: %s", res.Status)
		}
		return nil
	})
	return n
}

// url is an address on the debug listener, which serves the dashboard.
func (n *node) url(path string) string {
	return fmt.Sprintf("http://127.0.0.1:%d%s", n.debug, path)
}

// writePod places a static pod that sleeps, named name.
func (n *node) writePod(name string) {
	n.t.Helper()
	agent.WriteManifest(n.t, n.manifests, name+".yaml", fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: c
    image: %s
    command: ["sleep", "3600"]
`, name, n.env.BusyboxImage))
}

// running waits until /pods shows the static pod name running.
func (n *node) running(name string, within time.Duration) {
	n.t.Helper()
	agent.Eventually(n.t, "pod "+name+" running", within, func() error {
		p, err := agent.StaticPod(n.readOnly, name, n.name)
		if err != nil {
			return err
		}
		return agent.PodRunning(p)
	})
}

// injectPanic makes the actor at path panic once.
func (n *node) injectPanic(path string) {
	n.t.Helper()
	res, err := http.Post(n.url("/debug/inject/panic?actor="+path), "text/plain", nil)
	if err != nil {
		n.t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusAccepted {
		n.t.Fatalf("inject a panic into %s: %s", path, res.Status)
	}
}

// removePods removes this node's pods from the runtime, once actorlet is
// stopped (agent.Start's cleanup runs before this one).
func (n *node) removePods() {
	rt, _ := n.env.CRI(n.t)
	agent.RemoveSandboxes(n.t, rt, agent.OfNode(n.name))
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
