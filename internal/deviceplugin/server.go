package deviceplugin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/actorlet/actorlet/internal/deviceplugin/checkpoint"
	"github.com/actorlet/actorlet/internal/nodecapacity"
)

// SocketName is the registration socket's name in the device plugins'
// directory (upstream's KubeletSocket).
const SocketName = "kubelet.sock"

// Dir is the device plugins' directory under the kubelet's root
// directory: the registration socket, the plugins' sockets and the
// checkpoint.
func Dir(rootDir string) string { return filepath.Join(rootDir, "device-plugins") }

// Upstream's registration errors (plugin/v1beta1/api.go).
const (
	errUnsupportedVersion  = "requested API version %q is not supported by kubelet. Supported version is %q"
	errInvalidResourceName = "the ResourceName %q is invalid"
)

// Connected is called with each plugin that registered and answered its
// options; the callee owns the endpoint (and closes it).
type Connected func(e *Endpoint)

// Server is the registration server.
type Server struct {
	dir       string
	grpc      *grpc.Server
	connected Connected
	api.UnsafeRegistrationServer
}

// Serve starts the registration server in dir, as upstream's: the
// directory made (0750), the sockets left there by plugins of a previous
// run removed (their plugins, watching kubelet.sock, register again when
// it is made anew), then kubelet.sock served. The checkpoint and anything
// that is not a socket stay.
func Serve(dir string, connected Connected) (*Server, error) {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, err
	}
	if err := removeSockets(dir); err != nil {
		return nil, err
	}
	ln, err := net.Listen("unix", filepath.Join(dir, SocketName))
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, grpc: grpc.NewServer(), connected: connected}
	api.RegisterRegistrationServer(s.grpc, s)
	go func() { _ = s.grpc.Serve(ln) }()
	return s, nil
}

func removeSockets(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == checkpoint.FileName || e.Type()&os.ModeSocket == 0 {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Stop stops serving and removes kubelet.sock.
func (s *Server) Stop() {
	s.grpc.Stop()
	_ = os.Remove(filepath.Join(s.dir, SocketName))
}

// Register is the v1beta1 Registration service: the version and the
// resource name checked with upstream's errors, then the plugin's socket
// dialled and its options read before the answer, so that a plugin that
// cannot be reached learns it from its Register call.
func (s *Server) Register(ctx context.Context, r *api.RegisterRequest) (*api.Empty, error) {
	if !slices.Contains(api.SupportedVersions[:], r.Version) {
		return &api.Empty{}, fmt.Errorf(errUnsupportedVersion, r.Version, api.SupportedVersions)
	}
	if !nodecapacity.IsExtended(v1.ResourceName(r.ResourceName)) {
		return &api.Empty{}, fmt.Errorf(errInvalidResourceName, r.ResourceName)
	}
	e, err := dial(ctx, r.ResourceName, filepath.Join(s.dir, r.Endpoint))
	if err != nil {
		return &api.Empty{}, err
	}
	s.connected(e)
	return &api.Empty{}, nil
}
