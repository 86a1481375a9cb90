package standalone

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// node is one actorlet in standalone mode on the environment's containerd,
// with its own manifest directory, root directory and node name.
type node struct {
	t         testing.TB
	env       *env.Env
	name      string
	manifests string
	rootDir   string
	config    string
	readOnly  int
	port      int // the kubelet API (10250)
	healthz   int
	debug     int // --debug-address: the dashboard and fault injection in plain HTTP
	rt        runtimeapi.RuntimeServiceClient

	proc *agent.Process
	// past is the log of earlier runs of this node's actorlet.
	past string
}

func newNode(t testing.TB) *node {
	t.Helper()
	e := env.Require(t)
	rt, _ := e.CRI(t)
	dir := t.TempDir()
	n := &node{
		t: t, env: e, rt: rt,
		name:      "sa-" + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())),
		manifests: filepath.Join(dir, "manifests"),
		rootDir:   filepath.Join(dir, "root"),
		config:    filepath.Join(dir, "config.yaml"),
		readOnly:  agent.FreePort(t),
		port:      agent.FreePort(t),
		healthz:   agent.FreePort(t),
		debug:     agent.FreePort(t),
	}
	if len(n.name) > 40 {
		n.name = n.name[:40]
	}
	n.name = strings.TrimRight(n.name, "-")
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	// A short crash-loop cap and file check keep the tests quick; the
	// behaviours are the same as with upstream's defaults.
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 2s
readOnlyPort: %d
healthzPort: %d
port: %d
crashLoopBackOff:
  maxContainerRestartPeriod: 2s
# Standalone: no API server to review tokens or access; as with upstream,
# the kubelet API is then open to anyone who reaches it.
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`, n.manifests, n.readOnly, n.healthz, n.port)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(n.cleanup)
	return n
}

// start runs actorlet and waits until its read-only port answers.
func (n *node) start() {
	n.t.Helper()
	n.past += n.proc.Logs()
	n.proc = agent.Start(n.t, binary, "--config", n.config, "--container-runtime-endpoint", n.env.RuntimeEndpoint,
		"--hostname-override", n.name, "--root-dir", n.rootDir, "--cert-dir", filepath.Join(n.rootDir, "pki"), "--address", "127.0.0.1", "--debug-fault-injection", "--debug-address", fmt.Sprintf("127.0.0.1:%d", n.debug), "-v", "1")
	n.eventually("actorlet serves /pods", 30*time.Second, func() error { _, err := n.pods(); return err })
}

// stop ends actorlet with sig and waits for it to exit.
func (n *node) stop(sig syscall.Signal) { n.proc.Stop(sig) }

func (n *node) logs() string { return n.past + n.proc.Logs() }

// cleanup stops actorlet and removes every pod of this node from the runtime.
func (n *node) cleanup() {
	n.stop(syscall.SIGKILL)
	if n.t.Failed() {
		n.t.Logf("actorlet log:\n%s", n.logs())
	}
	agent.RemoveSandboxes(n.t, n.rt, agent.OfNode(n.name))
}

func (n *node) pods() ([]v1.Pod, error) { return agent.ReadOnlyPods(n.readOnly) }

// pod returns the static pod named name (without the node suffix).
func (n *node) pod(name string) (*v1.Pod, error) { return agent.StaticPod(n.readOnly, name, n.name) }

// eventually polls check until it returns nil, failing the test after within.
func (n *node) eventually(what string, within time.Duration, check func() error) {
	n.t.Helper()
	agent.Eventually(n.t, what, within, check)
}

// running waits for the pod's phase to be Running with every container
// running, and returns the pod.
func (n *node) running(name string, within time.Duration) *v1.Pod {
	n.t.Helper()
	var pod *v1.Pod
	n.eventually("pod "+name+" running", within, func() error {
		p, err := n.pod(name)
		if err != nil {
			return err
		}
		if err := agent.PodRunning(p); err != nil {
			return err
		}
		pod = p
		return nil
	})
	return pod
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

func (n *node) writeManifest(file, content string) {
	n.t.Helper()
	agent.WriteManifest(n.t, n.manifests, file, content)
}

func (n *node) removeManifest(file string) {
	n.t.Helper()
	agent.RemoveManifest(n.t, n.manifests, file)
}

func (n *node) runtimeObjects(uid string) (sandboxes, containers int) {
	n.t.Helper()
	return agent.RuntimeObjects(n.t, n.rt, uid)
}

// debugActor is what the tests read of one actor in /debug/actors.json.
type debugActor struct {
	Path, Kind, State, LastFailure string
	Restarts                       int
	MailboxDepth                   int64
}

// actors reads the registry's live actors through the debug listener.
func (n *node) actors() ([]debugActor, error) {
	res, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/actors.json", n.debug))
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

// injectPanic makes the actor at path panic once through the debug
// listener's fault injection: in its handler, or with in "sync-work" in a
// pod-worker's next sync work.
func (n *node) injectPanic(path, in string) {
	n.t.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/debug/inject/panic?actor=%s", n.debug, path)
	if in != "" {
		url += "&in=" + in
	}
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		n.t.Fatalf("inject a panic into %s (in=%q): %s", path, in, resp.Status)
	}
}
