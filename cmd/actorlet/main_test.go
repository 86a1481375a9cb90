package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/actorlet/actorlet/config"
	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/internal/version"
	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// binary is the actorlet built once for these tests: they check what a user
// sees, exit codes and output, from the real command.
var binary string

func TestMain(m *testing.M) { agent.MainWithBinary(m, &binary) }

type result struct {
	code           int
	stdout, stderr string
	took           time.Duration
}

// hostArgs let actorlet start on a cgroup v1 machine, as every harness's
// configuration does: failCgroupV1 defaults to true, as upstream's.
func hostArgs() []string {
	if cgroups.IsV2("/sys/fs/cgroup") {
		return nil
	}
	return []string{"--fail-cgroupv1=false"}
}

// runActorlet runs actorlet with args after hostArgs.
func runActorlet(t *testing.T, args ...string) result {
	t.Helper()
	return runBare(t, append(hostArgs(), args...)...)
}

// runBare runs actorlet with args alone.
func runBare(t *testing.T, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	case err != nil:
		t.Fatalf("run actorlet %v: %v", args, err)
	}
	return r
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const header = "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n"

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	maxPods30 := writeFile(t, dir, "maxpods.yaml", header+"maxPods: 30\n")
	notImplemented := writeFile(t, dir, "upstream.yaml", header+"maxPods: 30\nkernelMemcgNotification: true\nmemoryManagerPolicy: Static\ntopologyManagerPolicyOptions:\n  prefer-closest-numa-nodes: \"true\"\n")
	typo := writeFile(t, dir, "typo.yaml", header+"maxPodz: 30\n")
	invalid := writeFile(t, dir, "invalid.yaml", header+"maxPods: -1\nhealthzPort: 70000\nlogging:\n  format: xml\n")
	wrongKind := writeFile(t, dir, "kind.yaml", "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeProxyConfiguration\n")
	noRuntime := "unix://" + filepath.Join(dir, "no-runtime.sock")

	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     []string // substrings of stdout
		stderr     []string // substrings of stderr
		noStdout   bool
		maxSeconds float64
	}{
		{name: "help", args: []string{"--help"}, stdout: []string{"Usage:\n  actorlet [flags]", "--pod-manifest-path"}},
		{name: "short help", args: []string{"-h"}, stdout: []string{"Usage:"}},
		{name: "version", args: []string{"--version"}, stdout: []string{version.Flag() + "\n"}},
		{name: "unknown command", args: []string{"foo"}, code: 1, stderr: []string{`unknown command "foo"`, "Usage:"}, noStdout: true},
		{name: "unknown flag", args: []string{"--no-such-flag"}, code: 1, stderr: []string{"unknown flag: --no-such-flag", "Usage:"}, noStdout: true},
		{name: "bad flag value", args: []string{"--max-pods=many"}, code: 1, stderr: []string{`invalid argument "many" for "--max-pods"`}, noStdout: true},
		{name: "unknown feature gate", args: []string{"--feature-gates=NoSuchGate=true", "--dump-config"}, code: 1, stderr: []string{"NoSuchGate"}, noStdout: true},
		{name: "flag beats file", args: []string{"--dump-config", "--config", maxPods30, "--max-pods", "50"}, stdout: []string{"\nmaxPods: 50\n"}},
		{name: "normalized flag beats file", args: []string{"--dump-config", "--config", maxPods30, "--max_pods", "40"}, stdout: []string{"\nmaxPods: 40\n"}},
		{name: "file beats default", args: []string{"--dump-config", "--config", maxPods30}, stdout: []string{"apiVersion: kubelet.config.k8s.io/v1beta1\n", "kind: KubeletConfiguration\n", "\nmaxPods: 30\n"}},
		{name: "not implemented fields warn", args: []string{"--dump-config", "--config", notImplemented}, stdout: []string{"memoryManagerPolicy: Static"}, stderr: []string{"ignored (not implemented yet): kernelMemcgNotification"}},
		{name: "typo fails naming it", args: []string{"--dump-config", "--config", typo}, code: 1, stderr: []string{`"maxPodz"`, typo}, noStdout: true},
		{name: "invalid configuration", args: []string{"--config", invalid}, code: 1, stderr: []string{"maxPods", "healthzPort", "logging.format"}, noStdout: true},
		{name: "wrong kind", args: []string{"--dump-config", "--config", wrongKind}, code: 1, stderr: []string{"KubeProxyConfiguration", wrongKind}, noStdout: true},
		{name: "no runtime", args: []string{"--container-runtime-endpoint", noRuntime, "--root-dir", filepath.Join(dir, "root")}, code: 1,
			stderr: []string{"build dependencies: container runtime " + noRuntime + ": no such file or directory"}, maxSeconds: 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := runActorlet(t, tc.args...)
			if r.code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for _, s := range tc.stdout {
				if !strings.Contains(r.stdout, s) {
					t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(r.stderr, s) {
					t.Errorf("stderr lacks %q:\n%s", s, r.stderr)
				}
			}
			if tc.noStdout && r.stdout != "" {
				t.Errorf("stdout should be empty, got:\n%s", r.stdout)
			}
			if tc.maxSeconds > 0 && r.took.Seconds() > tc.maxSeconds {
				t.Errorf("took %v, want at most %vs", r.took, tc.maxSeconds)
			}
		})
	}
}

// TestStartupFailureIsOneLine checks that a failing step reports itself in
// one line naming the step and the cause, and nothing else at error level.
func TestStartupFailureIsOneLine(t *testing.T) {
	dir := t.TempDir()
	endpoint := "unix://" + filepath.Join(dir, "none.sock")
	r := runActorlet(t, "--container-runtime-endpoint", endpoint, "--root-dir", filepath.Join(dir, "root"))
	var errLines []string
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.Contains(l, " ERR ") {
			errLines = append(errLines, l)
		}
	}
	if len(errLines) != 1 || !strings.Contains(errLines[0], "build dependencies: container runtime "+endpoint) {
		t.Errorf("want one error line naming the step and endpoint, got %q", errLines)
	}
}

// TestCgroupDriverSystemdWithoutSystemd: where systemd is not the init
// system, cgroupDriver: systemd (kubeadm's) stops start-up with one line
// that says so and what to do, once the runtime is connected and before
// any actor starts, unless the runtime chooses the driver (CRI
// RuntimeConfig, containerd 2.0 and later), as upstream: actorlet then uses
// the runtime's cgroupfs, says so, and runs. containerd 1.6 does not tell
// its driver: the configuration's is used.
func TestCgroupDriverSystemdWithoutSystemd(t *testing.T) {
	if _, err := os.Stat("/run/systemd/system"); err == nil {
		t.Skip("systemd is the init system here")
	}
	e := env.Require(t)
	dir := t.TempDir()
	systemd := writeFile(t, dir, "systemd.yaml", header+"cgroupDriver: systemd\n")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rt, _ := e.CRI(t)
	rc, err := rt.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if status.Code(err) != codes.Unimplemented {
		if err != nil {
			t.Fatal(err)
		}
		if d := rc.GetLinux().GetCgroupDriver(); d != runtimeapi.CgroupDriver_CGROUPFS {
			t.Fatalf("the environment's runtime says its cgroup driver is %v, want CGROUPFS", d)
		}
		p := agent.Start(t, binary, append(hostArgs(), "--cgroup-driver", "systemd", "--container-runtime-endpoint", e.RuntimeEndpoint,
			"--root-dir", filepath.Join(dir, "root"), "--hostname-override", e.NodeName, "--read-only-port", "0")...)
		agent.Eventually(t, "actorlet running on the runtime's cgroup driver", 30*time.Second, func() error {
			l := p.Logs()
			if !p.Alive() {
				t.Fatalf("actorlet exited:\n%s", l)
			}
			if !strings.Contains(l, "the container runtime's cgroup driver is used") || !strings.Contains(l, "actorlet is running") {
				return errors.New("not yet")
			}
			return nil
		})
		p.Stop(syscall.SIGTERM)
		return
	}
	const line = "build dependencies: cgroupDriver is systemd, but systemd is not the init system of this machine (no /run/systemd/system): use cgroupDriver: cgroupfs"
	for _, args := range [][]string{
		{"--config", systemd},
		{"--cgroup-driver", "systemd"},
	} {
		r := runActorlet(t, append(args, "--container-runtime-endpoint", e.RuntimeEndpoint, "--root-dir", filepath.Join(dir, "root"))...)
		if r.code != 1 {
			t.Errorf("%v: exit code %d, want 1\nstderr: %s", args, r.code, r.stderr)
		}
		var errLines []string
		for _, l := range strings.Split(r.stderr, "\n") {
			if strings.Contains(l, " ERR ") {
				errLines = append(errLines, l)
			}
		}
		if len(errLines) != 1 || !strings.Contains(errLines[0], line) {
			t.Errorf("%v: want one error line %q, got %q", args, line, errLines)
		}
		if strings.Contains(r.stderr, "actorlet is running") {
			t.Errorf("%v: the runtime actors started:\n%s", args, r.stderr)
		}
	}
}

// TestSignalStopsTheTree starts actorlet against the environment's real
// containerd and stops it with SIGTERM: it must exit 0 within 10 s having
// stopped its actors.
func TestSignalStopsTheTree(t *testing.T) {
	e := env.Require(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(binary, append(hostArgs(), "--container-runtime-endpoint", e.RuntimeEndpoint, "--root-dir", dir,
				"--hostname-override", e.NodeName, "--read-only-port", "0", "-v", "2")...)
			stderr, err := cmd.StderrPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			lines := make(chan string, 100)
			go func() {
				s := bufio.NewScanner(stderr)
				for s.Scan() {
					lines <- s.Text()
				}
				close(lines)
			}()
			var log strings.Builder
			waitFor := func(what string, within time.Duration) {
				t.Helper()
				deadline := time.After(within)
				for {
					select {
					case l, ok := <-lines:
						if !ok {
							t.Fatalf("actorlet exited before %q:\n%s", what, log.String())
						}
						log.WriteString(l + "\n")
						if strings.Contains(l, what) {
							return
						}
					case <-deadline:
						t.Fatalf("no %q within %v:\n%s", what, within, log.String())
					}
				}
			}
			waitFor("actorlet is running", 30*time.Second)
			sent := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			waitFor("all actors stopped; exiting", 30*time.Second)
			for range lines {
			}
			err = cmd.Wait()
			took := time.Since(sent)
			if err != nil {
				t.Errorf("exit after %v: %v\n%s", sig, err, log.String())
			}
			if took > 30*time.Second { // the product's bound is 10 s; 3x slack for a loaded machine
				t.Errorf("took %v to exit after %v", took, sig)
			}
			// The runtime actors stop in the reverse order of their start.
			order := []string{"kubelet-api", "eviction", "gc", "pleg", "config-source", "pod-manager", "status-reporter"}
			out := log.String()
			last := -1
			for _, kind := range order {
				i := strings.Index(out, "stopping actor=bootstrap child=bootstrap/"+kind)
				if i < 0 || i < last {
					t.Errorf("%s did not stop in reverse start order:\n%s", kind, out)
					break
				}
				last = i
			}
		})
	}
}

// TestPortInUseStopsTheAgent checks that a listener that cannot bind is a
// fatal start-up failure naming the address, as upstream's.
func TestPortInUseStopsTheAgent(t *testing.T) {
	e := env.Require(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	dir := t.TempDir()
	r := runActorlet(t, "--container-runtime-endpoint", e.RuntimeEndpoint, "--root-dir", dir, "--hostname-override", "port-in-use",
		"--read-only-port", "0", "--healthz-port", fmt.Sprint(port))
	if r.code != 1 {
		t.Fatalf("exit code %d, want 1\n%s", r.code, r.stderr)
	}
	if want := fmt.Sprintf("healthz listener on 127.0.0.1:%d", port); !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "address already in use") {
		t.Errorf("stderr does not name the listener %q and the cause:\n%s", want, r.stderr)
	}
}

// TestFailCgroupV1 checks upstream's refusal to start on cgroup v1 while
// failCgroupV1 is true, its default: one error line, before the runtime
// is dialled.
func TestFailCgroupV1(t *testing.T) {
	if cgroups.IsV2("/sys/fs/cgroup") {
		t.Skip("this machine runs cgroup v2")
	}
	dir := t.TempDir()
	endpoint := "unix://" + filepath.Join(dir, "none.sock")
	for _, args := range [][]string{nil, {"--fail-cgroupv1"}, {"--config", writeFile(t, dir, "v1.yaml", header+"failCgroupV1: true\n")}} {
		r := runBare(t, append(args, "--container-runtime-endpoint", endpoint, "--root-dir", filepath.Join(dir, "root"))...)
		if r.code != 1 || !strings.Contains(r.stderr, config.FailCgroupV1Message) || strings.Contains(r.stderr, "build dependencies") {
			t.Errorf("%v: exit code %d, want 1 with %q before the runtime is dialled\n%s", args, r.code, config.FailCgroupV1Message, r.stderr)
		}
	}
}
