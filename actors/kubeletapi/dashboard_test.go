package kubeletapi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/supervision"
)

type ping struct{ n string }

func (p *ping) Summary() string { return "ping " + p.n }

// spawnChild asks a testActor to spawn a child of the given kind and name.
type spawnChild struct{ kind, name string }

func (m *spawnChild) Summary() string { return "spawn " + m.kind + " " + m.name }

// testActor spawns children through the registry's Props when told to.
type testActor struct{ reg *supervision.Registry }

func (a *testActor) Receive(ctx actor.Context) {
	if m, ok := ctx.Message().(*spawnChild); ok {
		if _, err := ctx.SpawnNamed(a.reg.Props(m.kind, a.producer(), nil), m.name); err != nil {
			panic(err)
		}
	}
}

func (a *testActor) producer() actor.Producer {
	return func() actor.Actor { return &testActor{reg: a.reg} }
}

const workerPath = "bootstrap/pod-manager/default/web@uid-1"

// newTree starts bootstrap → pod-manager → one pod-worker, with a state set
// on the worker, and a server with the debug handlers.
func newTree(t *testing.T) (*supervision.System, *httptest.Server) {
	t.Helper()
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	reg := system.Registry
	root := &testActor{reg: reg}
	if _, err := system.Root.SpawnNamed(reg.Props("bootstrap", root.producer(), nil), "bootstrap"); err != nil {
		t.Fatal(err)
	}
	waitActor(t, reg, "bootstrap")
	tell(system, "bootstrap", &spawnChild{kind: "pod-manager", name: "pod-manager"})
	waitActor(t, reg, "bootstrap/pod-manager")
	tell(system, "bootstrap/pod-manager", &spawnChild{kind: "pod-worker", name: "default/web@uid-1"})
	waitActor(t, reg, workerPath)
	reg.SetState(workerPath, "syncing")
	reg.RecordStep(supervision.Step{Name: "load configuration", Started: time.Now(), Duration: 3 * time.Millisecond})

	mux := http.NewServeMux()
	RegisterDashboard(mux, reg)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return system, srv
}

func tell(system *supervision.System, path string, msg interface{ Summary() string }) {
	supervision.TellFromOutside(system.ActorSystem, actor.NewPID(system.Address(), path), msg)
}

func waitActor(t *testing.T, reg *supervision.Registry, path string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		if _, ok := reg.Actor(path); ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("actor %s never registered", path)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func get(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	res, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(body)
}

func TestActorsJSON(t *testing.T) {
	_, srv := newTree(t)
	res, body := get(t, srv.URL+"/debug/actors.json")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	var snap Snapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	want := map[string][2]string{ // path -> kind, parent
		"bootstrap":             {"bootstrap", ""},
		"bootstrap/pod-manager": {"pod-manager", "bootstrap"},
		workerPath:              {"pod-worker", "bootstrap/pod-manager"},
	}
	if len(snap.Actors) != len(want) {
		t.Fatalf("actors = %+v, want %d", snap.Actors, len(want))
	}
	for _, a := range snap.Actors {
		w, ok := want[a.Path]
		if !ok || a.Kind != w[0] || a.Parent != w[1] {
			t.Errorf("actor %+v, want kind/parent %v", a, w)
		}
		if wantState := map[bool]string{true: "syncing"}[a.Path == workerPath]; a.State != wantState {
			t.Errorf("%s state = %q, want %q", a.Path, a.State, wantState)
		}
	}
	if len(snap.Steps) != 1 || snap.Steps[0].Name != "load configuration" {
		t.Errorf("steps = %+v", snap.Steps)
	}
	if snap.Time.IsZero() {
		t.Error("no time")
	}
	// The raw schema, as documented in docs/dashboard.md.
	var raw map[string]any
	_ = json.Unmarshal([]byte(body), &raw)
	for _, k := range []string{"actors", "edges", "steps", "time"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("no %q in %s", k, body)
		}
	}
	if !strings.Contains(body, `"state":"syncing"`) || !strings.Contains(body, `"mailboxDepth"`) || !strings.Contains(body, `"meanHandlingNanos"`) {
		t.Errorf("actor fields missing from %s", body)
	}
	// The spawn messages flowed from outside to bootstrap and pod-manager.
	if !strings.Contains(body, `{"from":"external","to":"pod-manager","type":"kubeletapi.spawnChild","count":1}`) {
		t.Errorf("edge missing from %s", body)
	}
}

func TestTimeline(t *testing.T) {
	system, srv := newTree(t)
	tell(system, workerPath, &ping{n: "one"})
	tell(system, workerPath, &ping{n: "two"})

	var records []supervision.MessageRecord
	deadline := time.Now().Add(5 * time.Second)
	for {
		res, body := get(t, srv.URL+"/debug/actors/timeline?path="+workerPath)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("status %d: %s", res.StatusCode, body)
		}
		records = nil
		if err := json.Unmarshal([]byte(body), &records); err != nil {
			t.Fatalf("decode %s: %v", body, err)
		}
		if len(records) >= 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	var summaries []string
	for _, r := range records {
		if r.Type == "kubeletapi.ping" {
			summaries = append(summaries, r.Summary)
			if r.Sender != supervision.ExternalSender {
				t.Errorf("sender of %+v: want external", r)
			}
			if r.At.IsZero() {
				t.Errorf("record without time: %+v", r)
			}
		}
	}
	if strings.Join(summaries, ",") != "ping one,ping two" {
		t.Errorf("timeline pings = %q in %+v", summaries, records)
	}

	if res, _ := get(t, srv.URL+"/debug/actors/timeline?path=bootstrap/nobody"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: status %d, want 404", res.StatusCode)
	}
	if res, _ := get(t, srv.URL+"/debug/actors/timeline"); res.StatusCode != http.StatusBadRequest {
		t.Errorf("no path: status %d, want 400", res.StatusCode)
	}
}

func TestEventsStreamSnapshots(t *testing.T) {
	system, srv := newTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/debug/actors/events", nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}

	snaps := make(chan Snapshot)
	go func() {
		defer close(snaps)
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var s Snapshot
			if err := json.Unmarshal([]byte(data), &s); err != nil {
				t.Errorf("decode event %s: %v", data, err)
				return
			}
			select {
			case snaps <- s:
			case <-ctx.Done():
				return
			}
		}
	}()
	next := func() Snapshot {
		t.Helper()
		select {
		case s, ok := <-snaps:
			if !ok {
				t.Fatal("stream ended")
			}
			return s
		case <-time.After(2 * time.Second):
			t.Fatal("no snapshot within 2 s")
		}
		return Snapshot{}
	}
	first, second := next(), next()
	if len(first.Actors) != 3 || len(second.Actors) != 3 {
		t.Fatalf("snapshots list %d and %d actors, want 3", len(first.Actors), len(second.Actors))
	}
	if !second.Time.After(first.Time) {
		t.Errorf("second snapshot at %v, not after %v", second.Time, first.Time)
	}

	const newPath = "bootstrap/pod-manager/default/db@uid-2"
	spawned := time.Now()
	tell(system, "bootstrap/pod-manager", &spawnChild{kind: "pod-worker", name: "default/db@uid-2"})
	for {
		s := next()
		found := false
		for _, a := range s.Actors {
			found = found || a.Path == newPath
		}
		if found {
			break
		}
		if time.Since(spawned) > time.Second {
			t.Fatalf("new actor not in a snapshot %v after its spawn", time.Since(spawned))
		}
	}
}

func TestEventsStopWhenClientGoes(t *testing.T) {
	system := supervision.NewSystem(zerolog.Nop())
	defer system.Shutdown()
	mux := http.NewServeMux()
	RegisterDashboard(mux, system.Registry)
	ctx, cancel := context.WithCancel(context.Background())
	req := httptest.NewRequestWithContext(ctx, http.MethodGet, "/debug/actors/events", nil)
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		mux.ServeHTTP(rec, req)
		close(done)
	}()
	time.Sleep(50 * time.Millisecond)
	cancel()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("the stream did not end with its request's context")
	}
	if !strings.Contains(rec.Body.String(), `data: {"actors":[]`) {
		t.Errorf("first event: %q", rec.Body.String())
	}
}

// svgNamespace is the one URL the assets may name: a namespace identifier
// for createElementNS, never fetched.
const svgNamespace = "http://www.w3.org/2000/svg"

func TestPageServesEmbeddedAssetsOnly(t *testing.T) {
	_, srv := newTree(t)
	res, page := get(t, srv.URL+"/debug/actors")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") {
		t.Fatalf("status %d, content type %q", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if !strings.Contains(page, `<svg id="graph"`) {
		t.Error("no SVG container in the page")
	}
	if strings.Contains(page, "http://") || strings.Contains(page, "https://") || strings.Contains(page, `"//`) {
		t.Error("the page names a network URL")
	}
	refs := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	if len(refs) < 2 {
		t.Fatalf("page references %v, want its script and style", refs)
	}
	for _, ref := range refs {
		if ref[1] == "data:," {
			continue // the empty icon, so that the browser asks for no /favicon.ico
		}
		if !strings.HasPrefix(ref[1], "actors/assets/") {
			t.Errorf("page references %q, not an embedded asset", ref[1])
			continue
		}
		// Relative to /debug/actors.
		res, body := get(t, srv.URL+"/debug/"+ref[1])
		if res.StatusCode != http.StatusOK || body == "" {
			t.Errorf("%s: status %d", ref[1], res.StatusCode)
		}
		rest := strings.ReplaceAll(body, svgNamespace, "")
		if strings.Contains(rest, "http://") || strings.Contains(rest, "https://") {
			t.Errorf("%s names a network URL", ref[1])
		}
	}
}

// TestManyWorkersStayLight feeds the registry 110 pod-workers, the issue's
// scale: the snapshot sent twice a second and the page with its assets
// must stay small enough for a browser to take in without lag.
func TestManyWorkersStayLight(t *testing.T) {
	const workers = 110
	system, srv := newTree(t)
	for i := range workers {
		tell(system, "bootstrap/pod-manager", &spawnChild{kind: "pod-worker", name: fmt.Sprintf("ns-%d/app-%03d-node1@%08x", i%4, i, i)})
	}
	for i := range workers {
		path := fmt.Sprintf("bootstrap/pod-manager/ns-%d/app-%03d-node1@%08x", i%4, i, i)
		waitActor(t, system.Registry, path)
		system.Registry.SetState(path, "syncing")
		tell(system, path, &ping{n: "one"})
	}

	_, body := get(t, srv.URL+"/debug/actors.json")
	var snap Snapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	if want := workers + 3; len(snap.Actors) != want { // and bootstrap, pod-manager, default/web
		t.Fatalf("snapshot lists %d actors, want %d", len(snap.Actors), want)
	}
	const maxSnapshot = 64 << 10 // 128 KiB/s of events at two a second
	if len(body) > maxSnapshot {
		t.Errorf("snapshot of %d actors is %d bytes, want at most %d", len(snap.Actors), len(body), maxSnapshot)
	}
	t.Logf("snapshot of %d actors: %d bytes", len(snap.Actors), len(body))

	_, page := get(t, srv.URL+"/debug/actors")
	size := len(page)
	for _, ref := range regexp.MustCompile(`src="([^"]+)"|href="(actors/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		_, asset := get(t, srv.URL+"/debug/"+ref[1]+ref[2])
		size += len(asset)
	}
	const maxPage = 64 << 10
	if size > maxPage {
		t.Errorf("page and assets are %d bytes, want at most %d", size, maxPage)
	}
	t.Logf("page and assets: %d bytes", size)

	records := system.Registry.Timeline(fmt.Sprintf("bootstrap/pod-manager/ns-0/app-000-node1@%08x", 0))
	if len(records) == 0 || len(records) > supervision.TimelineLength {
		t.Errorf("a worker's timeline has %d records, want 1..%d", len(records), supervision.TimelineLength)
	}
}
