// Package fakeplugin is a kubelet plugin for tests, as a CSI driver's
// node-driver-registrar and node service are: a registration server
// (pluginregistration/v1) on one Unix socket and a CSI Identity and Node
// server on another. It records what the kubelet tells it. Production
// code does not import it.
package fakeplugin

import (
	"context"
	"net"
	"os"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// Plugin is what the plugin says of itself and of the node.
type Plugin struct {
	// Type, Name, Endpoint and Versions answer GetInfo; Endpoint is the
	// CSI socket that Serve makes when CSI is set.
	Type, Name, Endpoint string
	Versions             []string
	// NodeID, MaxVolumes and Topology answer NodeGetInfo.
	NodeID     string
	MaxVolumes int64
	Topology   map[string]string
	// HangGetInfo makes GetInfo wait for the caller to give up.
	HangGetInfo bool

	mu       sync.Mutex
	statuses []*registerapi.RegistrationStatus
}

// Statuses are the registration statuses the kubelet notified so far.
func (p *Plugin) Statuses() []*registerapi.RegistrationStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]*registerapi.RegistrationStatus(nil), p.statuses...)
}

// Serve serves the registration server on regSocket and, when csiSocket
// is not empty, the CSI server there (as the plugin's Endpoint), until
// Stop or the end of the test. Each socket file is removed when it stops,
// as a plugin removes its socket when it goes.
func (p *Plugin) Serve(t testing.TB, regSocket, csiSocket string) (stop func()) {
	t.Helper()
	var servers []*grpc.Server
	if csiSocket != "" {
		p.Endpoint = csiSocket
		s := grpc.NewServer()
		csipb.RegisterIdentityServer(s, identity{p: p})
		csipb.RegisterNodeServer(s, node{p: p})
		servers = append(servers, listen(t, s, csiSocket))
	}
	s := grpc.NewServer()
	registerapi.RegisterRegistrationServer(s, registration{p: p})
	servers = append(servers, listen(t, s, regSocket))
	var once sync.Once
	stop = func() {
		once.Do(func() {
			for _, s := range servers {
				s.Stop()
			}
			_ = os.Remove(regSocket)
			if csiSocket != "" {
				_ = os.Remove(csiSocket)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

func listen(t testing.TB, s *grpc.Server, path string) *grpc.Server {
	t.Helper()
	l, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = s.Serve(l) }()
	return s
}

type registration struct {
	registerapi.UnimplementedRegistrationServer
	p *Plugin
}

func (r registration) GetInfo(ctx context.Context, _ *registerapi.InfoRequest) (*registerapi.PluginInfo, error) {
	if r.p.HangGetInfo {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &registerapi.PluginInfo{Type: r.p.Type, Name: r.p.Name, Endpoint: r.p.Endpoint, SupportedVersions: r.p.Versions}, nil
}

func (r registration) NotifyRegistrationStatus(_ context.Context, s *registerapi.RegistrationStatus) (*registerapi.RegistrationStatusResponse, error) {
	r.p.mu.Lock()
	defer r.p.mu.Unlock()
	r.p.statuses = append(r.p.statuses, s)
	return &registerapi.RegistrationStatusResponse{}, nil
}

type identity struct {
	csipb.UnimplementedIdentityServer
	p *Plugin
}

func (i identity) GetPluginInfo(context.Context, *csipb.GetPluginInfoRequest) (*csipb.GetPluginInfoResponse, error) {
	return &csipb.GetPluginInfoResponse{Name: i.p.Name, VendorVersion: "0.0.1"}, nil
}

func (identity) GetPluginCapabilities(context.Context, *csipb.GetPluginCapabilitiesRequest) (*csipb.GetPluginCapabilitiesResponse, error) {
	return &csipb.GetPluginCapabilitiesResponse{}, nil
}

func (identity) Probe(context.Context, *csipb.ProbeRequest) (*csipb.ProbeResponse, error) {
	return &csipb.ProbeResponse{}, nil
}

type node struct {
	csipb.UnimplementedNodeServer
	p *Plugin
}

func (n node) NodeGetInfo(context.Context, *csipb.NodeGetInfoRequest) (*csipb.NodeGetInfoResponse, error) {
	res := &csipb.NodeGetInfoResponse{NodeId: n.p.NodeID, MaxVolumesPerNode: n.p.MaxVolumes}
	if len(n.p.Topology) > 0 {
		res.AccessibleTopology = &csipb.Topology{Segments: n.p.Topology}
	}
	return res, nil
}
