package kubeletapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/pprof"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/actorlet/actorlet/internal/metrics"
)

// healthzMux is the healthz listener's: /healthz and nothing else. It is
// unauthenticated, and hostNetwork pods share the host's loopback it listens
// on, so nothing else belongs there (docs/security.md).
func (a *Actor) healthzMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", a.healthz)
	return mux
}

// readOnlyMux is the read-only port's: upstream's handlers that need no
// authentication. /spec is not among them: upstream v1.37 serves cAdvisor's
// machine description on no listener.
func (a *Actor) readOnlyMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", a.healthz)
	mux.HandleFunc("/pods", a.pods)
	mux.HandleFunc("/pods/", a.pods)
	mux.Handle("/metrics/probes", metrics.ProbesHandler())
	if a.p.Stats == nil {
		mux.Handle("/metrics", metrics.Handler())
	} else {
		mux.Handle("/metrics", metrics.Handler(func(ctx context.Context) prometheus.Collector {
			return a.p.Stats.VolumeStatsCollector(ctx, a.listPods)
		}))
		mux.Handle("/stats/summary", a.p.Stats.SummaryHandler(a.listPods))
		mux.Handle("/metrics/resource", a.p.Stats.ResourceMetricsHandler())
		mux.Handle("/metrics/cadvisor", a.p.Stats.CadvisorMetricsHandler())
		// Its series are cAdvisor's, as upstream's with the
		// PodAndContainerStatsFromCRI gate off.
		metrics.SetMetricsProvider(metrics.ProviderCadvisor)
	}
	return mux
}

// Upstream's answers for the handlers that its configuration turns off,
// each with status 405.
const (
	debuggingDisabled = "Debug endpoints are disabled."
	logsDisabled      = "logs endpoint is disabled."
	profilingDisabled = "profiling endpoint is disabled."
)

// debuggingPaths are the subtrees enableDebuggingHandlers: false turns off:
// upstream's (InstallDebuggingDisabledHandlers), and with /debug/ rather than
// /debug/pprof/ also actorlet's dashboard and fault injection.
var debuggingPaths = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", "/debug/", "/logs/"}

// disabled answers every request with upstream's 405 and message.
func disabled(message string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, message, http.StatusMethodNotAllowed)
	})
}

// apiMux is the authenticated API's: every handler, as upstream's
// InstallDefaultHandlers, InstallDebuggingHandlers (or
// InstallDebuggingDisabledHandlers) and InstallAuthRequiredHandlers, and
// actorlet's own debugging handlers.
func (a *Actor) apiMux() *http.ServeMux {
	mux := a.readOnlyMux()
	if !a.p.Debugging.Handlers {
		for _, p := range debuggingPaths {
			mux.Handle(p, disabled(debuggingDisabled))
		}
		return mux
	}
	mux.HandleFunc("/runningpods/", a.runningPods)
	mux.HandleFunc("/exec/", a.exec)
	mux.HandleFunc("/attach/", a.attach)
	mux.HandleFunc("/portForward/", a.portForward)
	mux.HandleFunc("/run/", a.run)
	mux.HandleFunc("/containerLogs/", a.containerLogs)
	mux.HandleFunc("/configz", a.configz)
	if a.p.Debugging.SystemLogs {
		mux.Handle("/logs/", a.systemLogs())
	} else {
		mux.Handle("/logs/", disabled(logsDisabled))
	}
	if a.p.Debugging.Flags {
		mux.HandleFunc("/debug/flags/v", debugFlagsV)
	} else {
		mux.Handle("/debug/flags/v", disabled(flagsDisabled))
	}
	a.addDebugHandlers(mux)
	return mux
}

// debugMux is the --debug-address listener's: actorlet's debugging handlers
// only, for development. Setting the flag is the operator's choice to serve
// them, so enableDebuggingHandlers does not apply; enableProfilingHandler
// does.
func (a *Actor) debugMux() *http.ServeMux {
	mux := http.NewServeMux()
	a.addDebugHandlers(mux)
	return mux
}

// addDebugHandlers adds the dashboard, pprof (or its 405 when
// enableProfilingHandler is false) and, with --debug-fault-injection, the
// fault injection endpoint.
func (a *Actor) addDebugHandlers(mux *http.ServeMux) {
	if a.p.System != nil {
		RegisterDashboard(mux, a.p.System.Registry)
	}
	if a.p.Debugging.Profiling {
		registerPprof(mux)
	} else {
		mux.Handle("/debug/pprof/", disabled(profilingDisabled))
	}
	if a.p.FaultInjection {
		mux.HandleFunc("/debug/inject/panic", a.injectPanic)
	}
}

// registerPprof adds net/http/pprof explicitly to mux: the default mux is
// served nowhere.
func registerPprof(mux *http.ServeMux) {
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
}

// secureAPI builds the TLS configuration and the guarded handler of the
// main API.
func (a *Actor) secureAPI() (*tls.Config, http.Handler, error) {
	if a.p.ServingCert == nil && a.p.GetServingCert == nil || a.p.Auth == nil {
		return nil, nil, fmt.Errorf("kubelet API on port %d: no serving certificate or authenticator", a.p.Port)
	}
	// HTTP/1.1 only: the streaming endpoints upgrade the connection, which
	// HTTP/2 cannot.
	// tlsMinVersion, tlsCipherSuites and tlsCurvePreferences, as upstream.
	base := &tls.Config{MinVersion: a.p.TLS.MinVersion, CipherSuites: a.p.TLS.CipherSuites,
		CurvePreferences: a.p.TLS.CurvePreferences, NextProtos: []string{"http/1.1"}}
	if base.MinVersion == 0 {
		base.MinVersion = tls.VersionTLS12
	}
	if a.p.GetServingCert != nil {
		// Asked at each handshake: a rotated certificate is served from
		// the next connection on.
		base.GetCertificate = a.p.GetServingCert
	} else {
		base.Certificates = []tls.Certificate{*a.p.ServingCert}
	}
	return a.p.Auth.TLSConfig(base), canonicalPaths(a.p.Auth.Wrap(a.apiMux())), nil
}

// canonicalPaths answers 400 to a request whose path is not in its one
// canonical form: an empty segment ("//"), a dot segment ("/./", "/../",
// also percent-encoded) or an encoded slash ("%2F"). It guards every
// listener, ahead of authentication: authorization reads the path as
// sent, while net/http's mux routes by the escaped path and redirects a
// dot segment to the cleaned one, so a path the two could read differently
// never gets that far. No client of the kubelet API sends such paths.
func canonicalPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if reason := nonCanonical(r); reason != "" {
			http.Error(w, fmt.Sprintf("invalid URL path %q: %s", r.URL.EscapedPath(), reason), http.StatusBadRequest)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// nonCanonical says what is wrong with r's path, or "" when nothing is.
func nonCanonical(r *http.Request) string {
	p := r.URL.Path
	if !strings.HasPrefix(p, "/") {
		return "not absolute"
	}
	if strings.Contains(strings.ToLower(r.URL.RawPath), "%2f") {
		return "encoded slash"
	}
	for i, seg := range strings.Split(p[1:], "/") {
		switch {
		case seg == "." || seg == "..":
			return "dot segment"
		case seg == "" && i < strings.Count(p, "/")-1:
			return "empty segment"
		}
	}
	return ""
}
