// Package kubeletapi holds the kubelet-API actor: it serves the kubelet's HTTP
// API (docs/api.md). Its listeners, as upstream's, and one of actorlet's
// own (docs/security.md says who can reach which path):
//   - the main API on address:port (10250 by default), HTTPS, every request
//     authenticated and authorized (server/auth): pods, logs, exec, attach,
//     port-forward, run, stats, metrics, configz, and actorlet's debugging
//     handlers (the dashboard, pprof, fault injection), which the API
//     server's node proxy reaches;
//   - the healthz listener (127.0.0.1:10248 by default, plain HTTP):
//     /healthz only;
//   - the read-only port (off unless readOnlyPort is set): /healthz, /pods,
//     /stats/summary, /metrics, /metrics/probes, /metrics/resource and
//     /metrics/cadvisor without authentication;
//   - the debug listener (off unless --debug-address is set, actorlet
//     only): the debugging handlers in plain HTTP, for development.
//
// The HTTP servers run in their own goroutines and reach the other actors
// with requests that time out, never with shared state. /pods and /healthz
// answer from a snapshot of the pod-manager's and PLEG's answers, taken at
// most once per snapshotMaxAge however many requests come in, so that a
// flood of requests does not reach the pod actors' mailboxes.
package kubeletapi

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/actorlet/actorlet/internal/metrics"
	stdlog "log"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"
	"go.opentelemetry.io/otel/trace"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/actorlet/actorlet/internal/kubeletapi/auth"
	"github.com/actorlet/actorlet/internal/kubeletapi/stats"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Kind is this actor's kind in the registry and on the dashboard.
const Kind = "kubelet-api"

// askTimeout bounds how long a health check waits for an actor: one too busy
// to answer in that time is not healthy.
const askTimeout = 2 * time.Second

// Params configure the kubelet-API actor.
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
	// ServingCert (ServingCertificate) or GetServingCert, and Auth guard
	// the API; a certificate and Auth are needed when Port is set.
	ServingCert *tls.Certificate
	// GetServingCert, when set, gives each handshake its certificate
	// (serverTLSBootstrap: the rotating certificate of
	// certificates.ServingManager); while it fails, handshakes fail and
	// nothing is served.
	GetServingCert func(*tls.ClientHelloInfo) (*tls.Certificate, error)
	// TLS are the API's TLS version, cipher suites and curves.
	TLS      TLSOptions
	Auth     *auth.Filter
	NodeName string
	// Runtime is the CRI runtime service: streaming URLs, container lookups
	// and logs.
	Runtime runtimeapi.RuntimeServiceClient
	// Stats answers /stats/summary, /metrics/resource and
	// /metrics/cadvisor; one provider for every listener, since it keeps
	// the CPU samples that rates are computed from.
	Stats *stats.Provider
	// SplitLogStreams is the PodLogsQuerySplitStreams feature gate: logs
	// of one stream (stdout or stderr) only.
	SplitLogStreams bool
	// Configz is the effective configuration, served at /configz; the
	// the kubelet-API actor keeps its own copy.
	Configz *kubeletconfig.KubeletConfiguration
	// Debugging is what enableDebuggingHandlers, enableSystemLogHandler,
	// enableProfilingHandler, enableContentionProfiling and
	// enableDebugFlagsHandler turn on.
	Debugging Debugging
	// DebugAddress (--debug-address, host:port) serves the debugging
	// handlers in plain HTTP, without authentication; empty turns it off.
	DebugAddress string
	// LogDir is what /logs/ serves; empty means /var/log, as upstream.
	LogDir string
	// FaultInjection enables POST /debug/inject/panic on the kubelet API
	// and the debug listener.
	FaultInjection bool
	PodManager     *actor.PID
	PLEG           *actor.PID
	System         *supervision.System
	// Tracer makes the server spans of the API's routes (tracing); nil:
	// none.
	Tracer trace.TracerProvider
	Log    zerolog.Logger
}

// Debugging are the KubeletConfiguration's switches of the debugging
// handlers, as upstream applies them: on the kubelet API, SystemLogs,
// Profiling and Flags only count when Handlers is on. Profiling also governs pprof on
// the debug listener.
type Debugging struct {
	// Handlers (enableDebuggingHandlers) serves exec, attach, port-forward,
	// run, container logs, running pods, /logs/, pprof and the dashboard on
	// the kubelet API; off, they answer 405 "Debug endpoints are disabled.".
	Handlers bool
	// SystemLogs (enableSystemLogHandler) serves /logs/.
	SystemLogs bool
	// SystemLogQuery (enableSystemLogQuery with the NodeLogQuery gate)
	// answers /logs/ with query parameters from the journal or a log
	// file (internal/kubeletapi/nodelogs).
	SystemLogQuery bool
	// Profiling (enableProfilingHandler) serves /debug/pprof/.
	Profiling bool
	// ContentionProfiling (enableContentionProfiling) records every
	// blocking event for pprof's block profile, when Profiling is on.
	ContentionProfiling bool
	// Flags (enableDebugFlagsHandler) serves PUT /debug/flags/v, which
	// sets the log verbosity.
	Flags bool
}

// Actor is the kubelet-API actor. Its HTTP servers run in their own
// goroutines and reach the other actors with requests that time out.
type Actor struct {
	// Lifetime is cancelled when the actor stops or restarts: the I/O it
	// started ends with it.
	supervision.Lifetime
	p       Params
	log     zerolog.Logger
	servers []*http.Server
	state   *stateCache
}

// New returns a producer of the kubelet-API actor.
func New(p Params) actor.Producer {
	return func() actor.Actor {
		a := &Actor{p: p, log: p.Log.With().Str("actor", Kind).Logger()}
		a.state = &stateCache{fetch: a.fetchState}
		return a
	}
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
		addr := net.JoinHostPort(a.p.HealthzAddress, strconv.Itoa(int(a.p.HealthzPort)))
		if err := a.serve("healthz", addr, canonicalPaths(a.healthzMux()), nil, shortLived); err != nil {
			return err
		}
	}
	if a.p.Port > 0 {
		tlsConfig, handler, err := a.secureAPI()
		if err != nil {
			return err
		}
		addr := net.JoinHostPort(a.p.Address, strconv.Itoa(int(a.p.Port)))
		if err := a.serve("kubelet API", addr, metrics.InstrumentHTTP(metrics.ServerReadWrite, handler), tlsConfig, streaming); err != nil {
			return err
		}
	}
	if a.p.ReadOnlyPort > 0 {
		addr := net.JoinHostPort(a.p.Address, strconv.Itoa(int(a.p.ReadOnlyPort)))
		if err := a.serve("read-only API", addr, metrics.InstrumentHTTP(metrics.ServerReadOnly, canonicalPaths(a.traced(a.readOnlyMux(), true))), nil, streaming); err != nil {
			return err
		}
	}
	if a.p.DebugAddress != "" {
		if err := a.serve("debug", a.p.DebugAddress, canonicalPaths(a.debugMux()), nil, streaming); err != nil {
			return err
		}
	}
	if a.p.Debugging.Profiling && a.p.Debugging.ContentionProfiling && (a.p.Debugging.Handlers && a.p.Port > 0 || a.p.DebugAddress != "") {
		// As upstream: every blocking event is sampled, for as long as
		// the process lives.
		runtime.SetBlockProfileRate(1)
	}
	return nil
}

// timeouts are an http.Server's limits on a connection.
type timeouts struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
}

// streaming are the limits of the listeners that serve long responses (logs
// that follow, exec, attach, port-forward, the dashboard's event stream):
// upstream's kubelet server's (ReadTimeout and WriteTimeout 4 hours, idle
// connections closed after 90 seconds, headers up to 1 MiB), plus a bound on
// the time to send the headers, which upstream does not have: a client that
// opens connections and never finishes its headers holds nothing for long.
// An upgraded connection (exec, attach, port-forward) keeps the 4-hour
// deadlines, as upstream's.
var streaming = timeouts{readHeader: 10 * time.Second, read: 4 * time.Hour, write: 4 * time.Hour,
	idle: 90 * time.Second, maxHeaderBytes: 1 << 20}

// shortLived are the healthz listener's: it answers one short request per
// connection's turn, so whole requests and answers are bounded too
// (upstream's healthz server has no limits at all).
var shortLived = timeouts{readHeader: 10 * time.Second, read: 30 * time.Second, write: 30 * time.Second,
	idle: 90 * time.Second, maxHeaderBytes: 1 << 20}

// serve listens on addr and serves handler there with the limits t.
func (a *Actor) serve(name, addr string, handler http.Handler, tlsConfig *tls.Config, t timeouts) error {
	_, err := a.serveOn(name, addr, handler, tlsConfig, t)
	return err
}

// serveOn is serve, returning the address it listens on.
func (a *Actor) serveOn(name, addr string, handler http.Handler, tlsConfig *tls.Config, t timeouts) (net.Addr, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("%s listener on %s: %w", name, addr, err)
	}
	if tlsConfig != nil {
		l = tls.NewListener(l, tlsConfig)
	}
	// Shutdown cancels the requests' context, so that long-lived responses
	// (the dashboard's event stream) end instead of holding Shutdown up.
	base, cancel := context.WithCancel(a.Context())
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: t.readHeader, ReadTimeout: t.read,
		WriteTimeout: t.write, IdleTimeout: t.idle, MaxHeaderBytes: t.maxHeaderBytes,
		BaseContext: func(net.Listener) context.Context { return base },
		// The server's own errors (a client's failed TLS handshake, as
		// every one is before a serving certificate is issued) go to the
		// agent's log at debug level: anyone who reaches the port can
		// cause them, and they must not flood stderr.
		ErrorLog: stdlog.New(serverErrorWriter{a.log.With().Str("listener", name).Logger()}, "", 0)}
	srv.RegisterOnShutdown(cancel)
	a.servers = append(a.servers, srv)
	scheme := "http"
	if tlsConfig != nil {
		scheme = "https"
	}
	a.log.Info().Str("address", l.Addr().String()).Str("url", scheme+"://"+l.Addr().String()+"/").Msgf("%s listening", name)
	go func() {
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error().Err(err).Str("address", addr).Msgf("%s stopped serving", name)
		}
	}()
	return l.Addr(), nil
}

// serverErrorWriter is the io.Writer of an http.Server's ErrorLog.
type serverErrorWriter struct{ log zerolog.Logger }

func (w serverErrorWriter) Write(p []byte) (int, error) {
	w.log.Debug().Msg(strings.TrimSpace(string(p)))
	return len(p), nil
}

// shutdown closes the listeners and gives the requests under way a moment
// to finish. It runs as the actor stops, when its Lifetime ends: the
// moment is bounded by its own timeout, not by that context.
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
