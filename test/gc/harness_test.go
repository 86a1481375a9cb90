// Package gc holds the end-to-end tests of garbage collection (issue #7):
// actorlet runs standalone on the environment's containerd, with static pods,
// and the tests watch what its gc actor leaves in the runtime and on disk.
package gc

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
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

	"github.com/actorlet/actorlet/podruntime"
	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// node is one actorlet in standalone mode on the environment's containerd,
// with its own manifest directory, root directory, configuration and node
// name. It logs JSON, which the tests read to follow the gc actor's passes.
type node struct {
	t         testing.TB
	env       *env.Env
	name      string
	manifests string
	rootDir   string
	config    string
	readOnly  int
	healthz   int
	debug     int // --debug-address: the dashboard and fault injection in plain HTTP
	port      int // the kubelet API (TLS, self-signed, anonymous allowed)
	rt        runtimeapi.RuntimeServiceClient
	img       runtimeapi.ImageServiceClient

	proc *agent.Process
	// past is the log of earlier runs of this node's actorlet.
	past string
}

// newNode prepares a node whose configuration is the harness's plus extra
// (KubeletConfiguration YAML lines).
func newNode(t testing.TB, extra string) *node {
	t.Helper()
	e := env.Require(t)
	rt, img := e.CRI(t)
	dir := t.TempDir()
	n := &node{
		t: t, env: e, rt: rt, img: img,
		name:      "gc-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test")) + "-" + randomSuffix(),
		manifests: filepath.Join(dir, "manifests"),
		rootDir:   filepath.Join(dir, "root"),
		config:    filepath.Join(dir, "config.yaml"),
		readOnly:  agent.FreePort(t),
		healthz:   agent.FreePort(t),
		debug:     agent.FreePort(t),
		port:      agent.FreePort(t),
	}
	if len(n.name) > 40 {
		n.name = strings.TrimRight(n.name[:40], "-")
	}
	if err := os.MkdirAll(n.manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	n.configure(extra)
	t.Cleanup(n.cleanup)
	return n
}

// configure writes the node's configuration: a short crash-loop cap keeps
// the tests quick; the behaviours are upstream's. Standalone, there is no
// API server to review tokens: the kubelet API lets anyone in, as
// upstream's without --config.
func (n *node) configure(extra string) {
	n.t.Helper()
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
staticPodPath: %s
fileCheckFrequency: 2s
readOnlyPort: %d
healthzPort: %d
port: %d
authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
logging:
  format: json
crashLoopBackOff:
  maxContainerRestartPeriod: 2s
%s`, n.manifests, n.readOnly, n.healthz, n.port, extra)
	if err := os.WriteFile(n.config, []byte(cfg), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
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

// cleanup stops actorlet and removes every pod of this node from the
// runtime, with their log directories.
func (n *node) cleanup() {
	n.stop(syscall.SIGKILL)
	if n.t.Failed() {
		n.t.Logf("actorlet log:\n%s", n.logs())
	}
	agent.RemoveSandboxes(n.t, n.rt, agent.OfNode(n.name))
	dirs, _ := filepath.Glob(filepath.Join("/var/log/pods", "*_*-"+n.name+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
}

func (n *node) busybox() string { return n.env.BusyboxImage }

func (n *node) pods() ([]v1.Pod, error) { return agent.ReadOnlyPods(n.readOnly) }

// pod returns the static pod named name (without the node suffix).
func (n *node) pod(name string) (*v1.Pod, error) { return agent.StaticPod(n.readOnly, name, n.name) }

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

func isRunning(p *v1.Pod) error { return agent.PodRunning(p) }

// manifest renders a static pod manifest.
func manifest(name, spec string) string { return agent.Manifest(name, spec) }

func (n *node) writeManifest(file, content string) {
	n.t.Helper()
	agent.WriteManifest(n.t, n.manifests, file, content)
}

func (n *node) removeManifest(file string) {
	n.t.Helper()
	agent.RemoveManifest(n.t, n.manifests, file)
}

// containers lists the runtime's containers of a pod UID.
func (n *node) containers(uid string) []*runtimeapi.Container {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := n.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{podruntime.LabelPodUID: uid}}})
	if err != nil {
		n.t.Fatal(err)
	}
	return r.Containers
}

// sandboxes lists the runtime's sandboxes of a pod UID.
func (n *node) sandboxes(uid string) []*runtimeapi.PodSandbox {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := n.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{podruntime.LabelPodUID: uid}}})
	if err != nil {
		n.t.Fatal(err)
	}
	return r.Items
}

// podLogDir is the pod's directory under /var/log/pods.
func podLogDir(p *v1.Pod) string {
	return podruntime.PodLogsDir("/var/log/pods", p.Namespace, p.Name, p.UID)
}

// logEntry is one line of actorlet's JSON log.
type logEntry map[string]any

func (e logEntry) str(k string) string { s, _ := e[k].(string); return s }

func (e logEntry) num(k string) int { f, _ := e[k].(float64); return int(f) }

// entries returns the log lines of this run of actorlet whose message is msg.
func (n *node) entries(msg string) []logEntry {
	return n.entriesWith("message", msg)
}

// entriesWith returns the log lines of this run of actorlet whose field key
// is the string value.
func (n *node) entriesWith(key, value string) []logEntry {
	var out []logEntry
	sc := bufio.NewScanner(strings.NewReader(n.proc.Logs()))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		var e logEntry
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.str(key) == value {
			out = append(out, e)
		}
	}
	return out
}

// completePasses are this run's container GC passes that had every pod
// source's pods: the ones that may remove what no source wants.
func (n *node) completePasses() []logEntry {
	var out []logEntry
	for _, e := range n.entries("container gc done") {
		if ready, _ := e["sourcesReady"].(bool); ready {
			out = append(out, e)
		}
	}
	return out
}

// runContainerGC makes the gc actor run a container pass now and waits for
// it. GC runs when the gc actor starts, as upstream's at the kubelet's
// start; its period (a minute, fixed upstream) is too long for a test, so
// the test restarts the gc actor alone, through fault injection: which also
// shows that a failing gc actor restarts without touching the pods.
func (n *node) runContainerGC() {
	n.t.Helper()
	before := len(n.completePasses())
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/debug/inject/panic?actor=bootstrap/gc", n.debug), "text/plain", nil)
	if err != nil {
		n.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		n.t.Fatalf("inject panic into gc: %s", resp.Status)
	}
	var pass logEntry
	n.eventually("a container GC pass after the gc actor's restart", 3*10*time.Second, func() error {
		passes := n.completePasses()
		if len(passes) <= before {
			return fmt.Errorf("%d complete container passes, want more than %d", len(passes), before)
		}
		pass = passes[len(passes)-1]
		return nil
	})
	n.t.Logf("container GC pass: %d containers, %d sandboxes, %d pod log directories removed",
		pass.num("containersRemoved"), pass.num("sandboxesRemoved"), pass.num("logDirsRemoved"))
}
