// Package env gives tests actorlet's real test environment (issue #3): a
// containerd of its own with CNI, a local registry that docker.io and
// registry.k8s.io pulls go to, and optionally etcd, kube-apiserver and
// kube-controller-manager. It is brought up by hack/node-env, which this
// package runs itself (idempotent, under the script's file lock) when the
// environment is not up yet.
//
//	e := env.Require(t, env.WithAPIServer())
//	rt, img := e.CRI(t)
//	cs := e.NodeClient(t)
//
// When the environment cannot be brought up, the test is skipped with the
// reason, except under CI=true, where it fails: CI never skips.
package env

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Env holds the values that `hack/node-env env` prints.
type Env struct {
	RuntimeEndpoint string // CONTAINER_RUNTIME_ENDPOINT, unix:///…/containerd.sock
	Containerd      string // ACTORLET_CONTAINERD, the runtime's version: 1.6 or 2.4
	StateDir        string // ACTORLET_STATE_DIR
	NodeName        string // ACTORLET_NODE_NAME
	NodeKubeconfig  string // ACTORLET_NODE_KUBECONFIG (CN=system:node:NodeName, O=system:nodes)
	AdminKubeconfig string // ACTORLET_ADMIN_KUBECONFIG (O=system:masters)
	APIServerURL    string // ACTORLET_APISERVER_URL
	CAFile          string // ACTORLET_CA_FILE, the cluster CA: signs every client and serving cert
	BridgeIP        string // ACTORLET_BRIDGE_IP, the host's address on the pod network
	PodCIDR         string // ACTORLET_POD_CIDR
	Registry        string // ACTORLET_REGISTRY, host:port of the local registry
	PauseImage      string // ACTORLET_PAUSE_IMAGE
	BusyboxImage    string // ACTORLET_BUSYBOX_IMAGE
	NonRootImage    string // ACTORLET_NONROOT_IMAGE, busybox with USER 1234
	Kubectl         string // KUBECTL, path of the built kubectl
	KubeBin         string // ACTORLET_KUBE_BIN, the directory of the built Kubernetes binaries (e2e.test, ginkgo, kubelet, ...)

	// AuthRegistry (ACTORLET_AUTH_REGISTRY) is host:port of the registry
	// that asks for AuthRegistryUser and AuthRegistryPassword
	// (ACTORLET_AUTH_REGISTRY_USER, _PASSWORD); PrivateImage
	// (ACTORLET_PRIVATE_IMAGE), a busybox in it, is pulled only with them.
	// containerd holds it only when a test pulled it.
	AuthRegistry         string
	AuthRegistryUser     string
	AuthRegistryPassword string
	PrivateImage         string

	// BootstrapKubeconfig (ACTORLET_BOOTSTRAP_KUBECONFIG) holds a bootstrap
	// token of the group kubeadm gives joining nodes
	// (system:bootstrappers:kubeadm:default-node-token): its node-client
	// CSRs are approved by kube-controller-manager, as on a kubeadm cluster.
	// BootstrapManualKubeconfig (ACTORLET_BOOTSTRAP_MANUAL_KUBECONFIG) holds
	// a token that may create CSRs but whose CSRs nobody approves: a test
	// approves or denies them. CSRSigningDuration
	// (ACTORLET_CSR_SIGNING_DURATION) is kube-controller-manager's
	// --cluster-signing-duration: short, so that certificate rotation
	// happens within a test.
	BootstrapKubeconfig       string
	BootstrapManualKubeconfig string
	CSRSigningDuration        time.Duration

	// WithAPIServer is true when etcd, kube-apiserver and
	// kube-controller-manager were required and are up.
	WithAPIServer bool
	// Script is the path of hack/node-env.
	Script string

	vars map[string]string
}

// PullUnauthorized is what the environment's containerd says, in a failed
// pull's error, when the registry refuses the pull: 1.6 quotes the
// registry's 401 whether or not credentials were sent; 2.x quotes it for
// wrong credentials and, for none, says it in words.
func (e *Env) PullUnauthorized(withCredentials bool) string {
	if e.Containerd == "1.6" || withCredentials {
		return "401 Unauthorized"
	}
	return "authorization failed"
}

// Option changes what Require asks for.
type Option func(*options)

type options struct {
	apiServer   bool
	conformance bool
	cluster     bool
}

// WithAPIServer also requires etcd, kube-apiserver and kube-controller-manager.
func WithAPIServer() Option { return func(o *options) { o.apiServer = true } }

// WithConformance also requires kube-scheduler, the e2e suite (e2e.test and
// ginkgo under KubeBin) and the e2e test images in the registry (issue #15).
func WithConformance() Option {
	return func(o *options) { o.apiServer, o.conformance = true, true }
}

// WithCluster also requires what hack/cluster's kubeadm cluster runs
// (kubeadm, kube-proxy, etcd and the control plane's images; issue #35),
// besides all of WithConformance.
func WithCluster() Option {
	return func(o *options) { o.apiServer, o.conformance, o.cluster = true, true, true }
}

var (
	mu     sync.Mutex
	cached = map[options]*result{}
)

type result struct {
	env *Env
	err error
}

// Require returns the environment, bringing it up first if needed. When it
// cannot, it calls t.Fatal under CI=true and t.Skip otherwise.
func Require(t testing.TB, opts ...Option) *Env {
	t.Helper()
	e, err := Load(opts...)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("test environment unavailable (CI=true, not skipping): %v", err)
		}
		t.Skipf("test environment unavailable: %v", err)
	}
	return e
}

// Get is Require under another name.
func Get(t testing.TB, opts ...Option) *Env {
	t.Helper()
	return Require(t, opts...)
}

// Load brings the environment up if needed and returns it. The outcome is
// cached for the life of the test binary.
func Load(opts ...Option) (*Env, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	mu.Lock()
	defer mu.Unlock()
	if r, ok := cached[o]; ok {
		return r.env, r.err
	}
	e, err := load(o)
	cached[o] = &result{e, err}
	return e, err
}

func load(o options) (*Env, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("needs Linux, have %s", runtime.GOOS)
	}
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (containerd, CNI and mounts)")
	}
	root, err := RepoRoot()
	if err != nil {
		return nil, err
	}
	script := filepath.Join(root, "hack", "node-env")
	args := []string{}
	switch {
	case o.cluster:
		args = append(args, "--with-cluster")
	case o.conformance:
		args = append(args, "--with-conformance")
	case o.apiServer:
		args = append(args, "--with-apiserver")
	}
	if exec.Command(script, append([]string{"check"}, args...)...).Run() != nil {
		cmd := exec.Command(script, append([]string{"up"}, args...)...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("%s up %s: %v after %s:\n%s", script, strings.Join(args, " "), err,
				time.Since(start).Round(time.Second), Tail(out.String(), 40))
		}
	}
	out, err := exec.Command(script, "env").Output()
	if err != nil {
		return nil, fmt.Errorf("%s env: %v", script, err)
	}
	e, err := parse(out)
	if err != nil {
		return nil, err
	}
	e.Script = script
	e.WithAPIServer = o.apiServer
	return e, nil
}

func parse(out []byte) (*Env, error) {
	vars := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := strings.TrimPrefix(strings.TrimSpace(sc.Text()), "export ")
		if k, v, ok := strings.Cut(line, "="); ok {
			vars[k] = v
		}
	}
	e := &Env{
		RuntimeEndpoint: vars["CONTAINER_RUNTIME_ENDPOINT"],
		StateDir:        vars["ACTORLET_STATE_DIR"],
		NodeName:        vars["ACTORLET_NODE_NAME"],
		NodeKubeconfig:  vars["ACTORLET_NODE_KUBECONFIG"],
		AdminKubeconfig: vars["ACTORLET_ADMIN_KUBECONFIG"],
		APIServerURL:    vars["ACTORLET_APISERVER_URL"],
		CAFile:          vars["ACTORLET_CA_FILE"],
		BridgeIP:        vars["ACTORLET_BRIDGE_IP"],
		PodCIDR:         vars["ACTORLET_POD_CIDR"],
		Registry:        vars["ACTORLET_REGISTRY"],
		PauseImage:      vars["ACTORLET_PAUSE_IMAGE"],
		BusyboxImage:    vars["ACTORLET_BUSYBOX_IMAGE"],
		NonRootImage:    vars["ACTORLET_NONROOT_IMAGE"],
		Kubectl:         vars["KUBECTL"],
		KubeBin:         vars["ACTORLET_KUBE_BIN"],
		vars:            vars,

		AuthRegistry:         vars["ACTORLET_AUTH_REGISTRY"],
		AuthRegistryUser:     vars["ACTORLET_AUTH_REGISTRY_USER"],
		AuthRegistryPassword: vars["ACTORLET_AUTH_REGISTRY_PASSWORD"],
		PrivateImage:         vars["ACTORLET_PRIVATE_IMAGE"],
		Containerd:           vars["ACTORLET_CONTAINERD"],

		BootstrapKubeconfig:       vars["ACTORLET_BOOTSTRAP_KUBECONFIG"],
		BootstrapManualKubeconfig: vars["ACTORLET_BOOTSTRAP_MANUAL_KUBECONFIG"],
	}
	if d := vars["ACTORLET_CSR_SIGNING_DURATION"]; d != "" {
		var err error
		if e.CSRSigningDuration, err = time.ParseDuration(d); err != nil {
			return nil, fmt.Errorf("ACTORLET_CSR_SIGNING_DURATION=%q: %w", d, err)
		}
	}
	if e.RuntimeEndpoint == "" || e.StateDir == "" || e.NodeName == "" {
		return nil, fmt.Errorf("hack/node-env env printed no usable values:\n%s", out)
	}
	return e, nil
}

// Tail returns the last n lines of s, for quoting the end of a log.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RepoRoot finds the repository root: from this file's location, else by
// walking up from the working directory to a go.mod next to hack/node-env.
func RepoRoot() (string, error) {
	isRoot := func(dir string) bool {
		_, err1 := os.Stat(filepath.Join(dir, "go.mod"))
		_, err2 := os.Stat(filepath.Join(dir, "hack", "node-env"))
		return err1 == nil && err2 == nil
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		if dir := filepath.Join(filepath.Dir(file), "..", ".."); isRoot(dir) {
			return filepath.Clean(dir), nil
		}
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("repository root (go.mod beside hack/node-env) not found")
		}
		dir = parent
	}
}

// Environ returns the environment's variables as NAME=value pairs (the
// lines of `hack/node-env env`), e.g. to append to exec.Cmd.Env.
func (e *Env) Environ() []string {
	var kv []string
	for k, v := range e.vars {
		kv = append(kv, k+"="+v)
	}
	return kv
}

// SocketPath is the containerd socket path (RuntimeEndpoint without unix://).
func (e *Env) SocketPath() string { return strings.TrimPrefix(e.RuntimeEndpoint, "unix://") }

// CRIConn dials the environment's containerd CRI endpoint; the connection is
// closed when the test ends.
func (e *Env) CRIConn(t testing.TB) *grpc.ClientConn {
	t.Helper()
	// A short reconnect backoff, as upstream's CRI client: after a test
	// restarted containerd, gRPC's default (up to 2 min) would leave the
	// test's calls failing long after it is back.
	params := grpc.ConnectParams{Backoff: backoff.DefaultConfig, MinConnectTimeout: 5 * time.Second}
	params.Backoff.BaseDelay, params.Backoff.MaxDelay = 100*time.Millisecond, 3*time.Second
	conn, err := grpc.NewClient(e.RuntimeEndpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)), grpc.WithConnectParams(params))
	if err != nil {
		t.Fatalf("dial CRI %s: %v", e.RuntimeEndpoint, err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// CRI returns connected CRI runtime and image service clients.
func (e *Env) CRI(t testing.TB) (runtimeapi.RuntimeServiceClient, runtimeapi.ImageServiceClient) {
	t.Helper()
	conn := e.CRIConn(t)
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := rt.Version(ctx, &runtimeapi.VersionRequest{}); err != nil {
		t.Fatalf("CRI %s not answering: %v", e.RuntimeEndpoint, err)
	}
	return rt, runtimeapi.NewImageServiceClient(conn)
}

func (e *Env) restConfig(t testing.TB, kubeconfig string) *rest.Config {
	t.Helper()
	if !e.WithAPIServer || kubeconfig == "" {
		t.Fatal("env: no API server; call env.Require(t, env.WithAPIServer())")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("load kubeconfig %s: %v", kubeconfig, err)
	}
	return cfg
}

// AdminRESTConfig is the rest.Config of the admin (system:masters) user.
func (e *Env) AdminRESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	return e.restConfig(t, e.AdminKubeconfig)
}

// NodeRESTConfig is the rest.Config of the node user system:node:NodeName.
func (e *Env) NodeRESTConfig(t testing.TB) *rest.Config {
	t.Helper()
	return e.restConfig(t, e.NodeKubeconfig)
}

// AdminClient is a clientset acting as the admin (system:masters).
func (e *Env) AdminClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	return clientset(t, e.AdminRESTConfig(t))
}

// NodeClient is a clientset acting as the node system:node:NodeName, subject
// to the Node authorizer and NodeRestriction like a real kubelet.
func (e *Env) NodeClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	return clientset(t, e.NodeRESTConfig(t))
}

func clientset(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("clientset: %v", err)
	}
	return cs
}

// StopAPIServer stops kube-apiserver (`hack/node-env stop apiserver`).
// The caller restarts it with StartAPIServer, typically in t.Cleanup.
func (e *Env) StopAPIServer(t testing.TB) {
	t.Helper()
	e.run(t, "stop", "apiserver")
}

// StartAPIServer starts kube-apiserver again and waits until it is ready.
func (e *Env) StartAPIServer(t testing.TB) {
	t.Helper()
	e.run(t, "start", "apiserver")
}

// ContainerdPid is the PID of the environment's containerd, as
// hack/node-env recorded it, once checked to be containerd.
func (e *Env) ContainerdPid() (int, error) {
	b, err := os.ReadFile(filepath.Join(e.StateDir, "pids", "containerd.pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("containerd pid file: %w", err)
	}
	if exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); err != nil || filepath.Base(exe) != "containerd" {
		return 0, fmt.Errorf("pid %d is not containerd (%s, %v)", pid, exe, err)
	}
	return pid, nil
}

// KillContainerd ends containerd with SIGKILL, as a crash would, and waits
// until it is gone; its shims, and so the containers, keep running. The
// test restarts it with StartContainerd, in t.Cleanup too: every other
// test needs it.
func (e *Env) KillContainerd(t testing.TB) {
	t.Helper()
	pid, err := e.ContainerdPid()
	if err != nil {
		t.Fatalf("kill containerd: %v", err)
	}
	// Another test binary whose environment check fails meanwhile waits
	// for this file to go rather than start containerd (hack/node-env up).
	if err := os.WriteFile(e.containerdHeld(), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		t.Fatalf("kill containerd: %v", err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill containerd (pid %d): %v", pid, err)
	}
	// hack/node-env starts it detached: init reaps it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if syscall.Kill(pid, 0) != nil {
			return
		}
	}
	t.Fatalf("containerd (pid %d) still there 10 s after SIGKILL", pid)
}

// StartContainerd starts containerd (`hack/node-env start containerd`)
// unless it runs, waits until its CRI answers, and lifts KillContainerd's
// hold.
func (e *Env) StartContainerd(t testing.TB) {
	t.Helper()
	defer os.Remove(e.containerdHeld())
	e.run(t, "start", "containerd")
}

// containerdHeld is the file that says a test holds containerd down.
func (e *Env) containerdHeld() string { return filepath.Join(e.StateDir, "pids", "containerd.held") }

func (e *Env) run(t testing.TB, args ...string) {
	t.Helper()
	out, err := exec.Command(e.Script, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", e.Script, strings.Join(args, " "), err, out)
	}
}

// SandboxConfig is a minimal pod sandbox configuration for tests that drive
// CRI directly: the pod's network and IPC namespaces, its own PID namespace
// per container, logs under logDir.
func SandboxConfig(name, uid, namespace, logDir string, labels map[string]string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: namespace},
		Hostname:     name,
		LogDirectory: logDir,
		Labels:       labels,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				NamespaceOptions: &runtimeapi.NamespaceOption{
					Network: runtimeapi.NamespaceMode_POD,
					Pid:     runtimeapi.NamespaceMode_CONTAINER,
					Ipc:     runtimeapi.NamespaceMode_POD,
				},
			},
		},
	}
}
