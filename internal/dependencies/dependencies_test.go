package dependencies

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

func TestSocketPath(t *testing.T) {
	for _, tc := range []struct {
		endpoint, want, wantErr string
	}{
		{endpoint: "unix:///run/containerd/containerd.sock", want: "/run/containerd/containerd.sock"},
		{endpoint: "tcp://127.0.0.1:1234", wantErr: `unsupported endpoint scheme "tcp"`},
		{endpoint: "unix://", wantErr: "no socket path"},
	} {
		got, err := socketPath(tc.endpoint)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("socketPath(%q) err = %v, want %q", tc.endpoint, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("socketPath(%q) = %q, %v; want %q", tc.endpoint, got, err, tc.want)
		}
	}
}

func TestDialRuntimeNamesTheCause(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.sock")
	refused := filepath.Join(dir, "refused.sock")
	// A socket file with no listener behind it refuses connections.
	l, err := net.Listen("unix", refused)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	for path, want := range map[string]string{missing: "no such file or directory", refused: "connection refused"} {
		start := time.Now()
		_, _, err := dialRuntime(context.Background(), "unix://"+path, nil)
		if err == nil || err.Error() != want {
			t.Errorf("dial %s: err = %v, want %q", path, err, want)
		}
		if time.Since(start) > 2*time.Second {
			t.Errorf("dial %s took %v: a missing runtime must be reported at once", path, time.Since(start))
		}
	}
}

func TestNodeName(t *testing.T) {
	for _, tc := range []struct{ override, want, wantErr string }{
		{override: " Node-A ", want: "node-a"},
		{override: "bad_name", wantErr: `node name "bad_name" from --hostname-override`},
	} {
		got, err := nodeName(tc.override)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("nodeName(%q) err = %v, want %q", tc.override, err, tc.wantErr)
			}
			continue
		}
		if got != tc.want || err != nil {
			t.Errorf("nodeName(%q) = %q, %v; want %q", tc.override, got, err, tc.want)
		}
	}
}

func TestDefaultRouteInterface(t *testing.T) {
	routes := filepath.Join(t.TempDir(), "route")
	table := "Iface\tDestination\tGateway\tFlags\n" +
		"eth1\t0010A8C0\t00000000\t0001\n" +
		"eth0\t00000000\t0100A8C0\t0003\n"
	if err := os.WriteFile(routes, []byte(table), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := defaultRouteInterface(routes); got != "eth0" || err != nil {
		t.Errorf("defaultRouteInterface = %q, %v; want eth0", got, err)
	}
	if ip, err := nodeIP("10.1.2.3"); err != nil || ip.String() != "10.1.2.3" {
		t.Errorf("nodeIP(flag) = %v, %v", ip, err)
	}
	if _, err := nodeIP("not-an-ip"); err == nil || !strings.Contains(err.Error(), `--node-ip "not-an-ip"`) {
		t.Errorf("nodeIP(bad) err = %v", err)
	}
}

// TestHeartbeatConfig: the heartbeat client is the main client's, not
// throttled, each request bounded by the shorter of the status update
// frequency and the lease duration, as upstream's.
func TestHeartbeatConfig(t *testing.T) {
	base := &rest.Config{Host: "https://127.0.0.1:6443", QPS: 50, Burst: 100, UserAgent: "actorlet", ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}}
	for _, tc := range []struct {
		name                string
		statusUpdate, lease time.Duration
		wantTimeout         time.Duration
	}{
		{name: "defaults: status update frequency is shorter", statusUpdate: 10 * time.Second, lease: 40 * time.Second, wantTimeout: 10 * time.Second},
		{name: "lease is shorter", statusUpdate: 60 * time.Second, lease: 20 * time.Second, wantTimeout: 20 * time.Second},
		{name: "equal", statusUpdate: 15 * time.Second, lease: 15 * time.Second, wantTimeout: 15 * time.Second},
		{name: "no lease duration", statusUpdate: 10 * time.Second, wantTimeout: 10 * time.Second},
	} {
		got := heartbeatConfig(base, tc.statusUpdate, tc.lease)
		if got.QPS >= 0 {
			t.Errorf("%s: QPS %v, want negative (no client-side throttling)", tc.name, got.QPS)
		}
		if got.Timeout != tc.wantTimeout {
			t.Errorf("%s: timeout %v, want %v", tc.name, got.Timeout, tc.wantTimeout)
		}
		if got.Host != base.Host || got.UserAgent != base.UserAgent || got.ContentType != base.ContentType {
			t.Errorf("%s: %+v lost the main client's settings", tc.name, got)
		}
	}
	if base.QPS != 50 || base.Timeout != 0 {
		t.Errorf("heartbeatConfig changed the main client's configuration: %+v", base)
	}
	// client-go builds it without a rate limiter.
	if _, err := kubernetes.NewForConfig(heartbeatConfig(base, 10*time.Second, 40*time.Second)); err != nil {
		t.Errorf("heartbeat client: %v", err)
	}
}

// TestSetContentType checks contentType as upstream's
// setContentTypeForClient: protobuf accepts JSON too, another type leaves
// the accepted types alone, empty leaves both.
func TestSetContentType(t *testing.T) {
	for _, tc := range []struct {
		contentType, wantType, wantAccept string
	}{
		{contentType: "application/vnd.kubernetes.protobuf", wantType: "application/vnd.kubernetes.protobuf", wantAccept: "application/vnd.kubernetes.protobuf,application/json"},
		{contentType: "application/json", wantType: "application/json", wantAccept: "text/plain"},
		{contentType: "", wantType: "text/csv", wantAccept: "text/plain"},
	} {
		cfg := &rest.Config{ContentConfig: rest.ContentConfig{ContentType: "text/csv", AcceptContentTypes: "text/plain"}}
		setContentType(cfg, tc.contentType)
		if cfg.ContentType != tc.wantType || cfg.AcceptContentTypes != tc.wantAccept {
			t.Errorf("contentType %q: ContentType %q, AcceptContentTypes %q; want %q, %q", tc.contentType, cfg.ContentType, cfg.AcceptContentTypes, tc.wantType, tc.wantAccept)
		}
	}
}
