package devices

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// sampleResource is what the e2e suite's sample device plugin registers,
// with two devices, Dev-1 and Dev-2.
const sampleResource = "example.com/resource"

// kubeletRoot is the root directory of TestSampleDevicePlugin's node:
// the sample plugin registers on /var/lib/kubelet/device-plugins/kubelet.sock
// (dpapi.KubeletSocket) whatever its PLUGIN_SOCK_DIR, and actorlet serves
// that socket under its root directory. Upstream's kubelet serves it
// there whatever its root directory; it gets the same one, its default.
const kubeletRoot = "/var/lib/kubelet"

// TestSampleDevicePlugin runs upstream's sample device plugin
// (k8s.io/kubernetes/test/images/sample-device-plugin, built from the
// module hack/kube pins) as the e2e suite deploys it, a process on the
// node, with CDI_ENABLED: a pod asking for its resource runs with the
// device's file mounted and its CDI device's edits; after a restart of
// the kubelet the plugin registers again (it watches for kubelet.sock made
// anew), the pod runs on in the same container, and a new pod gets the
// other device.
func TestSampleDevicePlugin(t *testing.T) {
	n := kubelet.NewAPIPods(t, agent.WithRootDir(kubeletRoot),
		agent.WithConfig("evictionHard:\n  memory.available: 100Mi\n"))
	n.Up(t, "sample-dp")
	bin := filepath.Join(t.TempDir(), "sample-device-plugin")
	agent.BuildKube(t, "k8s.io/kubernetes/test/images/sample-device-plugin", bin)

	// The plugin's registration gives up (panics) after 10 s without a
	// kubelet: start it once the kubelet's socket answers.
	sock := filepath.Join(kubeletRoot, "device-plugins", "kubelet.sock")
	agent.Eventually(t, "the kubelet serves "+sock, 30*time.Second, func() error {
		c, err := net.DialTimeout("unix", sock, time.Second)
		if err != nil {
			return err
		}
		return c.Close()
	})
	startSamplePlugin(t, bin, filepath.Dir(sock))
	registered(t, n, sampleResource, "Dev-1", "Dev-2")
	agent.Eventually(t, "the Node shows the plugin's 2 devices", 60*time.Second, func() error {
		return nodeResource(n, sampleResource, 2, 2)
	})
	one := n.Busybox("app", "sleep 3600")
	one.Resources.Limits = v1.ResourceList{sampleResource: resource.MustParse("1")}
	n.Run(t, n.NewPod("one", nil, one))
	devOne := sampleDevice(t, n, "one")
	before, err := n.Get("one")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("restart", func(t *testing.T) {
		n.Stop(syscall.SIGTERM)
		n.Start()
		agent.Eventually(t, "node Ready after the restart", 30*time.Second, n.Ready)
		// The plugin registers again 10 s after it sees kubelet.sock made
		// anew (its stub's Watch).
		registered(t, n, sampleResource, "Dev-1", "Dev-2")
		agent.Eventually(t, "the Node shows the plugin's 2 devices", 40*time.Second, func() error {
			return nodeResource(n, sampleResource, 2, 2)
		})
		after, err := n.Get("one")
		if err != nil {
			t.Fatal(err)
		}
		if a, b := after.Status.ContainerStatuses[0].ContainerID, before.Status.ContainerStatuses[0].ContainerID; a != b || after.Status.Phase != v1.PodRunning {
			t.Errorf("pod one %s, container %s after the restart, %s before", after.Status.Phase, a, b)
		}
		if got := sampleDevice(t, n, "one"); got != devOne {
			t.Errorf("pod one sees %s after the restart, %s before", got, devOne)
		}
		two := n.Busybox("app", "sleep 3600")
		two.Resources.Limits = v1.ResourceList{sampleResource: resource.MustParse("1")}
		n.Run(t, n.NewPod("two", nil, two))
		if got := sampleDevice(t, n, "two"); got == devOne {
			t.Errorf("pod two got %s, pod one's device", got)
		}
	})
}

// sampleDevice is the device the sample plugin gave the pod's container:
// its Allocate mounts the host's /tmp/DEV at the same path and, with
// CDI_ENABLED, names the CDI device example.com/resource=CDI-DEV, whose
// edits set CDI_DEVICE and make the device node /tmp/CDI-DEV.
func sampleDevice(t *testing.T, n *agent.APIPods, pod string) string {
	t.Helper()
	out := n.Sh(t, pod, "app", "ls /tmp; echo CDI_DEVICE=$CDI_DEVICE; test -b /tmp/$CDI_DEVICE && echo block")
	var dev string
	for _, d := range []string{"Dev-1", "Dev-2"} {
		want := fmt.Sprintf("CDI-%s\n%s\nCDI_DEVICE=CDI-%s\nblock", d, d, d)
		if out == want {
			dev = d
		}
	}
	if dev == "" {
		t.Fatalf("in %s: want one device's file, its CDI_DEVICE and its block device node, got %q", pod, out)
	}
	return dev
}

// startSamplePlugin runs the sample device plugin with its sockets in dir
// and CDI_ENABLED; the cleanup stops it (it removes its CDI spec then) and
// removes the device files its Allocate made, and logs its output if the
// test failed.
func startSamplePlugin(t *testing.T, bin, dir string) {
	t.Helper()
	// Where it writes its CDI spec; the e2e suite's DaemonSet mounts the
	// host's, which the runtime makes if need be.
	if err := os.MkdirAll("/var/run/cdi", 0o755); err != nil {
		t.Fatal(err)
	}
	var out syncBuffer
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "PLUGIN_SOCK_DIR="+dir, "CDI_ENABLED=1")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		for _, d := range []string{"Dev-1", "Dev-2"} {
			_ = os.Remove(filepath.Join("/tmp", d))
		}
		if t.Failed() {
			t.Logf("the sample device plugin's output:\n%s", env.Tail(out.String(), 60))
		}
	})
}

// nodeResource checks the Node's capacity and allocatable of name.
func nodeResource(n *agent.APIPods, name v1.ResourceName, capacity, allocatable int64) error {
	node, err := n.NodeObject()
	if err != nil {
		return err
	}
	c, a := node.Status.Capacity[name], node.Status.Allocatable[name]
	if c.Value() != capacity || a.Value() != allocatable {
		return fmt.Errorf("capacity %s, allocatable %s", c.String(), a.String())
	}
	return nil
}

// syncBuffer is the plugin's output, written by the process's two
// streams and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
