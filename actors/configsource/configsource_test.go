package configsource

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/rs/zerolog"

	"github.com/actorlet/actorlet/internal/testutil"
	"github.com/actorlet/actorlet/messages"
	"github.com/actorlet/actorlet/supervision"
)

// Generous waits: the tests must pass on a loaded two-core machine.
const (
	waitFor = 10 * time.Second
	quiet   = 600 * time.Millisecond
)

func podYAML(name, image string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  containers:\n  - name: c\n    image: %s\n", name, image)
}

// harness runs a config-source actor whose pod-manager is a recorder of
// the PodUpdates it receives.
type harness struct {
	t       *testing.T
	system  *supervision.System
	pid     *actor.PID
	updates chan *messages.PodUpdate
	logs    *testutil.LockedBuffer
}

// start runs a config-source actor with p's sources, for p's node
// (node-1 when p names none).
func start(t *testing.T, p Params) *harness {
	t.Helper()
	h := &harness{t: t, system: supervision.NewSystem(zerolog.Nop()), updates: make(chan *messages.PodUpdate, 100), logs: &testutil.LockedBuffer{}}
	t.Cleanup(h.system.Shutdown)
	recorder := h.system.Registry.Props("pod-manager", func() actor.Actor {
		return actor.ReceiveFunc(func(c actor.Context) {
			if u, ok := c.Message().(*messages.PodUpdate); ok {
				h.updates <- u
			}
		})
	}, nil)
	p.PodManager = h.system.Root.Spawn(recorder)
	if p.NodeName == "" {
		p.NodeName = "node-1"
	}
	p.Log = zerolog.New(h.logs)
	h.pid = h.system.Root.Spawn(h.system.Registry.Props(Kind, New(p), nil))
	return h
}

// next waits for the next update.
func (h *harness) next() *messages.PodUpdate {
	h.t.Helper()
	select {
	case u := <-h.updates:
		return u
	case <-time.After(waitFor):
		h.t.Fatalf("no update within %s; logs:\n%s", waitFor, h.logs)
		return nil
	}
}

// expect waits for the next update and checks its pod names.
func (h *harness) expect(source string, names ...string) *messages.PodUpdate {
	h.t.Helper()
	u := h.next()
	got := make([]string, len(u.Pods))
	for i, p := range u.Pods {
		got[i] = p.Name
	}
	slices.Sort(got)
	slices.Sort(names)
	if u.Source != source || !slices.Equal(got, names) {
		h.t.Fatalf("update %s %v, want %s %v", u.Source, got, source, names)
	}
	return u
}

// none checks that no update comes for a while.
func (h *harness) none() {
	h.t.Helper()
	select {
	case u := <-h.updates:
		h.t.Fatalf("unexpected update: %s", u.Summary())
	case <-time.After(quiet):
	}
}

// write replaces a file atomically (a dot-file renamed into place), so that
// a rescan never reads it half-written and logs a version that never was.
func write(t *testing.T, dir, name, content string) {
	t.Helper()
	tmp := filepath.Join(dir, ".tmp-"+name)
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		t.Fatal(err)
	}
}

func TestFileSourceTracksDirectory(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	// Rescans every 100ms must not resend an unchanged set.
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: 100 * time.Millisecond})
	first := h.expect(messages.SourceFile, "a-node-1")
	h.none()

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"add yml", func() { write(t, dir, "b.yml", podYAML("b", "nginx:1")) }, []string{"a-node-1", "b-node-1"}},
		{"add json", func() {
			write(t, dir, "c.json", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"c"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)
		}, []string{"a-node-1", "b-node-1", "c-node-1"}},
		{"change", func() { write(t, dir, "a.yaml", podYAML("a", "nginx:2")) }, []string{"a-node-1", "b-node-1", "c-node-1"}},
		{"remove", func() { os.Remove(filepath.Join(dir, "b.yml")) }, []string{"a-node-1", "c-node-1"}},
	}
	for _, s := range steps {
		s.change()
		u := h.expect(messages.SourceFile, s.want...)
		if s.name == "change" && u.Pods[0].UID == first.Pods[0].UID {
			t.Errorf("UID of a changed manifest kept: %s", u.Pods[0].UID)
		}
	}

	// Dot-files and subdirectories are not manifests.
	write(t, dir, ".a.yaml.swp", podYAML("swap", "x"))
	write(t, dir, ".hidden.yaml", podYAML("hidden", "x"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub"), "d.yaml", podYAML("d", "x"))
	h.none()
}

// TestFileSourceReadsEveryName checks upstream's rule for a manifest
// directory (pkg/kubelet/config/file.go): every regular file whose name does
// not start with a dot is a manifest, whatever its extension; dot-files,
// subdirectories and other kinds of file are not.
func TestFileSourceReadsEveryName(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: 100 * time.Millisecond})
	h.expect(messages.SourceFile, "a-node-1")

	steps := []struct {
		name   string
		change func()
		want   []string
	}{
		{"no extension", func() { write(t, dir, "b", podYAML("b", "nginx:1")) }, []string{"a-node-1", "b-node-1"}},
		{"other extension", func() { write(t, dir, "c.txt", podYAML("c", "nginx:1")) }, []string{"a-node-1", "b-node-1", "c-node-1"}},
		{"upper-case extension", func() { write(t, dir, "d.YAML", podYAML("d", "nginx:1")) }, []string{"a-node-1", "b-node-1", "c-node-1", "d-node-1"}},
		{"manifest extension", func() { write(t, dir, "e.manifest", podYAML("e", "nginx:1")) }, []string{"a-node-1", "b-node-1", "c-node-1", "d-node-1", "e-node-1"}},
		{"removed", func() { os.Remove(filepath.Join(dir, "c.txt")) }, []string{"a-node-1", "b-node-1", "d-node-1", "e-node-1"}},
	}
	for _, s := range steps {
		t.Log(s.name)
		s.change()
		h.expect(messages.SourceFile, s.want...)
	}

	// An editor's backup declares the same pod as the file kept: it is read,
	// as upstream reads it, and left out as a duplicate.
	write(t, dir, "a.yaml~", podYAML("a", "nginx:0"))
	// Not manifests: a dot-file, a subdirectory, a FIFO.
	write(t, dir, ".f.yaml", podYAML("f", "x"))
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.none()
	for _, want := range []string{"a.yaml~", "duplicate pod name", "sub", "is a directory", "fifo", "is not a regular file"} {
		if !strings.Contains(h.logs.String(), want) {
			t.Errorf("logs do not mention %q:\n%s", want, h.logs)
		}
	}
}

func TestFileSourceSingleFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "pod.manifest") // any name when named directly
	write(t, dir, "pod.manifest", podYAML("solo", "nginx:1"))
	write(t, dir, "other.yaml", podYAML("other", "nginx:1"))
	h := start(t, Params{StaticPodPath: path, FileCheckFrequency: time.Hour})
	h.expect(messages.SourceFile, "solo-node-1")
	// Replaced by rename, as editors and config tools do.
	write(t, dir, ".tmp", podYAML("solo", "nginx:2"))
	if err := os.Rename(filepath.Join(dir, ".tmp"), path); err != nil {
		t.Fatal(err)
	}
	u := h.expect(messages.SourceFile, "solo-node-1")
	if img := u.Pods[0].Spec.Containers[0].Image; img != "nginx:2" {
		t.Errorf("image %q after the rename, want nginx:2", img)
	}
}

func TestFileSourceMissingDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "manifests")
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: 100 * time.Millisecond})
	// The first scan is sent even empty: the source is ready.
	h.expect(messages.SourceFile)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	h.expect(messages.SourceFile, "a-node-1")
	if n := strings.Count(h.logs.String(), "does not exist"); n != 1 {
		t.Errorf("missing directory logged %d times, want once:\n%s", n, h.logs)
	}
}

func TestFileSourceSkipsInvalidManifest(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "good.yaml", podYAML("good", "nginx:1"))
	write(t, dir, "bad.yaml", strings.Replace(podYAML("bad", "nginx:1"), "    image: nginx:1\n", "", 1))
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: 50 * time.Millisecond})
	h.expect(messages.SourceFile, "good-node-1")
	h.none() // several rescans
	logs := h.logs.String()
	if n := strings.Count(logs, "left out"); n != 1 || !strings.Contains(logs, filepath.Join(dir, "bad.yaml")) ||
		!strings.Contains(logs, "spec.containers[0].image: Required value") {
		t.Fatalf("want the bad manifest logged once with its path and reason; got %d:\n%s", n, logs)
	}
	// Another invalid version is logged again; the fixed one joins.
	write(t, dir, "bad.yaml", "kind: [")
	h.none()
	write(t, dir, "bad.yaml", podYAML("bad", "nginx:1"))
	h.expect(messages.SourceFile, "good-node-1", "bad-node-1")
	if n := strings.Count(h.logs.String(), "left out"); n != 2 {
		t.Errorf("left out logged %d times, want 2:\n%s", n, h.logs)
	}
}

func TestFileSourceCoalescesBurst(t *testing.T) {
	dir := t.TempDir()
	// No periodic rescan: only inotify sees the burst.
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: time.Hour})
	h.expect(messages.SourceFile)
	for i := range 30 {
		write(t, dir, fmt.Sprintf("p%02d.yaml", i), podYAML(fmt.Sprintf("p%02d", i), "nginx:1"))
	}
	updates := 0
	for {
		u := h.next()
		updates++
		if len(u.Pods) == 30 {
			break
		}
	}
	if updates > 5 {
		t.Errorf("a burst of 30 files gave %d updates, want a few", updates)
	}
	h.none()
}

func TestURLSource(t *testing.T) {
	var (
		mu       sync.Mutex
		status   = http.StatusOK
		body     = podYAML("web", "nginx:1")
		requests atomic.Int32
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("X-Token") != "secret" {
			http.Error(w, "no token", http.StatusUnauthorized)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}))
	defer srv.Close()
	serve := func(s int, b string) {
		mu.Lock()
		defer mu.Unlock()
		status, body = s, b
	}
	h := start(t, Params{ManifestURL: srv.URL, ManifestURLHeader: map[string][]string{"X-Token": {"secret"}},
		HTTPCheckFrequency: 50 * time.Millisecond})
	u := h.expect(messages.SourceHTTP, "web-node-1")
	if src := u.Pods[0].Annotations["kubernetes.io/config.source"]; src != "http" {
		t.Errorf("config.source %q, want http", src)
	}
	h.none()

	list := `{"apiVersion":"v1","kind":"PodList","items":[
	  {"metadata":{"name":"a"},"spec":{"containers":[{"name":"c","image":"i"}]}},
	  {"metadata":{"name":"b"},"spec":{"containers":[{"name":"c","image":"i"}]}}]}`
	serve(http.StatusOK, list)
	h.expect(messages.SourceHTTP, "a-node-1", "b-node-1")

	// Outages and invalid bodies keep the last pods, logged once each.
	serve(http.StatusInternalServerError, "down")
	h.none()
	serve(http.StatusOK, "apiVersion: v1\nkind: Service\n")
	h.none()
	logs := h.logs.String()
	if strings.Count(logs, "500 Internal Server Error") != 1 || strings.Count(logs, `kind is \"Service\"`) != 1 ||
		!strings.Contains(logs, srv.URL) {
		t.Errorf("want the outage and the invalid body logged once each, with the URL:\n%s", logs)
	}
	// An empty body means no pods.
	serve(http.StatusOK, "")
	h.expect(messages.SourceHTTP)

	// Stopped, the actor's readers are gone: no more requests.
	if err := h.system.Root.StopFuture(h.pid).Wait(); err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	time.Sleep(quiet)
	if after := requests.Load(); after != before {
		t.Errorf("%d requests after the actor stopped", after-before)
	}
}

func TestRestartRestartsReaders(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		fmt.Fprint(w, podYAML("web", "nginx:1"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	write(t, dir, "a.yaml", podYAML("a", "nginx:1"))
	h := start(t, Params{StaticPodPath: dir, FileCheckFrequency: time.Hour, ManifestURL: srv.URL, HTTPCheckFrequency: 50 * time.Millisecond})
	sources := func() []string {
		got := []string{h.next().Source, h.next().Source}
		slices.Sort(got)
		return got
	}
	if got := sources(); !slices.Equal(got, []string{"file", "http"}) {
		t.Fatalf("first updates from %v, want file and http", got)
	}
	supervision.TellFromOutside(h.system.ActorSystem, h.pid, &supervision.InjectPanic{Reason: "test"})
	// The new incarnation reads again and sends its first sets.
	if got := sources(); !slices.Equal(got, []string{"file", "http"}) {
		t.Fatalf("updates after the restart from %v, want file and http", got)
	}
	// Its file watch works.
	write(t, dir, "b.yaml", podYAML("b", "nginx:1"))
	h.expect(messages.SourceFile, "a-node-1", "b-node-1")
	// No reader of the first incarnation is left: stopped, nothing polls.
	if err := h.system.Root.StopFuture(h.pid).Wait(); err != nil {
		t.Fatal(err)
	}
	before := requests.Load()
	time.Sleep(quiet)
	if after := requests.Load(); after != before {
		t.Errorf("%d requests after the actor stopped: a reader leaked", after-before)
	}
}
