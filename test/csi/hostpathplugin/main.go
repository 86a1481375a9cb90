// Command hostpathplugin is the CSI driver of the project's CSI tests
// (issue #36): a volume is a directory under its state directory (a block
// volume a file there, put on a loop device while staged). It
// serves the CSI Identity, Controller and Node services on one socket, as
// csi-driver-host-path does, and, in the node-driver-registrar's place,
// the kubelet's plugin registration service on
// REGISTRATION_DIR/DRIVER-reg.sock. csi-driver-host-path and
// node-driver-registrar are not served as Go modules here; this is the
// part of them the tests need.
//
// It runs as a host process, as root (its node service bind-mounts):
//
//	hostpathplugin -drivername hostpath.csi.actorlet.example.com \
//		-endpoint /var/lib/kubelet/plugins/hostpath/csi.sock \
//		-registration-dir /var/lib/kubelet/plugins_registry \
//		-statedir /tmp/hostpath -nodeid node-1
//
// external-provisioner and external-attacher (hack/csi) talk to the same
// socket. Every CSI call and its outcome is logged to stderr. SIGTERM or
// SIGINT stops it and removes both sockets, which is how a kubelet learns
// that the driver is gone.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	"k8s.io/mount-utils"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.name, "drivername", "hostpath.csi.actorlet.example.com", "the CSI driver's name")
	flag.StringVar(&cfg.endpoint, "endpoint", "", "the path of the CSI socket to listen on")
	flag.StringVar(&cfg.registrationDir, "registration-dir", "", "the kubelet's plugins_registry directory; empty: no registration socket")
	flag.StringVar(&cfg.stateDir, "statedir", "", "where volumes (directories) and the driver's state live")
	flag.StringVar(&cfg.nodeID, "nodeid", "", "the node ID that NodeGetInfo returns")
	flag.Int64Var(&cfg.maxVolumes, "max-volumes-per-node", 0, "NodeGetInfo's volume limit; 0: none")
	flag.BoolVar(&cfg.attachRequired, "attach-required", true, "whether NodeStageVolume wants ControllerPublishVolume's publish context (the CSIDriver's attachRequired)")
	flag.Parse()
	if err := run(cfg); err != nil {
		log.Fatal(err)
	}
}

type config struct {
	name, endpoint, registrationDir, stateDir, nodeID string
	maxVolumes                                        int64
	attachRequired                                    bool
}

func run(cfg config) error {
	if cfg.endpoint == "" || cfg.stateDir == "" || cfg.nodeID == "" {
		return errors.New("-endpoint, -statedir and -nodeid are required")
	}
	d, err := newDriver(cfg, mount.New(""))
	if err != nil {
		return err
	}

	srv := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
	csi.RegisterIdentityServer(srv, d)
	csi.RegisterControllerServer(srv, d)
	csi.RegisterNodeServer(srv, d)
	lis, err := listenUnix(cfg.endpoint)
	if err != nil {
		return err
	}
	go srv.Serve(lis)
	defer srv.Stop()

	// The registration socket comes last: once it exists the kubelet may
	// dial the CSI socket, which must then answer.
	if cfg.registrationDir != "" {
		reg := grpc.NewServer(grpc.UnaryInterceptor(logCalls))
		registerapi.RegisterRegistrationServer(reg, &registrar{name: cfg.name, endpoint: cfg.endpoint})
		regLis, err := listenUnix(filepath.Join(cfg.registrationDir, cfg.name+"-reg.sock"))
		if err != nil {
			return err
		}
		go reg.Serve(regLis)
		defer reg.Stop()
	}
	log.Printf("serving %s on %s (node ID %s, state %s)", cfg.name, cfg.endpoint, cfg.nodeID, cfg.stateDir)

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	log.Printf("stopping on %v", <-sig)
	return nil
}

// listenUnix listens on a Unix socket at path, replacing a socket left by
// an earlier run. The listener removes the socket when it is closed.
func listenUnix(path string) (net.Listener, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return net.Listen("unix", path)
}

// logCalls logs each call with its outcome, so a failing test can show
// what its driver was asked; without the secrets CSI requests carry.
func logCalls(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	resp, err := handler(ctx, req)
	if err != nil {
		log.Printf("%s %v: error: %v", info.FullMethod, withoutSecrets(req), err)
	} else {
		log.Printf("%s %v: %v", info.FullMethod, withoutSecrets(req), resp)
	}
	return resp, err
}

// withoutSecrets is a copy of a request without its secrets: CSI puts them
// in top-level maps named secrets (CreateVolumeRequest.secrets,
// NodeStageVolumeRequest.secrets, ...).
func withoutSecrets(req any) any {
	m, ok := req.(proto.Message)
	if !ok {
		return req
	}
	c := proto.Clone(m).ProtoReflect()
	var secrets []protoreflect.FieldDescriptor
	c.Range(func(fd protoreflect.FieldDescriptor, _ protoreflect.Value) bool {
		if fd.IsMap() && strings.HasSuffix(string(fd.Name()), "secrets") {
			secrets = append(secrets, fd)
		}
		return true
	})
	for _, fd := range secrets {
		c.Clear(fd)
	}
	return c.Interface()
}

// registrar is the node-driver-registrar's part: it tells the kubelet's
// plugin watcher what the driver is and where its CSI socket is.
type registrar struct {
	registerapi.UnimplementedRegistrationServer
	name, endpoint string
}

func (r *registrar) GetInfo(context.Context, *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	return &registerapi.PluginInfo{
		Type:              registerapi.CSIPlugin,
		Name:              r.name,
		Endpoint:          r.endpoint,
		SupportedVersions: []string{"1.0.0"},
	}, nil
}

// NotifyRegistrationStatus logs the kubelet's answer. node-driver-registrar
// exits when the registration failed; this process also serves the
// controller side, which must not go with it, so a refusal is only logged
// (the test sees it in the CSINode, or in this log).
func (r *registrar) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	if s.PluginRegistered {
		log.Printf("registered with the kubelet")
	} else {
		log.Printf("registration refused by the kubelet: %s", s.Error)
	}
	return &registerapi.RegistrationStatusResponse{}, nil
}
