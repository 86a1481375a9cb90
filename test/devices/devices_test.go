// Package devices runs the environment's node with a device plugin
// (issue #37): the plugin registers on the kubelet's socket, its resource
// shows in the Node's capacity and allocatable, a pod asking for one
// device runs with the device's mount and environment, a pod asking for
// more than are free is rejected as upstream's device manager rejects
// it, the podresources API lists the pod's device, and after a restart of
// the kubelet the plugin registers again and the pod keeps its device
// (the checkpoint). The plugin is internal/deviceplugin/fakeplugin, after
// the e2e suite's sample device plugin, which registers only under
// /var/lib/kubelet: TestSampleDevicePlugin runs that one, on a node whose
// root directory is there. Upstream kubelet v1.37.2 is the reference:
//
//	DEVICES_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/devices/
//
// (upstream serves device plugins under /var/lib/kubelet/device-plugins
// whatever its root directory; actorlet under <root-dir>/device-plugins.)
package devices

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	dpapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	prapi "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/actorlet/actorlet/internal/deviceplugin/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "DEVICES_KUBELET") }

const res = "example.com/fake"

func TestDevicePlugin(t *testing.T) {
	// Disk thresholds off: the shared machine's disk, filled by other
	// tests, would refuse the pods for DiskPressure, which this test is
	// not about.
	opts := []agent.NodeOption{agent.WithConfig("evictionHard:\n  memory.available: 100Mi\n")}
	if kubelet.Upstream {
		// Upstream serves device plugins under /var/lib/kubelet whatever
		// its root directory: that one, removed at the end.
		opts = append(opts, agent.WithRootDir(kubeletRoot))
	}
	n := kubelet.NewAPIPods(t, opts...)
	n.Up(t, "devices")
	dir := filepath.Join(n.RootDir, "device-plugins")
	hostDir := t.TempDir()
	p := &fakeplugin.Plugin{Dir: dir, HostDir: hostDir, Resource: res, PreStart: true, Preferred: true}
	if err := p.Start(&dpapi.Device{ID: "dev-1", Health: dpapi.Healthy}, &dpapi.Device{ID: "dev-2", Health: dpapi.Healthy}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)

	agent.Eventually(t, "the Node shows 2 devices", 40*time.Second, func() error { return nodeDevices(n, 2, 2) })

	ctx := context.Background()
	one := n.Busybox("app", "echo $FAKE_DEVICES; cat /dev-files/*; sleep 3600")
	one.Resources.Limits = v1.ResourceList{res: resource.MustParse("1")}
	pod := n.NewPod("one", nil, one)
	n.Run(t, pod)
	running, err := n.Get("one")
	if err != nil {
		t.Fatal(err)
	}
	// The fake plugin prefers the highest IDs: the kubelet took its
	// preference.
	n.Expect(t, "one", "app", "echo $FAKE_DEVICES; cat /dev-files/dev-2", "dev-2\ndev-2")
	if pre := p.PreStarts(); len(pre) != 1 || strings.Join(pre[0], ",") != "dev-2" {
		t.Errorf("PreStartContainer calls: %v", pre)
	}

	t.Run("podresources", func(t *testing.T) {
		checkPodResources(t, n, "one", "dev-2")
	})

	t.Run("health", func(t *testing.T) {
		// The ResourceHealthStatus gate (beta, on): the container's
		// device shows in its allocatedResourcesStatus, and follows the
		// health the plugin lists.
		for _, health := range []string{dpapi.Unhealthy, dpapi.Healthy} {
			p.SetHealth("dev-2", health)
			want := []v1.ResourceStatus{{Name: res, Resources: []v1.ResourceHealth{{ResourceID: "dev-2", Health: v1.ResourceHealthStatus(health)}}}}
			agent.Eventually(t, "dev-2 "+health+" in the pod's status", 60*time.Second, func() error {
				cs, err := n.ContainerState("one", "app")
				if err != nil {
					return err
				}
				if !apiequality.Semantic.DeepEqual(cs.AllocatedResourcesStatus, want) {
					return fmt.Errorf("allocatedResourcesStatus %+v", cs.AllocatedResourcesStatus)
				}
				return nil
			})
		}
		// An unhealthy device is not allocatable: the Node counts it
		// again before the restart, whose admission reads the Node.
		agent.Eventually(t, "the Node shows 2 devices again", 40*time.Second, func() error { return nodeDevices(n, 2, 2) })
	})

	t.Run("too many", func(t *testing.T) {
		two := n.Busybox("app", "sleep 3600")
		two.Resources.Limits = v1.ResourceList{res: resource.MustParse("2")}
		created := n.Create(t, n.NewPod("two", nil, two))
		agent.Eventually(t, "pod two rejected", 30*time.Second, func() error {
			p, err := n.Get(created.Name)
			if err != nil {
				return err
			}
			want := "Pod was rejected: Allocate failed due to requested number of devices unavailable for example.com/fake. Requested: 2, Available: 1, which is unexpected"
			if p.Status.Phase != v1.PodFailed || p.Status.Reason != "UnexpectedAdmissionError" || p.Status.Message != want {
				return fmt.Errorf("phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
			}
			return nil
		})
	})

	t.Run("restart", func(t *testing.T) {
		n.Stop(syscall.SIGTERM)
		n.Start()
		agent.Eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
		registered(t, n, res, "dev-1", "dev-2")
		agent.Eventually(t, "the Node shows 2 devices", 40*time.Second, func() error { return nodeDevices(n, 2, 2) })
		// The pod runs on in the same container, and keeps its device.
		after, err := n.Get("one")
		if err != nil {
			t.Fatal(err)
		}
		if after.Status.ContainerStatuses[0].ContainerID != running.Status.ContainerStatuses[0].ContainerID {
			t.Errorf("container %s after the restart, %s before", after.Status.ContainerStatuses[0].ContainerID, running.Status.ContainerStatuses[0].ContainerID)
		}
		checkPodResources(t, n, "one", "dev-2")
		// The device it holds is not given to another pod.
		three := n.Busybox("app", "echo $FAKE_DEVICES; sleep 3600")
		three.Resources.Limits = v1.ResourceList{res: resource.MustParse("1")}
		n.Run(t, n.NewPod("three", nil, three))
		n.Expect(t, "three", "app", "echo $FAKE_DEVICES", "dev-1")
	})

	t.Run("freed", func(t *testing.T) {
		if err := n.Admin.CoreV1().Pods(n.NS).Delete(ctx, "one", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		again := n.Busybox("app", "echo $FAKE_DEVICES; sleep 3600")
		again.Resources.Limits = v1.ResourceList{res: resource.MustParse("1")}
		agent.Eventually(t, "pod one gone", 60*time.Second, func() error {
			if _, err := n.Get("one"); err == nil {
				return fmt.Errorf("still there")
			}
			return nil
		})
		n.Run(t, n.NewPod("four", nil, again))
		n.Expect(t, "four", "app", "echo $FAKE_DEVICES", "dev-2")
	})
}

// nodeDevices checks the Node's capacity and allocatable of the fake
// plugin's resource.
func nodeDevices(n *agent.APIPods, capacity, allocatable int64) error {
	return nodeResource(n, res, capacity, allocatable)
}

// checkPodResources reads the podresources API: pod's container holds
// device, and the allocatable devices are the plugin's two.
func checkPodResources(t *testing.T, n *agent.APIPods, pod, device string) {
	t.Helper()
	c := podResources(t, n)
	agent.Eventually(t, "podresources lists "+pod+" with "+device, 20*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		list, err := c.List(ctx, &prapi.ListPodResourcesRequest{})
		if err != nil {
			return err
		}
		for _, p := range list.PodResources {
			if p.Name != pod || p.Namespace != n.NS {
				continue
			}
			got := fmt.Sprint(p.Containers)
			if len(p.Containers) != 1 || len(p.Containers[0].Devices) != 1 || p.Containers[0].Devices[0].ResourceName != res ||
				strings.Join(p.Containers[0].Devices[0].DeviceIds, ",") != device {
				return fmt.Errorf("pod %s: %s", pod, got)
			}
			one, err := c.Get(ctx, &prapi.GetPodResourcesRequest{PodName: pod, PodNamespace: n.NS})
			if err != nil || fmt.Sprint(one.PodResources.Containers) != got {
				return fmt.Errorf("Get: %v %v", one, err)
			}
			alloc, err := c.GetAllocatableResources(ctx, &prapi.AllocatableResourcesRequest{})
			if err != nil {
				return err
			}
			var ids []string
			for _, d := range alloc.Devices {
				ids = append(ids, d.DeviceIds...)
			}
			slices.Sort(ids)
			if strings.Join(ids, ",") != "dev-1,dev-2" {
				return fmt.Errorf("allocatable %v", alloc.Devices)
			}
			return nil
		}
		return fmt.Errorf("pod %s not listed in %d pods", pod, len(list.PodResources))
	})
}

// podResources is a client of the node's podresources API, closed at the
// end of the test.
func podResources(t *testing.T, n *agent.APIPods) prapi.PodResourcesListerClient {
	t.Helper()
	conn, err := grpc.NewClient("passthrough:///"+filepath.Join(n.RootDir, "pod-resources", "kubelet.sock"),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return prapi.NewPodResourcesListerClient(conn)
}

// registered waits until the running kubelet's podresources API lists
// ids as resource's allocatable devices: its device plugin registered
// with it. After a restart the Node's status is no sign of that until the
// new kubelet has written it, and upstream's kubelet keeps the devices'
// count from the checkpoint, at zero, until the plugin registers again.
func registered(t *testing.T, n *agent.APIPods, resource string, ids ...string) {
	t.Helper()
	c := podResources(t, n)
	want := strings.Join(ids, ",")
	agent.Eventually(t, "the kubelet's allocatable "+resource+": "+want, 60*time.Second, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		alloc, err := c.GetAllocatableResources(ctx, &prapi.AllocatableResourcesRequest{})
		if err != nil {
			return err
		}
		var got []string
		for _, d := range alloc.Devices {
			if d.ResourceName == resource {
				got = append(got, d.DeviceIds...)
			}
		}
		slices.Sort(got)
		if strings.Join(got, ",") != want {
			return fmt.Errorf("allocatable %v", alloc.Devices)
		}
		return nil
	})
}
