package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/env"
)

// node is one actorlet process running as the environment's node, with the
// node's credentials, a root directory of its own and free loopback ports.
type node struct {
	cmd      *exec.Cmd
	dir      string
	log      *os.File
	logPath  string
	healthz  int
	readOnly int // 0: the read-only port is off
	exited   chan struct{}
	exitErr  error
	started  time.Time
}

// nodeStopGrace is how long actorlet gets to stop after SIGTERM: its own
// shutdown deadline (10 s) and some slack.
const nodeStopGrace = 20 * time.Second

// agentOptions change how the measured actorlet runs.
type agentOptions struct {
	extraConfig string // appended to its KubeletConfiguration
	verbosity   int    // its -v
}

// startNode runs binary as e's node. Its log goes to logPath. readOnly turns
// on the read-only port, whose /metrics the churn benchmark reads.
func startNode(binary string, o agentOptions, e *env.Env, logPath string, readOnly bool) (*node, error) {
	dir, err := os.MkdirTemp("", "actorlet-bench-node-")
	if err != nil {
		return nil, err
	}
	n := &node{dir: dir, logPath: logPath, exited: make(chan struct{})}
	fail := func(err error) (*node, error) {
		os.RemoveAll(dir)
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return fail(err)
	}
	var port int
	n.healthz, port = ports[0], ports[1]
	if readOnly {
		n.readOnly = ports[2]
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
healthzPort: %d
port: %d
readOnlyPort: %d
authentication:
  x509:
    clientCAFile: %s
%s
`, n.healthz, port, n.readOnly, e.CAFile, o.extraConfig)
	config := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(config, []byte(cfg), 0o644); err != nil {
		return fail(err)
	}
	root := filepath.Join(dir, "root")
	if n.log, err = os.Create(logPath); err != nil {
		return fail(err)
	}
	n.cmd = exec.Command(binary, "--config", config, "--kubeconfig", e.NodeKubeconfig,
		"--container-runtime-endpoint", e.RuntimeEndpoint, "--hostname-override", e.NodeName,
		"--node-ip", "127.0.0.1", "--address", "127.0.0.1",
		"--root-dir", root, "--cert-dir", filepath.Join(root, "pki"), "-v", strconv.Itoa(o.verbosity))
	n.cmd.Stdout, n.cmd.Stderr = n.log, n.log
	// Its own process group: a Ctrl-C on the terminal reaches this program,
	// which stops actorlet itself after cleaning up, and not actorlet first.
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	n.started = time.Now()
	if err := n.cmd.Start(); err != nil {
		n.log.Close()
		return fail(fmt.Errorf("start %s: %w", binary, err))
	}
	go func() {
		n.exitErr = n.cmd.Wait()
		close(n.exited)
	}()
	return n, nil
}

func (n *node) pid() int { return n.cmd.Process.Pid }

func (n *node) alive() bool {
	select {
	case <-n.exited:
		return false
	default:
		return true
	}
}

// waitReady waits until actorlet's /healthz answers ok, it has renewed the
// node's lease, and the Node's Ready condition is True with a heartbeat
// from this process: the Node and its lease outlive the actorlets of
// earlier runs, and so do their Ready condition and renewals.
func (n *node) waitReady(ctx context.Context, admin kubernetes.Interface, name string, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	healthz := fmt.Sprintf("http://127.0.0.1:%d/healthz", n.healthz)
	var last error
	for {
		if !n.alive() {
			return fmt.Errorf("actorlet exited before its node was Ready (%v); log %s:\n%s", n.exitErr, n.logPath, n.logTail(30))
		}
		last = nodeReady(ctx, admin, name, healthz, n.started)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("node %s not Ready within %v: %v; log %s:\n%s", name, within, last, n.logPath, n.logTail(30))
			}
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func nodeReady(ctx context.Context, admin kubernetes.Interface, name, healthz string, since time.Time) error {
	if err := httpOK(ctx, healthz); err != nil {
		return err
	}
	// The lease's renewTime has microseconds; heartbeats only seconds.
	lease, err := admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if rt := lease.Spec.RenewTime; rt == nil || rt.Time.Before(since) {
		return errors.New("lease not renewed yet by this actorlet")
	}
	since = since.Truncate(time.Second)
	node, err := admin.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, c := range node.Status.Conditions {
		if c.Type != v1.NodeReady {
			continue
		}
		if c.Status != v1.ConditionTrue {
			return fmt.Errorf("node Ready=%s: %s", c.Status, c.Message)
		}
		if c.LastHeartbeatTime.Time.Before(since) {
			return fmt.Errorf("node Ready=True, but from an earlier actorlet (heartbeat %v)", c.LastHeartbeatTime.Time)
		}
		return nil
	}
	return errors.New("no Ready condition")
}

func httpOK(ctx context.Context, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// stop ends actorlet with SIGTERM (SIGKILL after nodeStopGrace) and removes
// its directory. Containers it runs keep running, as with any kubelet.
func (n *node) stop() error {
	defer os.RemoveAll(n.dir)
	defer n.log.Close()
	if !n.alive() {
		return nil
	}
	_ = n.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-n.exited:
		return nil
	case <-time.After(nodeStopGrace):
		_ = n.cmd.Process.Kill()
		<-n.exited
		return fmt.Errorf("actorlet (pid %d) did not stop within %v of SIGTERM; killed", n.pid(), nodeStopGrace)
	}
}

// logTail is the end of actorlet's log, for error messages.
func (n *node) logTail(lines int) string {
	raw, err := os.ReadFile(n.logPath)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// freePorts returns count distinct loopback ports free at the time of the
// call; they are held together so that none is returned twice.
func freePorts(count int) ([]int, error) {
	var ports []int
	for range count {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free loopback port: %w", err)
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
