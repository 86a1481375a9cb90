// Command systemctl stands in for systemd's systemctl on a kubeadm node of
// hack/cluster, where PID 1 is not systemd: kubeadm starts, stops and
// restarts "kubelet" through systemctl at its own points (kubelet-start,
// kubelet-finalize, join), and this answers them the way systemd would
// with kubeadm's drop-in installed.
//
// The kubelet unit is kubeadm's drop-in (ACTORLET_CLUSTER_UNIT, the
// repository's deploy/systemd/kubelet.service.d/10-kubeadm.conf) with its
// ExecStart binary replaced by ACTORLET_CLUSTER_KUBELET; its state lives in
// the node's directory ACTORLET_CLUSTER_NODE_DIR: kubelet.pid (the
// supervisor, which restarts the kubelet as Restart=always does) and
// kubelet.log. Paths in the unit are the node's own: every process of a
// node runs in its mount namespace.
//
// Usage: systemctl daemon-reload | enable UNIT | is-enabled UNIT
//
//	| status UNIT | is-active UNIT | start UNIT | stop UNIT | restart UNIT
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/actorlet/actorlet/test/env/systemdunit"
)

// The unit it knows: kubeadm manages no other.
const unitName = "kubelet"

// superviseArg is the hidden command the supervisor runs as.
const superviseArg = "__supervise"

// restartDelay is the unit's RestartSec=.
const restartDelay = 10 * time.Second

func main() {
	if err := run(os.Args[1:]); err != nil {
		var ex exitCode
		if errors.As(err, &ex) {
			os.Exit(int(ex))
		}
		fmt.Fprintln(os.Stderr, "systemctl (stand-in):", err)
		os.Exit(1)
	}
}

// exitCode is an exit status with no message, as systemctl's for a unit
// that is not active (3) or not found (4).
type exitCode int

func (e exitCode) Error() string { return "exit " + strconv.Itoa(int(e)) }

func run(args []string) error {
	var words []string
	for _, a := range args {
		if !strings.HasPrefix(a, "-") { // --quiet, --no-pager: nothing to change here
			words = append(words, a)
		}
	}
	if len(words) == 0 {
		return fmt.Errorf("no command")
	}
	cmd, units := words[0], words[1:]
	switch cmd {
	case "daemon-reload":
		return nil
	case superviseArg:
		return supervise()
	}
	if len(units) != 1 {
		return fmt.Errorf("%s: want one unit, got %q", cmd, units)
	}
	if strings.TrimSuffix(units[0], ".service") != unitName {
		if cmd == "status" || cmd == "is-active" || cmd == "is-enabled" {
			fmt.Printf("Unit %s could not be found.\n", units[0])
		}
		return exitCode(4)
	}
	n, err := nodeFromEnv()
	if err != nil {
		return err
	}
	switch cmd {
	case "enable", "disable", "reenable":
		return nil
	case "is-enabled":
		fmt.Println("enabled")
		return nil
	case "is-active":
		if n.active() {
			fmt.Println("active")
			return nil
		}
		fmt.Println("inactive")
		return exitCode(3)
	case "status":
		state := "inactive (dead)"
		if n.active() {
			state = "active (running)"
		}
		fmt.Printf("● kubelet.service - kubelet (stand-in)\n     Loaded: loaded (%s; enabled)\n     Active: %s\n", n.unit, state)
		if state != "active (running)" {
			return exitCode(3)
		}
		return nil
	case "start":
		return n.start()
	case "stop":
		return n.stop()
	case "restart", "try-restart":
		if err := n.stop(); err != nil {
			return err
		}
		return n.start()
	}
	return fmt.Errorf("unknown command %q", cmd)
}

// node is one node's kubelet service.
type node struct {
	dir     string // its state: kubelet.pid, kubelet.log
	unit    string // the drop-in
	kubelet string // the binary ExecStart runs
}

func nodeFromEnv() (*node, error) {
	n := &node{dir: os.Getenv("ACTORLET_CLUSTER_NODE_DIR"), unit: os.Getenv("ACTORLET_CLUSTER_UNIT"), kubelet: os.Getenv("ACTORLET_CLUSTER_KUBELET")}
	if n.dir == "" || n.unit == "" || n.kubelet == "" {
		return nil, fmt.Errorf("ACTORLET_CLUSTER_NODE_DIR, ACTORLET_CLUSTER_UNIT and ACTORLET_CLUSTER_KUBELET must be set (hack/cluster sets them)")
	}
	return n, nil
}

func (n *node) pidFile() string { return filepath.Join(n.dir, "kubelet.pid") }

// supervisor is the supervisor's PID, 0 when none runs.
func (n *node) supervisor() int {
	b, err := os.ReadFile(n.pidFile())
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || pid <= 0 {
		return 0
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), superviseArg) {
		return 0
	}
	return pid
}

func (n *node) active() bool { return n.supervisor() != 0 }

// start starts the supervisor, detached, unless it runs.
func (n *node) start() error {
	if n.active() {
		return nil
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	log, err := os.OpenFile(filepath.Join(n.dir, "kubelet.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := exec.Command(self, superviseArg)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return err
	}
	if err := os.WriteFile(n.pidFile(), []byte(strconv.Itoa(cmd.Process.Pid)+"\n"), 0o644); err != nil {
		_ = cmd.Process.Kill()
		return err
	}
	return cmd.Process.Release()
}

// stop stops the supervisor, which stops the kubelet, and waits for it
// (systemd's TimeoutStopSec, then SIGKILL).
func (n *node) stop() error {
	pid := n.supervisor()
	if pid == 0 {
		return nil
	}
	_ = syscall.Kill(pid, syscall.SIGTERM)
	for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if n.supervisor() == 0 {
			return os.Remove(n.pidFile())
		}
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	return os.Remove(n.pidFile())
}

// supervise runs the kubelet as the unit says, again restartDelay after
// each exit (Restart=always), until SIGTERM, which it passes on.
func supervise() error {
	n, err := nodeFromEnv()
	if err != nil {
		return err
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM, syscall.SIGINT)
	for {
		// The unit is read at each start: kubeadm rewrites
		// kubeadm-flags.env before it restarts the kubelet.
		u, err := systemdunit.Parse(n.unit)
		var args []string
		if err == nil {
			args, err = u.CommandLine(func(p string) string { return p })
		}
		if err == nil && len(args) == 0 {
			err = fmt.Errorf("%s: no ExecStart", n.unit)
		}
		if err == nil {
			cmd := exec.Command(n.kubelet, args[1:]...)
			cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
			fmt.Printf("%s stand-in: starting %s %s\n", time.Now().Format(time.RFC3339), n.kubelet, strings.Join(args[1:], " "))
			if err = cmd.Start(); err == nil {
				exited := make(chan error, 1)
				go func() { exited <- cmd.Wait() }()
				select {
				case err = <-exited:
				case <-term:
					_ = cmd.Process.Signal(syscall.SIGTERM)
					select {
					case <-exited:
					case <-time.After(60 * time.Second):
						_ = cmd.Process.Kill()
						<-exited
					}
					return nil
				}
			}
		}
		fmt.Printf("%s stand-in: kubelet ended (%v); restarting in %s\n", time.Now().Format(time.RFC3339), err, restartDelay)
		select {
		case <-time.After(restartDelay):
		case <-term:
			return nil
		}
	}
}
