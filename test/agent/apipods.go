package agent

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// APIPods makes pods through the API server in one namespace of a
// ClusterNode, bound to that node (there is no scheduler in these tests),
// and looks at them from the API and from inside their containers. Its
// methods take the subtest's t: the subtests of a test share the node.
type APIPods struct {
	*ClusterNode
	// NS is the namespace of the pods.
	NS string
	// Cfg is the admin's REST configuration, for exec.
	Cfg *rest.Config
}

// NewAPIPods prepares the environment's node running binary, reachable by
// the API server (OnPodNetwork), with opts; Up starts it.
func NewAPIPods(t *testing.T, binary string, opts ...NodeOption) *APIPods {
	t.Helper()
	c := NewClusterNode(t, binary, append([]NodeOption{OnPodNetwork()}, opts...)...)
	return &APIPods{ClusterNode: c, Cfg: c.Env.AdminRESTConfig(t)}
}

// Up starts the node, waits until it is Ready and makes the namespace.
func (n *APIPods) Up(t *testing.T, prefix string) {
	t.Helper()
	n.Start()
	Eventually(t, "node Ready", 30*time.Second, n.Ready)
	n.NS = n.Namespace(prefix)
}

// NewPod is a pod bound to the node with containers and volumes, a grace
// period of 1 s and no service-account token unless the test asks for it.
func (n *APIPods) NewPod(name string, vols []v1.Volume, containers ...v1.Container) *v1.Pod {
	grace := int64(1)
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: n.NS},
		Spec: v1.PodSpec{
			NodeName:                      n.Name,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Volumes:                       vols,
			Containers:                    containers,
		},
	}
}

// Busybox is a busybox container running script (sh -c) with mounts.
func (n *APIPods) Busybox(name, script string, mounts ...v1.VolumeMount) v1.Container {
	return v1.Container{Name: name, Image: n.Env.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}, VolumeMounts: mounts}
}

// Sleeper is a busybox container that only waits, for exec.
func (n *APIPods) Sleeper(name string, mounts ...v1.VolumeMount) v1.Container {
	return n.Busybox(name, "exec sleep 3600", mounts...)
}

// FreshPullPod is a pod of a Sleeper container of image, pulled at each
// start (Always), after the image was removed from the runtime so that
// the pull is a real one.
func (n *APIPods) FreshPullPod(t *testing.T, name, image string) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := n.Img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: image}}); err != nil {
		t.Fatalf("remove %s: %v", image, err)
	}
	c := n.Sleeper("c")
	c.Image, c.ImagePullPolicy = image, v1.PullAlways
	return n.NewPod(name, nil, c)
}

// Create creates the pod through the API as the admin.
func (n *APIPods) Create(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	created, err := n.Admin.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return created
}

// Get reads the pod of the namespace as the admin.
func (n *APIPods) Get(name string) (*v1.Pod, error) {
	return n.Admin.CoreV1().Pods(n.NS).Get(context.Background(), name, metav1.GetOptions{})
}

// Run creates the pod and waits until the API shows it Running with every
// container running; it returns the pod as the API shows it then.
func (n *APIPods) Run(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	n.Create(t, p)
	return n.Running(t, p.Name, 60*time.Second)
}

// Running waits until the API shows the pod Running with every container
// running.
func (n *APIPods) Running(t *testing.T, name string, within time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	Eventually(t, "pod "+name+" running in the API", within, func() error {
		p, err := n.Get(name)
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return fmt.Errorf("phase %s, %d container statuses of %d", p.Status.Phase, len(p.Status.ContainerStatuses), len(p.Spec.Containers))
		}
		if err := PodRunning(p); err != nil {
			return err
		}
		pod = p
		return nil
	})
	return pod
}

// ContainerState returns the API's status of the pod's container.
func (n *APIPods) ContainerState(name, container string) (*v1.ContainerStatus, error) {
	p, err := n.Get(name)
	if err != nil {
		return nil, err
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for i := range list {
			if cs := &list[i]; cs.Name == container {
				return cs, nil
			}
		}
	}
	return nil, fmt.Errorf("pod %s (phase %s): no status of container %s", name, p.Status.Phase, container)
}

// ContainerRunning waits until the API shows the pod's container running.
func (n *APIPods) ContainerRunning(t *testing.T, name, container string) {
	t.Helper()
	Eventually(t, "container "+container+" of "+name+" running", 60*time.Second, func() error {
		cs, err := n.ContainerState(name, container)
		if err != nil {
			return err
		}
		if cs.State.Running == nil {
			return fmt.Errorf("container %s: %+v", container, cs.State)
		}
		return nil
	})
}

// Waiting waits until the API shows the pod's container waiting with
// reason, its message containing every one of parts, and returns the
// message.
func (n *APIPods) Waiting(t *testing.T, name, container, reason string, parts ...string) string {
	t.Helper()
	var msg string
	Eventually(t, fmt.Sprintf("container %s of %s waiting with %s %q", container, name, reason, parts), 60*time.Second, func() error {
		cs, err := n.ContainerState(name, container)
		if err != nil {
			return err
		}
		w := cs.State.Waiting
		if w == nil || w.Reason != reason || !containsAll(w.Message, parts) {
			return fmt.Errorf("container %s: %+v", container, cs.State)
		}
		msg = w.Message
		return nil
	})
	return msg
}

// Event waits for an event of the pod with reason whose message contains
// every one of parts, and returns it.
func (n *APIPods) Event(t *testing.T, name, reason string, parts ...string) *v1.Event {
	t.Helper()
	var found *v1.Event
	Eventually(t, fmt.Sprintf("a %s event of %s saying %q", reason, name, parts), 60*time.Second, func() error {
		evs, err := n.Events(name)
		if err != nil {
			return err
		}
		var seen []string
		for i, ev := range evs {
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason != reason || !containsAll(ev.Message, parts) {
				continue
			}
			found = &evs[i]
			t.Logf("%s: %s", ev.Reason, ev.Message)
			return nil
		}
		return fmt.Errorf("events: %q", seen)
	})
	return found
}

// Events lists the events of the pod of the namespace, or every event of
// the namespace when name is "".
func (n *APIPods) Events(name string) ([]v1.Event, error) {
	var opts metav1.ListOptions
	if name != "" {
		opts.FieldSelector = "involvedObject.name=" + name
	}
	evs, err := n.Admin.CoreV1().Events(n.NS).List(context.Background(), opts)
	if err != nil {
		return nil, err
	}
	return evs.Items, nil
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// Sh runs script (sh -c) in the pod's container through the API server's
// pods/exec and returns its output without the last newline; it fails the
// test when the script fails.
func (n *APIPods) Sh(t *testing.T, pod, container, script string) string {
	t.Helper()
	out, err := n.ShErr(pod, container, script)
	if err != nil {
		t.Fatalf("in %s/%s: %s: %v", pod, container, script, err)
	}
	return out
}

// ShErr is Sh that returns the script's failure, with its stderr.
func (n *APIPods) ShErr(pod, container, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := Exec(ctx, n.Cfg, n.Admin, ExecOptions{Namespace: n.NS, Pod: pod, Container: container,
		Command: []string{"sh", "-c", script}, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("%v (stderr %q)", err, stderr.String())
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// Expect runs script in the container and fails the subtest unless its
// output is want.
func (n *APIPods) Expect(t *testing.T, pod, container, script, want string) {
	t.Helper()
	if got := n.Sh(t, pod, container, script); got != want {
		t.Errorf("in %s/%s, %s: got %q, want %q", pod, container, script, got, want)
	}
}

// EventuallySees polls script in the container until its output is want,
// and returns how long that took.
func (n *APIPods) EventuallySees(t *testing.T, pod, container, script, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	Eventually(t, fmt.Sprintf("%s in %s/%s printing %q", script, pod, container, want), within, func() error {
		got, err := n.ShErr(pod, container, script)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
	return time.Since(start)
}

// UpstreamKubeletConfig is what upstream's kubelet needs on this machine
// beyond the harness's configuration, which both agents take (cgroup v1
// without systemd, as test/conformance runs it), and to take the harness's
// crash-loop cap, for the tests that can run against it.
const UpstreamKubeletConfig = `cgroupDriver: cgroupfs
failSwapOn: false
featureGates:
  KubeletCrashLoopBackOffMax: true
`

// ConfigMap creates a ConfigMap in the namespace as the admin and returns
// its name.
func (n *APIPods) ConfigMap(t *testing.T, name string, data map[string]string) string {
	t.Helper()
	_, err := n.Admin.CoreV1().ConfigMaps(n.NS).Create(context.Background(),
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create configMap %s: %v", name, err)
	}
	return name
}

// Secret creates an Opaque Secret in the namespace as the admin and
// returns its name.
func (n *APIPods) Secret(t *testing.T, name string, data map[string]string) string {
	t.Helper()
	_, err := n.Admin.CoreV1().Secrets(n.NS).Create(context.Background(),
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: data}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
	return name
}
