package plugins

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// registrar is a plugin's registration server: it answers GetInfo with
// info (or hangs when hang is set) and keeps the statuses notified.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	info registerapi.PluginInfo
	hang bool

	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
}

func (r *registrar) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	if r.hang {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &r.info, nil
}

func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.statuses = append(r.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

// serve serves r on a new Unix socket at path until the test ends.
func serve(t *testing.T, path string, r *registrar) {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, r)
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
}

// shortDir is a temporary directory with a path short enough for Unix
// socket names (108 bytes).
func shortDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "plg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// TestHandshake: GetInfo reads the plugin's info, Notify delivers a
// status; a plugin that does not answer GetInfo fails it within the
// call's bound.
func TestHandshake(t *testing.T) {
	dir := shortDir(t)
	r := &registrar{info: registerapi.PluginInfo{Type: registerapi.CSIPlugin, Name: "a.csi", Endpoint: "/x.sock", SupportedVersions: []string{"1.0.0"}}}
	sock := filepath.Join(dir, "a.sock")
	serve(t, sock, r)
	ctx := context.Background()
	info, err := GetInfo(ctx, sock)
	if err != nil {
		t.Fatal(err)
	}
	if info.Type != registerapi.CSIPlugin || info.Name != "a.csi" || info.Endpoint != "/x.sock" {
		t.Errorf("info = %+v", info)
	}
	if err := Notify(ctx, sock, false, "refused"); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	if len(r.statuses) != 1 || r.statuses[0].PluginRegistered || r.statuses[0].Error != "refused" {
		t.Errorf("statuses = %v", r.statuses)
	}
	r.mu.Unlock()

	hung := filepath.Join(dir, "hung.sock")
	serve(t, hung, &registrar{hang: true})
	start := time.Now()
	if _, err := GetInfo(ctx, hung); err == nil || !strings.Contains(err.Error(), "GetInfo") {
		t.Errorf("GetInfo of a hung plugin: %v", err)
	}
	if took := time.Since(start); took > GetInfoTimeout+2*time.Second {
		t.Errorf("GetInfo of a hung plugin took %v", took)
	}
}

// TestWatch: sockets there at the start and created later, also in a new
// subdirectory, are Added; other files and names starting with "." are
// not; a removed socket is Removed.
func TestWatch(t *testing.T) {
	dir := filepath.Join(shortDir(t), "reg")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	listen := func(path string) net.Listener {
		t.Helper()
		l, err := net.Listen("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		t.Cleanup(func() { l.Close() })
		return l
	}
	listen(filepath.Join(dir, "before.sock"))
	events := make(chan string, 100)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	err := Watch(ctx, dir, Events{
		Added:   func(p string) { events <- "+" + strings.TrimPrefix(p, dir+"/") },
		Removed: func(p string) { events <- "-" + strings.TrimPrefix(p, dir+"/") },
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	// A socket made while its directory's watch is being set up may be
	// reported twice: the repeat is skipped.
	last := ""
	expect := func(want string) {
		t.Helper()
		for {
			select {
			case got := <-events:
				if got == last && got != want {
					continue
				}
				if got != want {
					t.Fatalf("event %q, want %q", got, want)
				}
				last = got
				return
			case <-time.After(5 * time.Second):
				t.Fatalf("no event, want %q", want)
			}
		}
	}
	expect("+before.sock")
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	listen(filepath.Join(dir, ".hidden.sock"))
	listen(filepath.Join(dir, "after.sock"))
	expect("+after.sock")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o750); err != nil {
		t.Fatal(err)
	}
	listen(filepath.Join(dir, "sub", "deep.sock"))
	expect("+sub/deep.sock")
	if err := os.Remove(filepath.Join(dir, "after.sock")); err != nil {
		t.Fatal(err)
	}
	expect("-after.sock")
}
