// Package fakeplugin is a device plugin for tests, after the e2e suite's
// sample device plugin (test/images/sample-device-plugin): it serves its
// devices, answers Allocate with one file mount and one environment
// variable per device (and CDI names when asked), registers with the
// kubelet's socket in the directory it is given, and registers again
// whenever the kubelet makes that socket anew, as the sample plugin's
// stub does. The sample plugin itself registers only under
// /var/lib/kubelet, which tests with their own root directory cannot use.
package fakeplugin

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// Plugin is one fake device plugin.
type Plugin struct {
	// Dir is the device plugins' directory (<root-dir>/device-plugins);
	// HostDir is where the device files Allocate mounts are made.
	Dir, HostDir string
	Resource     string
	// PreStart and Preferred are the options the plugin offers
	// (PreStartRequired, GetPreferredAllocationAvailable).
	PreStart, Preferred bool
	// CDI makes Allocate name each device to CDI as Resource=CDI-<id>.
	CDI bool

	mu        sync.Mutex
	devices   []*api.Device
	watchers  []chan []*api.Device
	preStarts [][]string
	allocated [][]string
	srv       *grpc.Server
	name      string
	stop      chan struct{}
	api.UnsafeDevicePluginServer
}

// Start serves the plugin's socket and registers it, then keeps it
// registered across restarts of the kubelet until Stop.
func (p *Plugin) Start(devices ...*api.Device) error {
	p.devices = devices
	p.stop = make(chan struct{})
	// Watched from the start, so that a restart of the kubelet while the
	// plugin registers is not missed.
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return err
	}
	if err := w.Add(p.Dir); err != nil {
		w.Close()
		return err
	}
	if err := p.serve(); err != nil {
		w.Close()
		return err
	}
	// The kubelet's socket may not serve yet (a kubelet just started,
	// whose device manager starts after its API): tried for a while.
	err = p.register()
	for i := 0; i < 150 && err != nil; i++ {
		time.Sleep(200 * time.Millisecond)
		err = p.register()
	}
	if err != nil {
		w.Close()
		return err
	}
	go p.reregister(w)
	return nil
}

func (p *Plugin) serve() error {
	p.name = fmt.Sprintf("fake-%d.sock", time.Now().UnixNano())
	ln, err := net.Listen("unix", filepath.Join(p.Dir, p.name))
	if err != nil {
		return err
	}
	srv := grpc.NewServer()
	api.RegisterDevicePluginServer(srv, p)
	p.mu.Lock()
	p.srv = srv
	p.mu.Unlock()
	go func() { _ = srv.Serve(ln) }()
	return nil
}

func (p *Plugin) register() error {
	conn, err := grpc.NewClient("passthrough:///"+filepath.Join(p.Dir, "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	_, err = api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: api.Version, Endpoint: p.name, ResourceName: p.Resource, Options: p.options()})
	return err
}

// reregister watches the directory for the kubelet's socket made anew
// (the kubelet restarted, and removed the plugin's socket): the plugin
// then serves a new socket and registers again. It watches for the
// socket's creation, as the sample plugin's stub does, rather than
// comparing the file it finds: a socket removed and made again at once
// often gets the inode number it had, and looks the same file.
func (p *Plugin) reregister(w *fsnotify.Watcher) {
	defer w.Close()
	sock := filepath.Join(p.Dir, "kubelet.sock")
	for {
		select {
		case <-p.stop:
			return
		case <-w.Errors:
			continue
		case ev := <-w.Events:
			if ev.Name != sock || !ev.Has(fsnotify.Create) {
				continue
			}
		}
		p.mu.Lock()
		old := p.srv
		p.mu.Unlock()
		old.Stop()
		if p.serve() != nil {
			continue
		}
		for i := 0; i < 25 && p.register() != nil; i++ {
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// Stop stops serving and removes the plugin's socket (the kubelet sees
// its plugin gone).
func (p *Plugin) Stop() {
	close(p.stop)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.srv.Stop()
	_ = os.Remove(filepath.Join(p.Dir, p.name))
}

// SetHealth changes a device's health and tells the kubelet.
func (p *Plugin) SetHealth(id, health string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, d := range p.devices {
		if d.ID == id {
			d.Health = health
		}
	}
	for _, w := range p.watchers {
		select {
		case w <- p.snapshot():
		default:
		}
	}
}

func (p *Plugin) snapshot() []*api.Device {
	out := make([]*api.Device, len(p.devices))
	for i, d := range p.devices {
		out[i] = &api.Device{ID: d.ID, Health: d.Health, Topology: d.Topology}
	}
	return out
}

// Allocated are the device sets Allocate was called with, in order.
func (p *Plugin) Allocated() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]string(nil), p.allocated...)
}

// PreStarts are the device sets PreStartContainer was called with.
func (p *Plugin) PreStarts() [][]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([][]string(nil), p.preStarts...)
}

func (p *Plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return p.options(), nil
}

func (p *Plugin) options() *api.DevicePluginOptions {
	return &api.DevicePluginOptions{PreStartRequired: p.PreStart, GetPreferredAllocationAvailable: p.Preferred}
}

func (p *Plugin) ListAndWatch(_ *api.Empty, s api.DevicePlugin_ListAndWatchServer) error {
	w := make(chan []*api.Device, 16)
	p.mu.Lock()
	p.watchers = append(p.watchers, w)
	first := p.snapshot()
	p.mu.Unlock()
	if err := s.Send(&api.ListAndWatchResponse{Devices: first}); err != nil {
		return err
	}
	for {
		select {
		case <-s.Context().Done():
			return nil
		case devs := <-w:
			if err := s.Send(&api.ListAndWatchResponse{Devices: devs}); err != nil {
				return err
			}
		}
	}
}

// GetPreferredAllocation prefers the devices of the highest IDs, so that
// a test sees the kubelet took the preference.
func (p *Plugin) GetPreferredAllocation(_ context.Context, r *api.PreferredAllocationRequest) (*api.PreferredAllocationResponse, error) {
	out := &api.PreferredAllocationResponse{}
	for _, c := range r.ContainerRequests {
		ids := append([]string(nil), c.MustIncludeDeviceIDs...)
		for i := len(c.AvailableDeviceIDs) - 1; i >= 0 && len(ids) < int(c.AllocationSize); i-- {
			id := c.AvailableDeviceIDs[i]
			if !contains(ids, id) {
				ids = append(ids, id)
			}
		}
		out.ContainerResponses = append(out.ContainerResponses, &api.ContainerPreferredAllocationResponse{DeviceIDs: ids})
	}
	return out, nil
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// Allocate makes a file per device under HostDir and mounts it at
// /dev-files/<id> (read-only), with FAKE_DEVICES=<ids, comma-separated>
// in the environment and an annotation naming the plugin.
func (p *Plugin) Allocate(_ context.Context, r *api.AllocateRequest) (*api.AllocateResponse, error) {
	out := &api.AllocateResponse{}
	for _, c := range r.ContainerRequests {
		p.mu.Lock()
		p.allocated = append(p.allocated, c.DevicesIds)
		p.mu.Unlock()
		resp := &api.ContainerAllocateResponse{
			Envs:        map[string]string{"FAKE_DEVICES": strings.Join(c.DevicesIds, ",")},
			Annotations: map[string]string{"fake.example.com/plugin": p.Resource},
		}
		for _, id := range c.DevicesIds {
			host := filepath.Join(p.HostDir, id)
			if err := os.WriteFile(host, []byte(id+"\n"), 0o644); err != nil {
				return nil, err
			}
			resp.Mounts = append(resp.Mounts, &api.Mount{ContainerPath: "/dev-files/" + id, HostPath: host, ReadOnly: true})
			if p.CDI {
				resp.CdiDevices = append(resp.CdiDevices, &api.CDIDevice{Name: p.Resource + "=CDI-" + id})
			}
		}
		out.ContainerResponses = append(out.ContainerResponses, resp)
	}
	return out, nil
}

func (p *Plugin) PreStartContainer(_ context.Context, r *api.PreStartContainerRequest) (*api.PreStartContainerResponse, error) {
	p.mu.Lock()
	p.preStarts = append(p.preStarts, r.DevicesIds)
	p.mu.Unlock()
	return &api.PreStartContainerResponse{}, nil
}
