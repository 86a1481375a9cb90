// Package agent runs the actorlet binary for integration tests: it builds
// it once per test binary, starts it with the test's flags, keeps its log,
// and stops it. Node is a whole test node on top of that: configuration,
// ports, start, restarts, static pods and cleanup. Test packages that run
// actorlet share it, so that starting and stopping the agent works the
// same everywhere, and wait with Eventually and Consistently.
package agent

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/test/env"
)

// Build builds cmd/actorlet into a new temporary directory, for TestMain.
// The returned cleanup removes it. When ACTORLET_TEST_BINARY names a
// binary, Build returns it instead: make's integration targets build
// actorlet once from the tree for every test package, which saves each
// package a link of the whole binary.
func Build() (binary string, cleanup func(), err error) {
	if b := os.Getenv("ACTORLET_TEST_BINARY"); b != "" {
		if _, err := os.Stat(b); err != nil {
			return "", nil, fmt.Errorf("ACTORLET_TEST_BINARY: %w", err)
		}
		return b, func() {}, nil
	}
	dir, err := os.MkdirTemp("", "actorlet-bin")
	if err != nil {
		return "", nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	root, err := env.RepoRoot()
	if err != nil {
		cleanup()
		return "", nil, err
	}
	binary = filepath.Join(dir, "actorlet")
	build := exec.Command("go", "build", "-o", binary, "./cmd/actorlet")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("build actorlet: %v\n%s", err, out)
	}
	return binary, cleanup, nil
}

// BuildGo builds the repository's main package pkg ("./test/x/y") into
// binary, for a test's helper programs (plugins, drivers).
func BuildGo(t testing.TB, pkg, binary string) {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-o", binary, pkg)
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
}

// BuildKube builds pkg, a main package of the modules that hack/kube pins
// ("k8s.io/kubernetes/test/images/sample-device-plugin"), into binary:
// upstream's own helper programs, which k8s.io/kubernetes keeps out of
// the project's module. The flags are hack/node-env's, so that the
// packages its kube build compiled come from the build cache.
func BuildKube(t testing.TB, pkg, binary string) {
	t.Helper()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	build := exec.Command("go", "build", "-trimpath", "-o", binary, pkg)
	build.Dir = filepath.Join(root, "hack", "kube")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOWORK=off", "GOFLAGS=-mod=readonly")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", pkg, err, out)
	}
}

// MainWithBinary is a TestMain body: it builds actorlet into *binary, runs
// the tests and exits.
func MainWithBinary(m *testing.M, binary *string) {
	path, cleanup, err := Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	*binary = path
	code := m.Run()
	cleanup()
	os.Exit(code)
}

// MainWithReference is MainWithBinary, unless the environment variable
// envVar names another kubelet to run in actorlet's place (upstream's, the
// reference for what the tests expect): then *binary is that kubelet and
// *upstream is set.
func MainWithReference(m *testing.M, envVar string, binary *string, upstream *bool) {
	if k := os.Getenv(envVar); k != "" {
		*binary, *upstream = k, true
		os.Exit(m.Run())
	}
	MainWithBinary(m, binary)
}

// Kubelet is the kubelet a test package runs: actorlet, built once for the
// package, or the kubelet that the package's environment variable names
// (upstream's, the reference for what the tests expect). A package holds
// one, set by its TestMain:
//
//	var kubelet agent.Kubelet
//
//	func TestMain(m *testing.M) { kubelet.Main(m, "VOLUMES_KUBELET") }
type Kubelet struct {
	// Binary is the kubelet to run.
	Binary string
	// Upstream is set when Binary is upstream's kubelet.
	Upstream bool
}

// Main is a TestMain body: MainWithReference into k.
func (k *Kubelet) Main(m *testing.M, envVar string) {
	MainWithReference(m, envVar, &k.Binary, &k.Upstream)
}

// Options is opts followed, when k is upstream's kubelet, by what it needs
// on this machine (UpstreamKubeletConfig).
func (k *Kubelet) Options(opts ...NodeOption) []NodeOption {
	if k.Upstream {
		opts = append(opts, WithConfig(UpstreamKubeletConfig))
	}
	return opts
}

// NewAPIPods is NewAPIPods for k's binary, with k's Options.
func (k *Kubelet) NewAPIPods(t *testing.T, opts ...NodeOption) *APIPods {
	t.Helper()
	return NewAPIPods(t, k.Binary, k.Options(opts...)...)
}

// Process is one running actorlet.
type Process struct {
	cmd      *exec.Cmd
	done     chan struct{}
	mu       sync.Mutex
	log      strings.Builder
	stopOnce sync.Once
}

// Start runs binary with args, collecting its log (stderr). It holds the
// runtime lock (env.AcquireRuntimeLock) until the process is stopped.
func Start(t testing.TB, binary string, args ...string) *Process {
	t.Helper()
	if err := env.AcquireRuntimeLock(); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		env.ReleaseRuntimeLock()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		env.ReleaseRuntimeLock()
		t.Fatal(err)
	}
	p := &Process{cmd: cmd, done: make(chan struct{})}
	t.Cleanup(func() { p.Stop(syscall.SIGKILL) })
	go func() {
		defer close(p.done)
		s := bufio.NewScanner(stderr)
		s.Buffer(make([]byte, 64*1024), 1024*1024)
		for s.Scan() {
			p.mu.Lock()
			p.log.WriteString(s.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	return p
}

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Stop sends sig and waits for the process to exit. It may be called more
// than once.
func (p *Process) Stop(sig syscall.Signal) {
	if p == nil {
		return
	}
	p.stopOnce.Do(func() {
		_ = p.cmd.Process.Signal(sig)
		<-p.done
		_ = p.cmd.Wait()
		env.ReleaseRuntimeLock()
	})
}

// Alive reports whether the process has not exited.
func (p *Process) Alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// ExitCode waits up to within for the process to exit by itself and
// returns its exit code; ok is false when it still runs.
func (p *Process) ExitCode(within time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
	case <-time.After(within):
		return 0, false
	}
	p.Stop(0) // reaps it; signal 0 sends nothing
	return p.cmd.ProcessState.ExitCode(), true
}

// Pid is the process's ID (for /proc/PID/status).
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Logs returns what the process logged so far.
func (p *Process) Logs() string {
	if p == nil {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// handedOut holds the ports FreePort has returned in this process. The
// kernel may give a port that was just closed to the next listen on port
// 0, so two calls in a row (a node's healthz and read-only ports) could
// otherwise return the same port, and the agent would fail to bind one.
var handedOut struct {
	sync.Mutex
	ports map[int]bool
}

// FreePort returns a loopback port free at the time of the call and not
// returned before in this process.
func FreePort(t testing.TB) int {
	t.Helper()
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports == nil {
		handedOut.ports = map[int]bool{}
	}
	for tries := 0; tries < 100; tries++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[port] {
			handedOut.ports[port] = true
			return port
		}
	}
	t.Fatal("FreePort: the kernel kept returning ports already handed out")
	return 0
}

// Eventually polls check until it returns nil, failing the test after
// within with what it waited for, how long, how many tries and check's
// last error. It polls at once, then more and more slowly up to every
// 200 ms, so that what is quick is seen quickly without busy polling
// what is slow.
func Eventually(t testing.TB, what string, within time.Duration, check func() error) {
	t.Helper()
	start := time.Now()
	pause := 10 * time.Millisecond
	for tries := 1; ; tries++ {
		err := check()
		if err == nil {
			return
		}
		left := within - time.Since(start)
		if left <= 0 {
			t.Fatalf("waited %v for %s, %d tries; the last said: %v", within, what, tries, err)
		}
		time.Sleep(min(pause, left))
		pause = min(2*pause, 200*time.Millisecond)
	}
}

// Consistently checks every interval, for d, that check returns nil,
// failing the test at the first error with what should have held, since
// when and the error. It is for what must stay true, where Eventually is
// for what must come.
func Consistently(t testing.TB, what string, d, interval time.Duration, check func() error) {
	t.Helper()
	start := time.Now()
	for {
		if err := check(); err != nil {
			t.Fatalf("%s held for %v of %v, then: %v", what, time.Since(start).Round(time.Millisecond), d, err)
		}
		if time.Since(start)+interval > d {
			return
		}
		time.Sleep(interval)
	}
}
