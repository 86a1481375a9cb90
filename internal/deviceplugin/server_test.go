package deviceplugin

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/deviceplugin/fakeplugin"
)

func register(t *testing.T, dir string, r *api.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+filepath.Join(dir, SocketName),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(ctx, r)
	return err
}

func TestRegistration(t *testing.T) {
	dir, err := os.MkdirTemp("", "dp") // unix socket paths are short
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	// A socket of a previous run goes; the checkpoint and other files stay.
	stale, err := net.Listen("unix", filepath.Join(dir, "stale.sock"))
	if err != nil {
		t.Fatal(err)
	}
	stale.(*net.UnixListener).SetUnlinkOnClose(false)
	stale.Close()
	for _, f := range []string{"kubelet_internal_checkpoint", "notes"} {
		if err := os.WriteFile(filepath.Join(dir, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan *Endpoint, 1)
	s, err := Serve(dir, func(e *Endpoint) { got <- e })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if _, err := os.Stat(filepath.Join(dir, "stale.sock")); !os.IsNotExist(err) {
		t.Errorf("stale socket: %v", err)
	}
	for _, f := range []string{"kubelet_internal_checkpoint", "notes"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s removed: %v", f, err)
		}
	}
	for _, tc := range []struct {
		name string
		req  *api.RegisterRequest
		want string
	}{
		{"version", &api.RegisterRequest{Version: "v1alpha", ResourceName: "example.com/r", Endpoint: "x.sock"},
			`requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]`},
		{"native resource", &api.RegisterRequest{Version: api.Version, ResourceName: "cpu", Endpoint: "x.sock"},
			`the ResourceName "cpu" is invalid`},
		{"kubernetes.io namespace", &api.RegisterRequest{Version: api.Version, ResourceName: "kubernetes.io/gpu", Endpoint: "x.sock"},
			`the ResourceName "kubernetes.io/gpu" is invalid`},
		{"no plugin", &api.RegisterRequest{Version: api.Version, ResourceName: "example.com/r", Endpoint: "absent.sock"},
			"failed to dial device plugin"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := register(t, dir, tc.req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}

	p := &fakeplugin.Plugin{Dir: dir, HostDir: t.TempDir(), Resource: "example.com/fake", PreStart: true}
	if err := p.Start(&api.Device{ID: "a", Health: api.Healthy}, &api.Device{ID: "b", Health: api.Unhealthy}); err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	e := <-got
	defer e.Close()
	if e.Resource != "example.com/fake" || !e.Options.PreStartRequired {
		t.Fatalf("endpoint %s %v", e.Resource, e.Options)
	}
	lists := make(chan []*api.Device, 4)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = e.Watch(ctx, func(d []*api.Device) { lists <- d }) }()
	if d := <-lists; len(d) != 2 || d[1].Health != api.Unhealthy {
		t.Errorf("first list %v", d)
	}
	p.SetHealth("b", api.Healthy)
	if d := <-lists; d[1].Health != api.Healthy {
		t.Errorf("second list %v", d)
	}
	resp, err := e.Allocate(ctx, []string{"a"})
	if err != nil || resp.Envs["FAKE_DEVICES"] != "a" || len(resp.Mounts) != 1 {
		t.Errorf("Allocate: %v %v", resp, err)
	}
	if err := e.PreStart(ctx, []string{"a"}); err != nil || len(p.PreStarts()) != 1 {
		t.Errorf("PreStart: %v %v", err, p.PreStarts())
	}
}
