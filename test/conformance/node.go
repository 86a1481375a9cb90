package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/env"
)

// KubeletPort is the kubelet API's port on the node's address: the API
// server reaches logs, exec, attach and port-forward there.
const KubeletPort = 10250

// node is the node agent under test, run as the environment's only node.
type node struct {
	e       *env.Env
	admin   kubernetes.Interface
	name    string // the agent's kind, for messages: actorlet, upstream, or the binary's base name
	binary  string
	dir     string // config, certificates, and the root dir unless rootDir
	rootDir string // the agent's --root-dir (DRARootDir for the DRA specs)
	logPath string
	cmd     *exec.Cmd
	done    chan error
	log     *os.File
}

// config is the KubeletConfiguration both agents get. The node's address
// is the host's on the pod network: kube-apiserver proxies to the node's
// InternalIP and refuses loopback. Authentication and authorization are a
// real cluster's: client certificates of the cluster CA (kube-apiserver's
// kubelet client certificate among them) and bearer tokens through
// TokenReview, each request authorized by a SubjectAccessReview.
// cgroupfs and failCgroupV1: false are what this cgroup v1 machine
// without systemd needs.
func (n *node) config() string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
containerRuntimeEndpoint: %s
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
`, n.e.BridgeIP, KubeletPort, n.e.RuntimeEndpoint, n.e.CAFile)
}

// start takes the runtime lock, removes what earlier runs or tests left
// (the Node object, every pod sandbox in the runtime) and starts the agent.
func (n *node) start(ctx context.Context) error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	// The Node and the pods belong to whoever holds the runtime lock: take
	// it before touching either.
	if err := env.AcquireRuntimeLock(); err != nil {
		return err
	}
	if err := n.forget(ctx); err != nil {
		env.ReleaseRuntimeLock()
		return err
	}
	if err := removePods(n.e); err != nil {
		env.ReleaseRuntimeLock()
		return err
	}
	cfg := filepath.Join(n.dir, "config.yaml")
	if err := os.WriteFile(cfg, []byte(n.config()), 0o644); err != nil {
		env.ReleaseRuntimeLock()
		return err
	}
	log, err := os.Create(n.logPath)
	if err != nil {
		env.ReleaseRuntimeLock()
		return err
	}
	n.log = log
	n.cmd = exec.Command(n.binary, "--config", cfg, "--kubeconfig", n.e.NodeKubeconfig,
		"--hostname-override", n.e.NodeName, "--node-ip", n.e.BridgeIP,
		"--root-dir", n.rootDir, "--cert-dir", filepath.Join(n.dir, "pki"), "--v", "2")
	n.cmd.Stdout, n.cmd.Stderr = log, log
	n.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := n.cmd.Start(); err != nil {
		log.Close()
		env.ReleaseRuntimeLock()
		return fmt.Errorf("start %s: %w", n.binary, err)
	}
	n.done = make(chan error, 1)
	go func() { n.done <- n.cmd.Wait() }()
	return nil
}

// waitReady waits until the Node is Ready and carries no taint, as the e2e
// suite wants its nodes before it starts.
func (n *node) waitReady(ctx context.Context, within time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	var last string
	for {
		select {
		case err := <-n.done:
			n.done <- err
			return fmt.Errorf("%s exited before its node was Ready: %v (log: %s)", n.name, err, n.logPath)
		case <-ctx.Done():
			return fmt.Errorf("node %s not Ready and untainted within %v: %s (log: %s)", n.e.NodeName, within, last, n.logPath)
		case <-time.After(time.Second):
		}
		nd, err := n.admin.CoreV1().Nodes().Get(ctx, n.e.NodeName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		ready := false
		for _, c := range nd.Status.Conditions {
			if c.Type == v1.NodeReady {
				ready = c.Status == v1.ConditionTrue
				last = fmt.Sprintf("Ready=%s (%s)", c.Status, c.Message)
			}
		}
		if ready && len(nd.Spec.Taints) == 0 && !nd.Spec.Unschedulable {
			return nil
		}
		if ready {
			last = fmt.Sprintf("Ready, taints %v, unschedulable %v", nd.Spec.Taints, nd.Spec.Unschedulable)
		}
	}
}

// stop ends the agent (SIGTERM, then SIGKILL after a grace period), removes
// its pods from the runtime and the Node from the cluster (the pod garbage
// collector then deletes the pods bound to it), and releases the runtime
// lock.
func (n *node) stop(ctx context.Context) error {
	if n.cmd == nil {
		return nil
	}
	defer env.ReleaseRuntimeLock()
	defer n.log.Close()
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
		<-n.done
	}
	n.cmd = nil
	err := removePods(n.e)
	if ferr := n.forget(ctx); err == nil {
		err = ferr
	}
	return err
}

// forget deletes the Node object, so that each run starts from a node that
// registers anew, without what an earlier agent or test left on it.
func (n *node) forget(ctx context.Context) error {
	err := n.admin.CoreV1().Nodes().Delete(ctx, n.e.NodeName, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", n.e.NodeName, err)
	}
	return nil
}

// removePods removes every pod sandbox (and its containers) from the
// environment's runtime.
func removePods(e *env.Env) error {
	out, err := exec.Command(filepath.Join(e.StateDir, "bin", "tools", "envcri"),
		"-endpoint", e.RuntimeEndpoint, "-timeout", "120s", "rmpods").CombinedOutput()
	if err != nil {
		return fmt.Errorf("remove pods from the runtime: %v: %s", err, out)
	}
	return nil
}
