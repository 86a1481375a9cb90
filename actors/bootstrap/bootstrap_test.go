package bootstrap

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/config"
	"github.com/actorlet/actorlet/internal/cgroups"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// TestStepOrder: the start-up sequence runs in docs/startup.md's order,
// and RunStep names each step.
func TestStepOrder(t *testing.T) {
	want := []string{"parse-flags", "load-config", "feature-gates", "validate", "tls-bootstrap", "build-dependencies", "spawn-runtime"}
	var got []string
	for i, s := range steps {
		got = append(got, s.name)
		if stepIndex(s.name) != i {
			t.Errorf("stepIndex(%q) = %d, want %d", s.name, stepIndex(s.name), i)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps = %v, want %v", got, want)
	}
	if stepIndex("no-such-step") != -1 {
		t.Error("an unknown step has an index")
	}
}

// TestRuntimeActorOrder: the runtime actors start in this order and stop
// in the reverse one: the status-reporter first (it reports the final
// statuses, so it goes last), the pod-manager before the sources that send
// it pods, the kubelet API last (it stops taking requests first).
func TestRuntimeActorOrder(t *testing.T) {
	// The kinds are the children's names, and so their paths: spelled out.
	want := []string{"status-reporter", "plugin-manager", "dra-manager", "device-manager", "volume-manager", "pod-manager", "config-source", "pleg", "gc", "eviction", "node-shutdown", "kubelet-api"}
	var got []string
	for _, ra := range runtimeActors {
		got = append(got, ra.kind)
	}
	if !slices.Equal(got, want) {
		t.Errorf("runtime actors = %v, want %v", got, want)
	}
}

// TestChildStrategy: the runtime actors restart with backoff from 1 s to
// 30 s, and giving up on one tells the bootstrap actor, which stops the
// node agent.
func TestChildStrategy(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	s := childStrategy(system)
	if s.Initial != time.Second || s.Max != 30*time.Second || s.ResetAfter != 5*time.Minute || s.MaxRestarts != 10 || s.Registry != system.Registry {
		t.Errorf("strategy = %+v", s)
	}
	got := make(chan *messages.ChildFailedFatally, 1)
	if _, err := system.Root.SpawnNamed(actor.PropsFromFunc(func(c actor.Context) {
		if m, ok := c.Message().(*messages.ChildFailedFatally); ok {
			got <- m
		}
	}), Kind); err != nil {
		t.Fatal(err)
	}
	s.GiveUp(actor.NewPID(system.Address(), Kind+"/pleg"), "boom")
	select {
	case m := <-got:
		if m.Child != Kind+"/pleg" || m.Reason != "boom" {
			t.Errorf("ChildFailedFatally = %+v", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("giving up did not tell the bootstrap actor")
	}
}

// hostArgs let the steps pass validation on a cgroup v1 machine, where
// failCgroupV1 defaults to true, as upstream.
func hostArgs() []string {
	if cgroups.IsV2("/sys/fs/cgroup") {
		return nil
	}
	return []string{"--fail-cgroupv1=false"}
}

type earlyCase struct {
	name     string
	args     []string
	wantLast string  // the step that ends the run (all: tls-bootstrap passes)
	want     outcome // its outcome
	wantErr  string  // in its error
	stdout   string  // in stdout
	stderr   string  // in stderr
	bare     bool    // without hostArgs
}

// TestEarlySteps runs the steps before the dependencies on command lines:
// what each answers, prints and refuses.
func TestEarlySteps(t *testing.T) {
	tests := []earlyCase{
		{name: "help", args: []string{"--help"}, wantLast: "parse-flags", want: exitNow, stdout: "--kubeconfig"},
		{name: "version", args: []string{"--version"}, wantLast: "parse-flags", want: exitNow, stdout: "v"},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantLast: "parse-flags", want: reported,
			wantErr: "no-such-flag", stderr: "Error: "},
		{name: "invalid node label", args: []string{"--node-labels=bad label=x"}, wantLast: "parse-flags", want: next,
			wantErr: "failed to validate kubelet flags"},
		{name: "unknown feature gate", args: []string{"--feature-gates=NoSuchGate=true"}, wantLast: "parse-flags", want: reported,
			wantErr: "unrecognized feature gate: NoSuchGate", stderr: "Error: "},
		{name: "dump config", args: []string{"--dump-config"}, wantLast: "validate", want: exitNow,
			stdout: "kind: KubeletConfiguration"},
		{name: "bootstrap kubeconfig without kubeconfig", args: []string{"--bootstrap-kubeconfig=/nonexistent/bootstrap.conf"},
			wantLast: "tls-bootstrap", want: next, wantErr: "--bootstrap-kubeconfig needs --kubeconfig"},
		{name: "no bootstrap kubeconfig", args: nil, wantLast: "tls-bootstrap", want: next},
	}
	if len(hostArgs()) > 0 {
		tests = append(tests, earlyCase{name: "cgroup v1 refused by default", wantLast: "validate", want: next, wantErr: config.FailCgroupV1Message, bare: true})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system := supervision.NewSystem(zerolog.Nop())
			defer system.Shutdown()
			var stdout, stderr bytes.Buffer
			args := append(hostArgs(), tt.args...)
			if tt.bare {
				args = tt.args
			}
			a := New(Params{Args: args, Stdout: &stdout, Stderr: &stderr, System: system, Ctx: context.Background(),
				Exit: func(int) {}})().(*Actor)
			var last string
			var out outcome
			var err error
			for _, s := range steps[:stepIndex("build-dependencies")] {
				last = s.name
				if out, err = s.run(a, nil); err != nil || out != next {
					break
				}
			}
			if last != tt.wantLast || out != tt.want {
				t.Errorf("ended at %s with outcome %d, want %s with %d (err %v)", last, out, tt.wantLast, tt.want, err)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("error %v, want one with %q", err, tt.wantErr)
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout %q, want %q in it", stdout.String(), tt.stdout)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %q, want %q in it", stderr.String(), tt.stderr)
			}
		})
	}
}

// stoppable is a runtime actor that tells when it stops.
type stoppable chan string

func (s stoppable) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Stopping); ok {
		s <- c.Self().Id
	}
}

// tree is the bootstrap actor past its steps: it spawns the runtime
// actors named kinds, then hands every message but Started to the
// bootstrap actor.
type tree struct {
	a       *Actor
	kinds   []string
	stopped chan string
}

func (tr *tree) Receive(c actor.Context) {
	if _, ok := c.Message().(*actor.Started); ok {
		tr.a.stopping = false
		for _, k := range tr.kinds {
			pid, err := c.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return stoppable(tr.stopped) }), k)
			if err != nil {
				panic(err)
			}
			tr.a.children = append(tr.a.children, pid)
		}
		return
	}
	tr.a.Receive(c)
}

// TestShutdown: a signal or a runtime actor that failed beyond repair
// stops the runtime actors one at a time, last started first (the failed
// one is gone already), then exits with 0 for a signal, 1 for a failure.
func TestShutdown(t *testing.T) {
	kinds := []string{"a", "b", "c"}
	tests := []struct {
		name     string
		msgs     []messages.Message
		wantStop []string
		wantCode int
	}{
		{name: "signal", msgs: []messages.Message{&messages.Shutdown{Signal: "terminated"}},
			wantStop: []string{"c", "b", "a"}, wantCode: ExitOK},
		{name: "a child failed fatally", msgs: []messages.Message{&messages.ChildFailedFatally{Child: Kind + "/b", Reason: "boom"}},
			wantStop: []string{"c", "a"}, wantCode: ExitFailure},
		{name: "a failure during a shutdown", msgs: []messages.Message{&messages.Shutdown{Signal: "terminated"},
			&messages.ChildFailedFatally{Child: Kind + "/a", Reason: "boom"}},
			wantStop: []string{"c", "b"}, wantCode: ExitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			system := supervision.NewSystem(zerolog.Nop())
			defer system.Shutdown()
			exits := make(chan int, 2)
			a := New(Params{Args: hostArgs(), System: system, Stderr: &bytes.Buffer{}, Exit: func(code int) { exits <- code }})().(*Actor)
			stopped := make(chan string, len(kinds))
			tr := &tree{a: a, kinds: kinds, stopped: stopped}
			pid, err := system.Root.SpawnNamed(actor.PropsFromProducer(func() actor.Actor { return tr }), Kind)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range tt.msgs {
				system.Root.Send(pid, m)
			}
			select {
			case code := <-exits:
				if code != tt.wantCode {
					t.Errorf("exit code %d, want %d", code, tt.wantCode)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("no exit")
			}
			close(stopped)
			var got []string
			for id := range stopped {
				got = append(got, strings.TrimPrefix(id, Kind+"/"))
			}
			if !slices.Equal(got, tt.wantStop) {
				t.Errorf("stopped %v, want %v", got, tt.wantStop)
			}
			select {
			case code := <-exits:
				t.Errorf("exited a second time, with %d", code)
			default:
			}
		})
	}
}
