package agent

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/actorlet/actorlet/test/env"
)

// Node is one actorlet of a test on the environment's containerd, with its
// own static pod directory, root directory, configuration and ports. In
// standalone mode (the default) it has a node name of its own, lets anyone
// into its kubelet API, as a standalone kubelet does, and serves the debug
// listener with fault injection; joined to the environment's API server
// (InCluster) it is the environment's node, with the node's credentials.
//
// A node holds the runtime lock (env.AcquireRuntimeLock) from NewNode
// until its pods are removed, across restarts: another test binary's
// actorlet would meanwhile take its pods for orphans. The test's cleanup
// stops it and removes its pods from the runtime, and logs what it logged
// when the test failed.
type Node struct {
	T   testing.TB
	Env *env.Env
	// Name is the node name (--hostname-override); static pods are named
	// NAME-Name.
	Name      string
	Manifests string // staticPodPath
	RootDir   string
	Config    string // the KubeletConfiguration file
	ReadOnly  int    // readOnlyPort
	Healthz   int    // healthzPort
	Port      int    // the kubelet API (10250 upstream)
	Debug     int    // --debug-address in standalone mode: the dashboard and fault injection in plain HTTP
	NodeIP    string // --node-ip and --address: where the kubelet API listens
	// RuntimeEndpoint is --container-runtime-endpoint, the environment's
	// containerd unless a test puts a proxy (test/faults/criproxy) between;
	// a change takes effect at the next Start or Launch. RT and Img stay
	// the environment's.
	RuntimeEndpoint string
	RT              runtimeapi.RuntimeServiceClient
	Img             runtimeapi.ImageServiceClient
	// Proc is the running actorlet, since the last Start.
	Proc *Process
	// Owns selects the runtime's sandboxes that the cleanup removes: the
	// node's static pods unless the test package says more.
	Owns func(*runtimeapi.PodSandbox) bool

	// Kubeconfig is --kubeconfig when joined to the API server: the
	// environment's node's, or with Bootstrap a file in the node's
	// directory that the TLS bootstrap writes.
	Kubeconfig string
	// BootstrapKubeconfig is --bootstrap-kubeconfig (Bootstrap).
	BootstrapKubeconfig string
	CertDir             string // --cert-dir
	// Args are more command-line flags (WithArgs), after the harness's;
	// a change takes effect at the next Start or Launch.
	Args []string

	binary   string
	cluster  bool
	past     string // the log of earlier runs
	cleanups []func()
	locked   bool // holds the runtime lock
	// fixedRoot: RootDir is WithRootDir's; the cleanup removes it but
	// for rootBefore, its entries before the test (nil: it did not exist).
	fixedRoot  bool
	rootBefore map[string]bool
}

// NodeOption changes the node NewNode prepares.
type NodeOption func(*nodeOptions)

type nodeOptions struct {
	cluster      bool
	onPodNetwork bool
	prefix       string
	extra        string
	bootstrap    string
	args         []string
	rootDir      string
}

// InCluster joins the node to the environment's API server as the
// environment's node (e.NodeName), with the node's kubeconfig; its kubelet
// API authenticates clients with certificates of the environment's CA and
// asks the API server for authorization. There is one such node identity:
// its tests run one at a time.
func InCluster() NodeOption { return func(o *nodeOptions) { o.cluster = true } }

// OnPodNetwork makes the node's address (and its kubelet API's) the host's
// address on the pod network instead of loopback: kube-apiserver's
// nodes/proxy refuses to proxy to loopback.
func OnPodNetwork() NodeOption { return func(o *nodeOptions) { o.onPodNetwork = true } }

// Bootstrap joins the node to the environment's API server as kubeadm's
// kubelet joins, through the TLS bootstrap: a node name of its own (not
// the environment's node), --bootstrap-kubeconfig bootstrapKubeconfig,
// --kubeconfig a file in the node's directory that does not exist yet, and
// --cert-dir in its root directory. Its kubelet API authenticates clients
// as InCluster's. The cleanup deletes its Node object and the CSRs made
// for its name (CN system:node:NAME).
func Bootstrap(bootstrapKubeconfig string) NodeOption {
	return func(o *nodeOptions) { o.cluster, o.bootstrap = true, bootstrapKubeconfig }
}

// NamePrefix starts a standalone node's name, which goes on with the
// test's name and a random suffix.
func NamePrefix(prefix string) NodeOption { return func(o *nodeOptions) { o.prefix = prefix } }

// WithConfig appends lines to the KubeletConfiguration, e.g.
// "nodeStatusUpdateFrequency: 2s\n".
func WithConfig(yaml string) NodeOption { return func(o *nodeOptions) { o.extra += yaml } }

// WithArgs adds command-line flags to the node's, e.g. "--node-labels",
// "a=b".
func WithArgs(args ...string) NodeOption {
	return func(o *nodeOptions) { o.args = append(o.args, args...) }
}

// WithRootDir makes dir the node's --root-dir instead of a directory of
// the test's, for what only works under a fixed path: the e2e suite's
// sample device plugin registers on /var/lib/kubelet/device-plugins. The
// cleanup removes what the node added to dir (dir too, if it made it):
// what was there (a kubelet's pki/, written where upstream's --cert-dir
// defaults) is not the test's to remove.
func WithRootDir(dir string) NodeOption { return func(o *nodeOptions) { o.rootDir = dir } }

// NewNode prepares a node that runs binary, and writes its configuration;
// Start runs it.
func NewNode(t testing.TB, binary string, opts ...NodeOption) *Node {
	t.Helper()
	o := nodeOptions{prefix: "node-"}
	for _, opt := range opts {
		opt(&o)
	}
	var e *env.Env
	if o.cluster {
		e = env.Require(t, env.WithAPIServer())
	} else {
		e = env.Require(t)
	}
	rt, img := e.CRI(t)
	dir := t.TempDir()
	n := &Node{
		T: t, Env: e, RT: rt, Img: img, binary: binary, cluster: o.cluster,
		Manifests: filepath.Join(dir, "manifests"),
		RootDir:   filepath.Join(dir, "root"),
		Config:    filepath.Join(dir, "config.yaml"),
		ReadOnly:  FreePort(t),
		Healthz:   FreePort(t),
		Port:      FreePort(t),
		NodeIP:    "127.0.0.1",
		Args:      o.args,

		RuntimeEndpoint: e.RuntimeEndpoint,
	}
	if o.rootDir != "" {
		n.RootDir = o.rootDir
	}
	n.CertDir = filepath.Join(n.RootDir, "pki")
	switch {
	case o.bootstrap != "":
		n.Name = nodeName(o.prefix, t.Name())
		n.BootstrapKubeconfig = o.bootstrap
		n.Kubeconfig = filepath.Join(dir, "kubelet.kubeconfig")
	case o.cluster:
		n.Name = e.NodeName
		n.Kubeconfig = e.NodeKubeconfig
	default:
		n.Name = nodeName(o.prefix, t.Name())
		n.Debug = FreePort(t)
	}
	if o.onPodNetwork {
		n.NodeIP = e.BridgeIP
	}
	n.Owns = OfNode(n.Name)
	waiting := time.Now()
	if err := env.AcquireRuntimeLock(); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(waiting); waited > time.Second {
		t.Logf("waited %v for the runtime lock", waited.Round(time.Millisecond))
	}
	n.locked = true
	t.Cleanup(n.Cleanup)
	if o.rootDir != "" {
		n.fixedRoot = true
		n.rootBefore = entries(t, o.rootDir)
	}
	if o.bootstrap != "" {
		admin := e.AdminClient(t)
		n.AtCleanup(func() { deleteNodeObjects(admin, n.Name) })
	}
	if err := os.MkdirAll(n.Manifests, 0o755); err != nil {
		t.Fatal(err)
	}
	n.Configure(o.extra)
	return n
}

// nodeName is prefix, the test's name as a DNS label and a random suffix,
// so that runs of the same test in several test binaries do not share
// pods, within the 40 characters that leave room for pod names.
func nodeName(prefix, test string) string {
	base := prefix + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(strings.TrimPrefix(test, "Test")))
	if len(base) > 33 {
		base = base[:33]
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return strings.TrimRight(base, "-") + "-" + hex.EncodeToString(b)
}

// Configure writes the node's configuration, the harness's plus extra
// (KubeletConfiguration YAML lines); it takes effect at the next Start. A
// short file check and crash-loop cap keep the tests quick; the behaviours
// are upstream's.
func (n *Node) Configure(extra string) {
	n.T.Helper()
	// Standalone there is no API server to review tokens or access: as
	// with upstream, the kubelet API is then open to anyone who reaches it.
	auth := `authentication:
  anonymous:
    enabled: true
  webhook:
    enabled: false
authorization:
  mode: AlwaysAllow
`
	if n.cluster {
		auth = fmt.Sprintf("authentication:\n  x509:\n    clientCAFile: %s\n", n.Env.CAFile)
	}
	cfg := fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
staticPodPath: %s
fileCheckFrequency: 2s
readOnlyPort: %d
healthzPort: %d
port: %d
%scrashLoopBackOff:
  maxContainerRestartPeriod: 2s
%s`, n.Manifests, n.ReadOnly, n.Healthz, n.Port, auth, extra)
	if err := os.WriteFile(n.Config, []byte(cfg), 0o644); err != nil {
		n.T.Fatal(err)
	}
}

// Start runs actorlet and waits until it serves: standalone, until its
// read-only port answers /pods; joined to the API server, until its healthz
// port listens.
func (n *Node) Start() {
	n.T.Helper()
	n.Launch()
	serves, check := "its read-only port answers /pods", func() error { _, err := n.Pods(); return err }
	if n.cluster {
		serves, check = "its healthz port listens", func() error {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", n.Healthz), time.Second)
			if err != nil {
				return err
			}
			return c.Close()
		}
	}
	n.Eventually("actorlet started: "+serves, 30*time.Second, func() error {
		if !n.Proc.Alive() {
			n.T.Fatalf("actorlet exited at its start:\n%s", env.Tail(n.Proc.Logs(), 40))
		}
		return check()
	})
}

// Launch runs actorlet and does not wait for anything, for a test of a
// start-up that fails.
func (n *Node) Launch() {
	n.T.Helper()
	n.past += n.Proc.Logs()
	args := []string{"--config", n.Config, "--container-runtime-endpoint", n.RuntimeEndpoint,
		"--hostname-override", n.Name, "--root-dir", n.RootDir, "--cert-dir", n.CertDir, "--address", n.NodeIP}
	if n.cluster {
		args = append(args, "--kubeconfig", n.Kubeconfig, "--node-ip", n.NodeIP, "-v", "2")
		if n.BootstrapKubeconfig != "" {
			args = append(args, "--bootstrap-kubeconfig", n.BootstrapKubeconfig)
		}
	} else {
		args = append(args, "--debug-fault-injection", "--debug-address", fmt.Sprintf("127.0.0.1:%d", n.Debug), "-v", "1")
	}
	n.Proc = Start(n.T, n.binary, append(args, n.Args...)...)
}

// Stop ends actorlet with sig and waits for it to exit.
func (n *Node) Stop(sig syscall.Signal) { n.Proc.Stop(sig) }

// Logs is what the node's actorlet logged, over all its runs.
func (n *Node) Logs() string { return n.past + n.Proc.Logs() }

// AtCleanup adds f to what Cleanup does once actorlet is stopped and
// before the node's pods are removed from the runtime.
func (n *Node) AtCleanup(f func()) { n.cleanups = append(n.cleanups, f) }

// Cleanup stops actorlet, runs the AtCleanup functions, removes every
// sandbox the node owns from the runtime, with the pods' log directories
// and the /var/log/containers links left dangling, and then releases the
// runtime lock. NewNode registers it with the test;
// a benchmark that makes several nodes may call it sooner.
func (n *Node) Cleanup() {
	defer func() {
		if n.locked {
			n.locked = false
			env.ReleaseRuntimeLock()
		}
	}()
	n.Stop(syscall.SIGKILL)
	if n.T.Failed() {
		n.T.Logf("actorlet log:\n%s", n.Logs())
	}
	for _, f := range n.cleanups {
		f()
	}
	n.cleanups = nil
	RemoveSandboxes(n.T, n.RT, n.Owns)
	dirs, _ := filepath.Glob(filepath.Join("/var/log/pods", "*_*-"+n.Name+"_*"))
	for _, d := range dirs {
		_ = os.RemoveAll(d)
	}
	// actorlet removes a container's link with it; those of containers
	// removed here would wait for the next node's container GC.
	links, _ := filepath.Glob("/var/log/containers/*.log")
	for _, l := range links {
		if _, err := os.Stat(l); os.IsNotExist(err) {
			_ = os.Remove(l)
		}
	}
	if n.fixedRoot {
		n.removeRootDir()
	}
}

// entries are the names in dir, nil if it does not exist.
func entries(t testing.TB, dir string) map[string]bool {
	t.Helper()
	list, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, e := range list {
		names[e.Name()] = true
	}
	return names
}

// removeRootDir removes what the test added to WithRootDir's root
// directory once its pods are gone: what is mounted under it first (the
// pods' volumes, the root directory upstream's kubelet bind-mounts on
// itself), and nothing if a mount stays, so that the removal never
// reaches into a mounted file system.
func (n *Node) removeRootDir() {
	for _, mp := range MountsUnder(n.T, n.RootDir) {
		if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
			n.T.Errorf("cleanup: unmount %s: %v", mp, err)
		}
	}
	if left := MountsUnder(n.T, n.RootDir); len(left) > 0 {
		n.T.Errorf("cleanup: %s left in place, still mounted: %v", n.RootDir, left)
		return
	}
	if n.rootBefore == nil {
		if err := os.RemoveAll(n.RootDir); err != nil {
			n.T.Errorf("cleanup: %v", err)
		}
		return
	}
	for name := range entries(n.T, n.RootDir) {
		if n.rootBefore[name] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(n.RootDir, name)); err != nil {
			n.T.Errorf("cleanup: %v", err)
		}
	}
}

// Pods reads /pods from the read-only port.
func (n *Node) Pods() ([]v1.Pod, error) { return ReadOnlyPods(n.ReadOnly) }

// Pod returns the static pod named name (without the node suffix).
func (n *Node) Pod(name string) (*v1.Pod, error) { return StaticPod(n.ReadOnly, name, n.Name) }

// Eventually is Eventually for the node's test.
func (n *Node) Eventually(what string, within time.Duration, check func() error) {
	n.T.Helper()
	Eventually(n.T, what, within, check)
}

// Running waits for the static pod's phase to be Running with every
// container running, and returns the pod.
func (n *Node) Running(name string, within time.Duration) *v1.Pod {
	n.T.Helper()
	var pod *v1.Pod
	n.Eventually("pod "+name+" running", within, func() error {
		p, err := n.Pod(name)
		if err != nil {
			return err
		}
		if err := PodRunning(p); err != nil {
			return err
		}
		pod = p
		return nil
	})
	return pod
}

// WriteManifest places a static pod manifest in the node's directory.
func (n *Node) WriteManifest(file, content string) {
	n.T.Helper()
	WriteManifest(n.T, n.Manifests, file, content)
}

// RemoveManifest removes a static pod manifest from the node's directory.
func (n *Node) RemoveManifest(file string) {
	n.T.Helper()
	RemoveManifest(n.T, n.Manifests, file)
}

// RuntimeObjects counts the sandboxes and containers the runtime holds for
// a pod UID.
func (n *Node) RuntimeObjects(uid string) (sandboxes, containers int) {
	n.T.Helper()
	return RuntimeObjects(n.T, n.RT, uid)
}

// InjectPanic makes the actor at path panic once through the debug
// listener's fault injection: in its handler, or with in "sync-work" in a
// pod-worker's next sync work.
func (n *Node) InjectPanic(path, in string) {
	n.T.Helper()
	url := fmt.Sprintf("http://127.0.0.1:%d/debug/inject/panic?actor=%s", n.Debug, path)
	if in != "" {
		url += "&in=" + in
	}
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		n.T.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		n.T.Fatalf("inject a panic into %s (in=%q): %s", path, in, resp.Status)
	}
}
