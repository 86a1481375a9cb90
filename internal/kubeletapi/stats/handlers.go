package stats

import (
	"encoding/json"
	"fmt"
	"net/http"
)

// SummaryHandler serves /stats/summary as upstream: GET or POST, JSON
// indented as go-restful writes it; only_cpu_and_memory=true (given once)
// leaves out network, filesystems and the process limit. A failure, a CRI
// call's included, is a 500 naming what failed. pods (nil: none) are the
// node's pods, whose specs name their volumes.
func (p *Provider) SummaryHandler(pods PodLister) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, fmt.Sprintf("method %s not allowed on /stats/summary", r.Method), http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			p.internalError(w, r, fmt.Errorf("parse form failed: %w", err))
			return
		}
		v, found := r.Form["only_cpu_and_memory"]
		onlyCPUAndMemory := found && len(v) == 1 && v[0] == "true"
		var specs PodSpecs
		if !onlyCPUAndMemory {
			specs = p.podSpecs(r.Context(), pods)
		}
		s, err := p.SummaryFor(r.Context(), onlyCPUAndMemory, specs)
		if err != nil {
			p.internalError(w, r, err)
			return
		}
		p.writeJSON(w, r, s)
	})
}

// internalError answers as go-restful's WriteErrorString does for
// upstream's stats handlers.
func (p *Provider) internalError(w http.ResponseWriter, r *http.Request, err error) {
	p.Log.Error().Err(err).Str("path", r.URL.Path).Msg("HTTP InternalServerError serving")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusInternalServerError)
	fmt.Fprintf(w, "Internal Error: %v", err)
}

func (p *Provider) writeJSON(w http.ResponseWriter, r *http.Request, v any) {
	out, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		p.internalError(w, r, fmt.Errorf("encode %T: %w", v, err))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil {
		p.Log.Debug().Err(err).Str("path", r.URL.Path).Msg("response not written")
	}
}
