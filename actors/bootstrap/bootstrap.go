// Package bootstrap holds the root of the actor tree: the bootstrap actor,
// which performs the start-up sequence (parse flags, load and merge the
// configuration, feature gates, validate, build dependencies) as explicit
// steps, then spawns the runtime actors under supervision and, on shutdown,
// stops them in the reverse order of start. docs/startup.md describes each
// step.
package bootstrap

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	kubeletconfigv1beta1 "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/actors/kubeletapi"
	"github.com/actorlet/actorlet/config"
	"github.com/actorlet/actorlet/config/features"
	"github.com/actorlet/actorlet/internal/certificates"
	"github.com/actorlet/actorlet/internal/dependencies"
	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is the bootstrap actor's kind in the registry.
const Kind = "bootstrap"

// Exit codes of the node agent.
const (
	ExitOK      = 0
	ExitFailure = 1
)

// Params is what the bootstrap actor is started with.
type Params struct {
	Args   []string // the command line without argv[0]
	Stdout io.Writer
	Stderr io.Writer
	System *supervision.System
	// Ctx is cancelled on SIGTERM/SIGINT, aborting a step in flight (a
	// runtime handshake, say) so that shutdown never waits for it.
	Ctx context.Context
	// Exit is called once, when the node agent must exit with code.
	Exit func(code int)
}

// Actor is the bootstrap actor. Its state is what the steps produced so far.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p   Params
	log zerolog.Logger

	cmdline *config.CommandLine
	gates   *features.Gates
	cfg     *kubeletconfigv1beta1.KubeletConfiguration
	deps    *dependencies.Dependencies
	// apiCert and apiAuth guard the kubelet API; nil with enableServer: false.
	apiCert *tls.Certificate
	apiAuth *auth.Filter
	// servingCerts is the kubelet API's certificate with serverTLSBootstrap
	// (then apiCert is nil).
	servingCerts *certificates.ServingManager
	// servingFiles is the kubelet API's certificate read from files and
	// reloaded when they change (then apiCert is nil).
	servingFiles *certificates.FileServing
	// apiTLS are the kubelet API's TLS version, cipher suites and curves.
	apiTLS kubeletapi.TLSOptions

	// children are the live runtime actors in order of start.
	children []*actor.PID
	// stoppingChild is the child whose termination shutdown waits for.
	stoppingChild *actor.PID
	stopping      bool
	exitCode      int
	exited        bool
}

// New returns the producer of the bootstrap actor. Until the configuration
// is loaded it logs warnings and errors only, as text on Stderr.
func New(p Params) actor.Producer {
	return func() actor.Actor {
		return &Actor{p: p, log: zerolog.New(zerolog.ConsoleWriter{Out: p.Stderr, NoColor: true, TimeFormat: time.RFC3339Nano}).
			Level(zerolog.WarnLevel).With().Timestamp().Logger()}
	}
}

// Spawn starts the bootstrap actor, the root of the tree, which runs the
// start-up sequence at once.
func Spawn(p Params) (*actor.PID, error) {
	props := p.System.Registry.Props(Kind, New(p), childStrategy(p.System))
	return p.System.Root.SpawnNamed(props, Kind)
}

// childStrategy supervises the runtime actors: one-for-one with exponential
// backoff from 1 s to 30 s. More than 10 failures within 5 minutes, or a
// fatal error, escalates to the bootstrap actor, which stops the node agent
// with exit code 1 for its service manager to restart it.
func childStrategy(system *supervision.System) *supervision.Backoff {
	self := actor.NewPID(system.Address(), Kind)
	return &supervision.Backoff{
		Initial:     time.Second,
		Max:         30 * time.Second,
		ResetAfter:  5 * time.Minute,
		MaxRestarts: 10,
		Registry:    system.Registry,
		GiveUp: func(child *actor.PID, reason any) {
			supervision.TellFromOutside(system.ActorSystem, self, &messages.ChildFailedFatally{
				Child: child.Id, Reason: fmt.Sprint(reason), At: time.Now()})
		},
	}
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		supervision.Tell(ctx, ctx.Self(), &messages.RunStep{Step: steps[0].name})
	case *messages.RunStep:
		a.runStep(ctx, m.Step)
	case *messages.Shutdown:
		a.log.Info().Str("signal", m.Signal).Msg("shutting down: stopping the runtime actors in reverse order of start")
		a.shutdown(ctx, ExitOK)
	case *messages.ChildFailedFatally:
		a.log.Error().Str("actor", m.Child).Str("reason", m.Reason).Msg("a runtime actor failed beyond repair; stopping")
		a.forget(m.Child)
		a.shutdown(ctx, ExitFailure)
	case *actor.Terminated:
		a.forget(m.Who.Id)
		if a.stopping && a.stoppingChild != nil && a.stoppingChild.Id == m.Who.Id {
			a.stopNext(ctx)
		}
	}
}

// runStep runs one start-up step, records and logs it, and sends the next.
func (a *Actor) runStep(ctx actor.Context, name string) {
	if a.stopping {
		return // a signal arrived between two steps
	}
	idx := stepIndex(name)
	if idx < 0 {
		panic(fmt.Sprintf("bootstrap: unknown step %q", name))
	}
	s := steps[idx]
	started := time.Now()
	outcome, err := s.run(a, ctx)
	rec := supervision.Step{Name: s.name, Started: started, Duration: time.Since(started)}
	if err != nil {
		rec.Err = err.Error()
	}
	a.p.System.Registry.RecordStep(rec)
	switch {
	case err != nil:
		if outcome != reported {
			a.log.Error().Msgf("%s: %v", s.title, err)
		}
		a.shutdown(ctx, ExitFailure)
	case outcome == exitNow:
		a.shutdown(ctx, ExitOK)
	default:
		a.logStep(rec)
		if idx+1 < len(steps) {
			supervision.Tell(ctx, ctx.Self(), &messages.RunStep{Step: steps[idx+1].name})
		}
	}
}

func (a *Actor) logStep(s supervision.Step) {
	a.log.Info().Str("step", s.Name).Stringer("duration", s.Duration).Msg("start-up step done")
}

// shutdown stops the runtime actors one at a time, last started first, and
// exits with code once they are all gone.
func (a *Actor) shutdown(ctx actor.Context, code int) {
	if code > a.exitCode {
		a.exitCode = code
	}
	if a.stopping {
		return
	}
	a.stopping = true
	a.stopNext(ctx)
}

func (a *Actor) stopNext(ctx actor.Context) {
	if len(a.children) == 0 {
		a.stoppingChild = nil
		a.exit(a.exitCode)
		return
	}
	a.stoppingChild = a.children[len(a.children)-1]
	a.log.Debug().Str("child", a.stoppingChild.Id).Msg("stopping")
	ctx.Stop(a.stoppingChild)
}

// forget drops a child that is gone (or going) from the shutdown order.
func (a *Actor) forget(id string) {
	for i, c := range a.children {
		if c.Id == id {
			a.children = append(a.children[:i], a.children[i+1:]...)
			return
		}
	}
}

func (a *Actor) exit(code int) {
	if a.exited {
		return
	}
	a.exited = true
	a.stopServingCertificate()
	if a.deps != nil {
		a.deps.Close()
	}
	if code == ExitOK && a.cfg != nil && !a.cmdline.Options.DumpConfig {
		a.log.Info().Msg("all actors stopped; exiting")
	}
	a.p.Exit(code)
}
