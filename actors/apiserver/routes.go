package apiserver

import (
	"crypto/tls"
	"fmt"
	"net/http"

	"github.com/actorlet/actorlet/metrics"
)

// healthzMux is the healthz listener's: health, and the operator's live
// view of the actor tree (loopback by default, no authentication).
func (a *Actor) healthzMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", a.healthz)
	if a.p.System != nil {
		RegisterDebugHandlers(mux, a.p.System.Registry)
	}
	if a.p.FaultInjection {
		mux.HandleFunc("/debug/inject/panic", a.injectPanic)
	}
	return mux
}

// readOnlyMux is the read-only port's: upstream's handlers that need no
// authentication.
func (a *Actor) readOnlyMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", a.healthz)
	mux.HandleFunc("/pods", a.pods)
	mux.HandleFunc("/pods/", a.pods)
	mux.Handle("/metrics", metrics.Handler())
	if a.p.Stats != nil {
		mux.Handle("/stats/summary", a.p.Stats.SummaryHandler())
		mux.Handle("/metrics/resource", a.p.Stats.ResourceMetricsHandler())
		mux.Handle("/spec", a.p.Stats.SpecHandler())
		mux.Handle("/spec/", a.p.Stats.SpecHandler())
	}
	return mux
}

// apiMux is the authenticated API's: every handler, as upstream's
// InstallDefaultHandlers, InstallDebuggingHandlers and
// InstallAuthRequiredHandlers.
func (a *Actor) apiMux() *http.ServeMux {
	mux := a.readOnlyMux()
	mux.HandleFunc("/runningpods/", a.runningPods)
	mux.HandleFunc("/exec/", a.exec)
	mux.HandleFunc("/attach/", a.attach)
	mux.HandleFunc("/portForward/", a.portForward)
	mux.HandleFunc("/run/", a.run)
	mux.HandleFunc("/containerLogs/", a.containerLogs)
	mux.HandleFunc("/configz", a.configz)
	mux.Handle("/logs/", http.StripPrefix("/logs/", http.FileServer(http.Dir(nodeLogDir))))
	if a.p.System != nil {
		RegisterDebugHandlers(mux, a.p.System.Registry)
	}
	return mux
}

// nodeLogDir is what /logs/ serves, as upstream.
const nodeLogDir = "/var/log/"

// secureAPI builds the TLS configuration and the guarded handler of the
// main API.
func (a *Actor) secureAPI() (*tls.Config, http.Handler, error) {
	if a.p.ServingCert == nil || a.p.Auth == nil {
		return nil, nil, fmt.Errorf("kubelet API on port %d: no serving certificate or authenticator", a.p.Port)
	}
	// HTTP/1.1 only: the streaming endpoints upgrade the connection, which
	// HTTP/2 cannot.
	base := &tls.Config{Certificates: []tls.Certificate{*a.p.ServingCert}, MinVersion: tls.VersionTLS12, NextProtos: []string{"http/1.1"}}
	return a.p.Auth.TLSConfig(base), a.p.Auth.Wrap(a.apiMux()), nil
}
