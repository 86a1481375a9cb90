// Package apiserver holds the api-server actor: it serves the kubelet's HTTP
// endpoints. Today: the healthz listener (/healthz, and with
// --debug-fault-injection POST /debug/inject/panic; the live actor dashboard
// under /debug/actors and pprof under /debug/pprof/, dashboard.go) and the
// read-only port (/healthz, /pods). The authenticated API, metrics and stats
// come with issue #6.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "api-server"

// askTimeout bounds how long a health check waits for an actor: one too busy
// to answer in that time is not healthy.
const askTimeout = 2 * time.Second

// Params configure the api-server actor.
type Params struct {
	// HealthzAddress and HealthzPort: the healthz listener; port 0 disables it.
	HealthzAddress string
	HealthzPort    int32
	// Address and ReadOnlyPort: the unauthenticated read-only API; port 0
	// disables it.
	Address      string
	ReadOnlyPort int32
	// FaultInjection enables POST /debug/inject/panic on the healthz listener.
	FaultInjection bool
	PodManager     *actor.PID
	PLEG           *actor.PID
	System         *supervision.System
	Log            zerolog.Logger
}

// Actor is the api-server actor. Its HTTP servers run in their own
// goroutines and reach the other actors with requests that time out.
type Actor struct {
	p       Params
	log     zerolog.Logger
	servers []*http.Server
}

// New returns a producer of the api-server actor.
func New(p Params) actor.Producer {
	return func() actor.Actor { return &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()} }
}

// Receive implements actor.Actor.
func (a *Actor) Receive(ctx actor.Context) {
	switch ctx.Message().(type) {
	case *actor.Started:
		if err := a.listen(); err != nil {
			// A node agent that cannot serve its endpoints is broken, as
			// upstream's: let bootstrap stop with the reason.
			panic(supervision.Fatal(err))
		}
	case *actor.Restarting, *actor.Stopping:
		a.shutdown()
	}
}

func (a *Actor) listen() error {
	if a.p.HealthzPort > 0 {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", a.healthz)
		if a.p.System != nil {
			RegisterDebugHandlers(mux, a.p.System.Registry)
		}
		if a.p.FaultInjection {
			mux.HandleFunc("/debug/inject/panic", a.injectPanic)
		}
		if err := a.serve("healthz", a.p.HealthzAddress, a.p.HealthzPort, mux); err != nil {
			return err
		}
	}
	if a.p.ReadOnlyPort > 0 {
		mux := http.NewServeMux()
		mux.HandleFunc("/healthz", a.healthz)
		mux.HandleFunc("/pods", a.pods)
		mux.HandleFunc("/pods/", a.pods)
		if err := a.serve("read-only API", a.p.Address, a.p.ReadOnlyPort, mux); err != nil {
			return err
		}
	}
	return nil
}

func (a *Actor) serve(name, address string, port int32, handler http.Handler) error {
	addr := net.JoinHostPort(address, strconv.Itoa(int(port)))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listener on %s: %w", name, addr, err)
	}
	// Shutdown cancels the requests' context, so that long-lived responses
	// (the dashboard's event stream) end instead of holding Shutdown up.
	base, cancel := context.WithCancel(context.Background())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return base }}
	srv.RegisterOnShutdown(cancel)
	a.servers = append(a.servers, srv)
	a.log.Info().Str("address", l.Addr().String()).Msgf("%s listening", name)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error().Err(err).Str("address", addr).Msgf("%s stopped serving", name)
		}
	}()
	return nil
}

func (a *Actor) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	for _, srv := range a.servers {
		_ = srv.Shutdown(ctx)
	}
	a.servers = nil
}

// ask sends msg to pid and waits for the answer, from an HTTP handler's
// goroutine (never from inside an actor).
func (a *Actor) ask(pid *actor.PID, msg messages.Message) (any, error) {
	return a.p.System.Root.RequestFuture(pid, msg, askTimeout).Result()
}
