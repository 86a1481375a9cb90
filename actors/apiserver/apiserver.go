// Package apiserver holds the api-server actor: it serves the kubelet's HTTP
// API (docs/api.md). Three listeners, as upstream:
//   - the main API on address:port (10250), HTTPS, every request
//     authenticated and authorized (server/auth): pods, logs, exec, attach,
//     port-forward, run, stats, metrics, configz, the dashboard and pprof;
//   - the healthz listener (127.0.0.1:10248, plain HTTP): /healthz, and the
//     live actor dashboard and pprof for the node's own operator;
//   - the read-only port (off unless readOnlyPort is set): /healthz, /pods,
//     /stats/summary, /metrics and /spec without authentication.
//
// The HTTP servers run in their own goroutines and reach the other actors
// with requests that time out, never with shared state.
package apiserver

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/server/auth"
	"github.com/actorlet/actorlet/server/stats"
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
	// Address and Port: the authenticated API; port 0 disables it.
	Address string
	Port    int32
	// ReadOnlyPort: the unauthenticated read-only API on Address; 0
	// disables it.
	ReadOnlyPort int32
	// ServingCert (ServingCertificate) and Auth guard the API; both are
	// needed when Port is set.
	ServingCert *tls.Certificate
	Auth        *auth.Filter
	NodeName    string
	// Runtime is the CRI runtime service: streaming URLs, container lookups
	// and logs.
	Runtime runtimeapi.RuntimeServiceClient
	// Stats answers /stats/summary, /metrics/resource and /spec; one
	// provider for every listener, since it keeps the CPU samples that
	// rates are computed from.
	Stats *stats.Provider
	// SplitLogStreams is the PodLogsQuerySplitStreams feature gate: logs
	// of one stream (stdout or stderr) only.
	SplitLogStreams bool
	// Configz is the effective configuration, served at /configz; the
	// api-server keeps its own copy.
	Configz *kubeletconfig.KubeletConfiguration
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
		if err := a.serve("healthz", a.p.HealthzAddress, a.p.HealthzPort, a.healthzMux(), nil); err != nil {
			return err
		}
	}
	if a.p.Port > 0 {
		tlsConfig, handler, err := a.secureAPI()
		if err != nil {
			return err
		}
		if err := a.serve("kubelet API", a.p.Address, a.p.Port, handler, tlsConfig); err != nil {
			return err
		}
	}
	if a.p.ReadOnlyPort > 0 {
		if err := a.serve("read-only API", a.p.Address, a.p.ReadOnlyPort, a.readOnlyMux(), nil); err != nil {
			return err
		}
	}
	return nil
}

func (a *Actor) serve(name, address string, port int32, handler http.Handler, tlsConfig *tls.Config) error {
	addr := net.JoinHostPort(address, strconv.Itoa(int(port)))
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s listener on %s: %w", name, addr, err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
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
