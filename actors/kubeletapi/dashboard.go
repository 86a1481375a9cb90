package kubeletapi

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"github.com/actorlet/actorlet/supervision"
)

// The dashboard's page, script and style, embedded: the page loads nothing
// from the network.
//
//go:embed assets
var assets embed.FS

// SnapshotInterval is how often GET /debug/actors/events sends a snapshot.
const SnapshotInterval = 500 * time.Millisecond

// Snapshot is the state of the actor tree at one time: the body of
// GET /debug/actors.json and of every event of GET /debug/actors/events.
// docs/dashboard.md documents its schema.
type Snapshot struct {
	Actors []supervision.ActorInfo `json:"actors"`
	Edges  []supervision.Edge      `json:"edges"`
	Steps  []supervision.Step      `json:"steps"`
	Time   time.Time               `json:"time"`
}

// TakeSnapshot reads reg now. Its lists are never nil, so that they encode
// as [] rather than null.
func TakeSnapshot(reg *supervision.Registry) Snapshot {
	s := Snapshot{Actors: reg.Actors(), Edges: reg.Edges(), Steps: reg.Steps(), Time: time.Now()}
	if s.Actors == nil {
		s.Actors = []supervision.ActorInfo{}
	}
	if s.Edges == nil {
		s.Edges = []supervision.Edge{}
	}
	if s.Steps == nil {
		s.Steps = []supervision.Step{}
	}
	return s
}

// RegisterDashboard adds the live actor dashboard to mux:
//
//	GET /debug/actors                  the dashboard page
//	GET /debug/actors/assets/...       its script and style (embedded)
//	GET /debug/actors.json             a Snapshot
//	GET /debug/actors/events           a Snapshot every SnapshotInterval (Server-Sent Events)
//	GET /debug/actors/timeline?path=P  the last messages the actor at P received
//
// The page refers to its assets and streams with relative URLs, so that it
// works under any prefix: through the API server's node proxy and
// kubectl proxy as well as on the debug listener.
func RegisterDashboard(mux *http.ServeMux, reg *supervision.Registry) {
	d := &dashboard{reg: reg}
	static, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree always has assets/
	}
	mux.HandleFunc("GET /debug/actors", d.page)
	mux.Handle("GET /debug/actors/assets/", http.StripPrefix("/debug/actors/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /debug/actors.json", d.snapshot)
	mux.HandleFunc("GET /debug/actors/events", d.events)
	mux.HandleFunc("GET /debug/actors/timeline", d.timeline)
}

type dashboard struct {
	reg *supervision.Registry
}

func (d *dashboard) page(w http.ResponseWriter, _ *http.Request) {
	body, err := assets.ReadFile("assets/dashboard.html")
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// Nothing but this origin: the page must work air-gapped anyway.
	w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:")
	w.Header().Set("Cache-Control", "no-cache")
	_, _ = w.Write(body)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(v)
}

func (d *dashboard) snapshot(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, TakeSnapshot(d.reg))
}

func (d *dashboard) timeline(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Query().Get("path")
	if path == "" {
		http.Error(w, "missing query parameter path (the actor's path, e.g. bootstrap/pod-manager)", http.StatusBadRequest)
		return
	}
	if _, ok := d.reg.Actor(path); !ok {
		http.Error(w, fmt.Sprintf("no live actor at %q", path), http.StatusNotFound)
		return
	}
	records := d.reg.Timeline(path)
	if records == nil {
		records = []supervision.MessageRecord{}
	}
	writeJSON(w, records)
}

// events streams a Snapshot as one Server-Sent Event ("data: JSON") right
// away and then every SnapshotInterval, until the client goes away or the
// server shuts down (both cancel the request's context).
func (d *dashboard) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Tell EventSource to reconnect quickly if the stream breaks.
	if _, err := fmt.Fprint(w, "retry: 1000\n\n"); err != nil {
		return
	}
	tick := time.NewTicker(SnapshotInterval)
	defer tick.Stop()
	for {
		body, err := json.Marshal(TakeSnapshot(d.reg))
		if err != nil {
			return
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", body); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}
