package pluginmanager

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/csi"
	"github.com/actorlet/actorlet/internal/csi/registry"
	"github.com/actorlet/actorlet/internal/dra"
	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/supervision"
)

// harness runs the plugin-manager on a temporary plugins_registry, with a
// fake API server holding the node's Node.
type harness struct {
	dir, plugins string
	drivers      *registry.Registry
	draDrivers   *dra.Registry
	kube         *fake.Clientset
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	root, err := os.MkdirTemp("", "pm") // short: Unix socket paths are at most 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := &harness{dir: filepath.Join(root, "plugins_registry"), plugins: filepath.Join(root, "plugins"), drivers: registry.New(), draDrivers: dra.NewRegistry(),
		kube: fake.NewClientset(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-n1"}})}
	if err := os.MkdirAll(h.plugins, 0o750); err != nil {
		t.Fatal(err)
	}
	system := supervision.NewSystem(zerolog.Nop())
	t.Cleanup(system.Shutdown)
	p := Params{Dir: h.dir, Drivers: h.drivers, DRADrivers: h.draDrivers, NodeInfo: &csi.NodeInfoManager{Kube: h.kube, NodeName: "n1"}, Log: zerolog.Nop()}
	pid := system.Root.Spawn(system.Registry.Props(Kind, New(p), nil))
	t.Cleanup(func() { _ = system.Root.StopFuture(pid).Wait() })
	eventually(t, "the registry directory made", func() error { _, err := os.Stat(h.dir); return err })
	return h
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// csiNodeDrivers lists the CSINode's drivers as name=nodeID.
func (h *harness) csiNodeDrivers() (string, error) {
	c, err := h.kube.StorageV1().CSINodes().Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	var out []string
	for _, d := range c.Spec.Drivers {
		out = append(out, d.Name+"="+d.NodeID)
	}
	return strings.Join(out, ","), nil
}

// TestRegistration: a CSI driver whose socket appears is registered (the
// registry, the CSINode, the plugin told), while another plugin hangs in
// GetInfo and a device plugin is refused with a clear error; once its
// socket goes, the driver is gone from the registry and the CSINode.
func TestRegistration(t *testing.T) {
	h := newHarness(t)
	hung := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: "hung.csi", Versions: []string{"1.0.0"}, HangGetInfo: true}
	hung.Serve(t, filepath.Join(h.dir, "hung.sock"), "")
	device := &fakeplugin.Plugin{Type: registerapi.DevicePlugin, Name: "example.com/gpu", Versions: []string{"v1beta1"}}
	device.Serve(t, filepath.Join(h.dir, "gpu.sock"), "")
	good := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: "good.csi", Versions: []string{"1.0.0", "1.9.0"},
		NodeID: "node-7", MaxVolumes: 4, Topology: map[string]string{"good.csi/zone": "z1"}}
	stop := good.Serve(t, filepath.Join(h.dir, "good.sock"), filepath.Join(h.plugins, "good.sock"))

	eventually(t, "good.csi registered", func() error {
		d, ok := h.drivers.Driver("good.csi")
		if !ok {
			return fmt.Errorf("not in the registry: %v", h.drivers.Drivers())
		}
		if d.Endpoint != good.Endpoint || d.HighestVersion != "1.9.0" {
			return fmt.Errorf("registry has %+v", d)
		}
		if s := good.Statuses(); len(s) != 1 || !s[0].PluginRegistered {
			return fmt.Errorf("plugin told %v", s)
		}
		if got, err := h.csiNodeDrivers(); err != nil || got != "good.csi=node-7" {
			return fmt.Errorf("CSINode drivers %q, %v", got, err)
		}
		return nil
	})
	eventually(t, "the device plugin refused", func() error {
		s := device.Statuses()
		if len(s) == 0 {
			return fmt.Errorf("not told")
		}
		if s[0].PluginRegistered || !strings.Contains(s[0].Error, "plugin type DevicePlugin is not implemented by actorlet") {
			return fmt.Errorf("told %v", s[0])
		}
		return nil
	})
	if _, ok := h.drivers.Driver("hung.csi"); ok {
		t.Error("a plugin that never answered GetInfo is registered")
	}

	stop()
	eventually(t, "good.csi de-registered", func() error {
		if _, ok := h.drivers.Driver("good.csi"); ok {
			return fmt.Errorf("still in the registry")
		}
		if got, err := h.csiNodeDrivers(); err != nil || got != "" {
			return fmt.Errorf("CSINode drivers %q, %v", got, err)
		}
		n, err := h.kube.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if a, ok := n.Annotations[csi.AnnotationNodeID]; ok {
			return fmt.Errorf("node ID annotation %q", a)
		}
		return nil
	})
}

// TestDRARegistration: a DRA driver whose socket appears is registered in
// the DRA registry through the first gRPC service both speak, and told
// so; once its socket goes, it is gone from the registry.
func TestDRARegistration(t *testing.T) {
	h := newHarness(t)
	p := &fakeplugin.Plugin{Type: registerapi.DRAPlugin, Name: "dra.example.com", Endpoint: filepath.Join(h.plugins, "dra.sock"),
		Versions: []string{"v1.DRAPlugin", "v1beta1.DRAPlugin"}}
	stop := p.Serve(t, filepath.Join(h.dir, "dra.sock"), "")
	eventually(t, "dra.example.com registered", func() error {
		d, err := h.draDrivers.Get("dra.example.com")
		if err != nil {
			return err
		}
		if d.Endpoint != p.Endpoint || d.Service != "v1.DRAPlugin" {
			return fmt.Errorf("registry has %+v", d)
		}
		if s := p.Statuses(); len(s) != 1 || !s[0].PluginRegistered {
			return fmt.Errorf("plugin told %v", s)
		}
		return nil
	})
	stop()
	eventually(t, "dra.example.com de-registered", func() error {
		if _, err := h.draDrivers.Get("dra.example.com"); err == nil {
			return fmt.Errorf("still in the registry")
		}
		return nil
	})
}
