// Package gc holds the end-to-end tests of garbage collection (issue #7):
// actorlet runs standalone on the environment's containerd, with static pods,
// and the tests watch what its gc actor leaves in the runtime and on disk.
package gc

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/internal/podruntime"
	"github.com/actorlet/actorlet/internal/podruntime/logs"
	"github.com/actorlet/actorlet/test/agent"
)

// binary is actorlet, built once for the package.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

// node is one actorlet in standalone mode on the environment's containerd
// (agent.Node). It logs JSON, which the tests read to follow the gc
// actor's passes.
type node struct{ *agent.Node }

// jsonLogs is the configuration that makes actorlet log JSON.
const jsonLogs = "logging:\n  format: json\n"

// newNode prepares a node whose configuration is the harness's plus extra
// (KubeletConfiguration YAML lines).
func newNode(t testing.TB, extra string) *node {
	t.Helper()
	return &node{agent.NewNode(t, binary, agent.NamePrefix("gc-"), agent.WithConfig(jsonLogs+extra))}
}

// configure rewrites the node's configuration as the harness's plus extra,
// for the next start.
func (n *node) configure(extra string) { n.Configure(jsonLogs + extra) }

func (n *node) busybox() string { return n.Env.BusyboxImage }

// randomSuffix makes names of the test's own, such as image tags.
func randomSuffix() string {
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func isRunning(p *v1.Pod) error { return agent.PodRunning(p) }

// manifest renders a static pod manifest.
func manifest(name, spec string) string { return agent.Manifest(name, spec) }

// containers lists the runtime's containers of a pod UID.
func (n *node) containers(uid string) []*runtimeapi.Container {
	n.T.Helper()
	return agent.Containers(n.T, n.RT, map[string]string{podruntime.LabelPodUID: uid})
}

// sandboxes lists the runtime's sandboxes of a pod UID.
func (n *node) sandboxes(uid string) []*runtimeapi.PodSandbox {
	n.T.Helper()
	return agent.Sandboxes(n.T, n.RT, map[string]string{podruntime.LabelPodUID: uid})
}

// podLogDir is the pod's directory under /var/log/pods.
func podLogDir(p *v1.Pod) string {
	return logs.PodLogsDir("/var/log/pods", p.Namespace, p.Name, p.UID)
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
	sc := bufio.NewScanner(strings.NewReader(n.Proc.Logs()))
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
	n.T.Helper()
	before := len(n.completePasses())
	n.InjectPanic("bootstrap/gc", "")
	var pass logEntry
	n.Eventually("a container GC pass after the gc actor's restart", 3*10*time.Second, func() error {
		passes := n.completePasses()
		if len(passes) <= before {
			return fmt.Errorf("%d complete container passes, want more than %d", len(passes), before)
		}
		pass = passes[len(passes)-1]
		return nil
	})
	n.T.Logf("container GC pass: %d containers, %d sandboxes, %d pod log directories removed",
		pass.num("containersRemoved"), pass.num("sandboxesRemoved"), pass.num("logDirsRemoved"))
}
