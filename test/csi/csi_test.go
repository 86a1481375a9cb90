// Package csi runs actorlet as the environment's node against the real
// kube-apiserver and registers a fake CSI driver through plugins_registry
// (issue #36): the driver's registration socket appears, actorlet dials it
// (GetInfo, NodeGetInfo on the driver's endpoint, NotifyRegistrationStatus)
// and records the driver in the node's CSINode and on the Node; the socket
// removed, both forget it; the socket back, the driver is registered
// again. Upstream kubelet v1.37.2 is the reference:
//
//	CSI_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/csi/
//
// The other tests run the project's hostpath CSI driver
// (test/csi/hostpathplugin) with external-provisioner and
// external-attacher (agent.StartCSIDriver): dynamic provisioning and
// deletion, and a VolumeAttachment attached to the node it registered on.
package csi

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// CSI_KUBELET names.
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "CSI_KUBELET") }

const (
	driver      = "fake.csi.actorlet.example.com"
	topologyKey = "topology.fake.csi.actorlet.example.com/zone"
	nodeIDKey   = "csi.volume.kubernetes.io/nodeid"
	migrated    = "storage.alpha.kubernetes.io/migrated-plugins"
)

// csiNodeDriver returns the CSINode's entry of the fake driver, nil when
// there is none.
func csiNodeDriver(n *agent.ClusterNode) (*storagev1.CSINodeDriver, string, error) {
	c, err := n.Admin.StorageV1().CSINodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		return nil, "", err
	}
	for _, d := range c.Spec.Drivers {
		if d.Name == driver {
			return &d, c.Annotations[migrated], nil
		}
	}
	return nil, c.Annotations[migrated], nil
}

// nodeIDs reads the Node's annotation of CSI drivers' node IDs.
func nodeIDs(node *v1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if v := node.Annotations[nodeIDKey]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return nil, err
		}
	}
	return ids, nil
}

// TestCSIDriverRegistration: the fake driver's registration socket
// appears under ROOT/plugins_registry and its CSI socket under
// ROOT/plugins; the node's CSINode then lists it with its node ID, its
// topology key and its volume limit, the Node has its node ID in the
// nodeid annotation and its topology label, and the plugin is told it is
// registered. The socket removed, the CSINode and the annotation forget
// the driver; the socket back, it is registered again. Meanwhile a device
// plugin's socket is refused with an error told to the plugin (actorlet
// only), and actorlet listens on no socket of its own there.
func TestCSIDriverRegistration(t *testing.T) {
	n := agent.NewClusterNode(t, kubelet.Binary, kubelet.Options()...)
	n.AtCleanup(func() { removeTopologyLabel(t, n) })
	n.Start()

	// The CSINode exists from the start, with upstream's migrated plugins.
	agent.Eventually(t, "the CSINode made at start-up", 60*time.Second, func() error {
		_, ann, err := csiNodeDriver(n)
		if err != nil {
			return err
		}
		if !strings.Contains(ann, "kubernetes.io/gce-pd") || !strings.Contains(ann, "kubernetes.io/aws-ebs") {
			return fmt.Errorf("migrated-plugins annotation %q", ann)
		}
		return nil
	})

	reg := filepath.Join(n.RootDir, "plugins_registry", driver+"-reg.sock")
	csiDir := filepath.Join(n.RootDir, "plugins", driver)
	if err := os.MkdirAll(csiDir, 0o750); err != nil {
		t.Fatal(err)
	}
	plugin := &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: driver, Versions: []string{"1.0.0"},
		NodeID: "fake-node-" + n.Name, MaxVolumes: 7, Topology: map[string]string{topologyKey: "zone-1"}}
	stop := plugin.Serve(t, reg, filepath.Join(csiDir, "csi.sock"))
	registered(t, n, plugin, 1)

	if !kubelet.Upstream {
		// Upstream's kubelet hands device plugins to its device manager.
		device := &fakeplugin.Plugin{Type: registerapi.DevicePlugin, Name: "example.com/fake-gpu", Versions: []string{"v1beta1"}}
		device.Serve(t, filepath.Join(n.RootDir, "plugins_registry", "fake-gpu.sock"), "")
		agent.Eventually(t, "the device plugin refused", 30*time.Second, func() error {
			s := device.Statuses()
			if len(s) == 0 {
				return fmt.Errorf("not told yet")
			}
			if s[0].PluginRegistered || !strings.Contains(s[0].Error, "DevicePlugin is not implemented") {
				return fmt.Errorf("told %+v", s[0])
			}
			return nil
		})
		// The check sees listeners: the test's own, the fake plugins'.
		if mine := listenersUnder(t, os.Getpid(), n.RootDir); !slices.Contains(mine, reg) {
			t.Fatalf("the test's listeners under the root directory: %v, want %s among them", mine, reg)
		}
		// Its own are the device plugins' registration socket and the
		// podresources API, as upstream's (docs/security.md).
		own := []string{filepath.Join(n.RootDir, "device-plugins", "kubelet.sock"), filepath.Join(n.RootDir, "pod-resources", "kubelet.sock")}
		if theirs := listenersUnder(t, n.Proc.Pid(), n.RootDir); slices.ContainsFunc(theirs, func(s string) bool { return !slices.Contains(own, s) }) {
			t.Errorf("actorlet listens on Unix sockets under its root directory beyond %v: %v", own, theirs)
		}
	}

	stop()
	deregistered(t, n)

	// Back again: a new socket is a new registration.
	plugin = &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: driver, Versions: []string{"1.0.0"},
		NodeID: "fake-node-" + n.Name, MaxVolumes: 7, Topology: map[string]string{topologyKey: "zone-1"}}
	stop = plugin.Serve(t, reg, filepath.Join(csiDir, "csi.sock"))
	registered(t, n, plugin, 1)
	stop()
	deregistered(t, n)
}

// registered waits until the fake driver is in the CSINode and on the
// Node, and the plugin was told it is registered (statuses: how many it
// got in all).
func registered(t *testing.T, n *agent.ClusterNode, plugin *fakeplugin.Plugin, statuses int) {
	t.Helper()
	agent.Eventually(t, "the driver registered", 60*time.Second, func() error {
		d, _, err := csiNodeDriver(n)
		if err != nil {
			return err
		}
		if d == nil {
			return fmt.Errorf("not in the CSINode")
		}
		if d.NodeID != plugin.NodeID || !slices.Equal(d.TopologyKeys, []string{topologyKey}) ||
			d.Allocatable == nil || d.Allocatable.Count == nil || *d.Allocatable.Count != 7 {
			return fmt.Errorf("CSINode has %+v", *d)
		}
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		ids, err := nodeIDs(node)
		if err != nil {
			return err
		}
		if ids[driver] != plugin.NodeID {
			return fmt.Errorf("nodeid annotation %v", ids)
		}
		if node.Labels[topologyKey] != "zone-1" {
			return fmt.Errorf("labels %v", node.Labels)
		}
		if s := plugin.Statuses(); len(s) != statuses || !s[len(s)-1].PluginRegistered {
			return fmt.Errorf("plugin told %v", s)
		}
		return nil
	})
}

// deregistered waits until the fake driver is gone from the CSINode and
// from the Node's annotation.
func deregistered(t *testing.T, n *agent.ClusterNode) {
	t.Helper()
	agent.Eventually(t, "the driver de-registered", 60*time.Second, func() error {
		d, _, err := csiNodeDriver(n)
		if err != nil {
			return err
		}
		if d != nil {
			return fmt.Errorf("still in the CSINode: %+v", *d)
		}
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		ids, err := nodeIDs(node)
		if err != nil {
			return err
		}
		if _, ok := ids[driver]; ok {
			return fmt.Errorf("still in the nodeid annotation: %v", ids)
		}
		return nil
	})
}

// removeTopologyLabel takes the fake driver's topology label off the
// environment's Node: upstream leaves a driver's labels behind, and the
// next test's node should not carry them.
func removeTopologyLabel(t *testing.T, n *agent.ClusterNode) {
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, topologyKey))
	if _, err := n.Admin.CoreV1().Nodes().Patch(context.Background(), n.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Logf("cleanup: remove label %s: %v", topologyKey, err)
	}
}

// listenersUnder returns the listening Unix sockets under dir that the
// process pid holds.
func listenersUnder(t *testing.T, pid int, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	listening := map[string]string{} // inode -> path
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path; Flags 00010000
		// is __SO_ACCEPTCON, a listening socket.
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && fields[3] == "00010000" && strings.HasPrefix(fields[7], dir) {
			listening[fields[6]] = fields[7]
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, fd := range fds {
		link, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil || !strings.HasPrefix(link, "socket:[") {
			continue
		}
		if path, ok := listening[strings.TrimSuffix(strings.TrimPrefix(link, "socket:["), "]")]; ok {
			out = append(out, path)
		}
	}
	return out
}
