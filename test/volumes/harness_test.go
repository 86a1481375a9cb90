// Package volumes runs actorlet as the environment's node against the real
// kube-apiserver and containerd with pods that use volumes (issue #17):
// for each volume type and option, what the container sees (files, modes,
// owners, mounts) and what the API shows (FailedMount events,
// ContainerCreating), and on the host, what is mounted under the pods'
// directories, across an actorlet kill -9 and after a pod is gone.
// Upstream kubelet v1.37.2 is the reference for every expectation.
package volumes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// binary is actorlet, built once for the package, or the kubelet that
// VOLUMES_KUBELET names.
var binary string

// upstream is set when the tests run against upstream's kubelet: the
// reference, to check what the tests expect.
//
//	VOLUMES_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/volumes/
var upstream bool

func TestMain(m *testing.M) {
	if k := os.Getenv("VOLUMES_KUBELET"); k != "" {
		binary, upstream = k, true
		os.Exit(m.Run())
	}
	agent.MainWithBinary(m, &binary)
}

// upstreamConfig is what upstream's kubelet needs on this machine (cgroup
// v1 without systemd, as test/conformance runs it) and to take the
// harness's crash-loop cap.
const upstreamConfig = `cgroupDriver: cgroupfs
failCgroupV1: false
failSwapOn: false
featureGates:
  KubeletCrashLoopBackOffMax: true
`

// syncFrequency is the node's period of pod syncs: upstream refreshes the
// content of configMap, secret, downwardAPI and projected volumes of a
// running pod at its pod syncs, so a live update shows within about one
// period (plus its jitter and the watch's delay).
const syncFrequency = 10 * time.Second

// volumeStatsAggPeriod is the node's period of volume usage measures.
const volumeStatsAggPeriod = 5 * time.Second

// volNode is the environment's node (agent.ClusterNode) reachable by the
// API server (exec, logs), with one namespace for the test's pods. Its
// helpers take the subtest's t: the subtests of a test share the node.
type volNode struct {
	*agent.ClusterNode
	e   *env.Env
	cfg *rest.Config // the admin's, for exec
	ns  string
}

// newVolNode starts the environment's node and waits until it is Ready.
// Its cleanup also unmounts whatever is left mounted under its root
// directory (a failed test's tmpfs), so that the temporary directory can
// be removed.
func newVolNode(t *testing.T, opts ...agent.NodeOption) *volNode {
	t.Helper()
	opts = append([]agent.NodeOption{agent.OnPodNetwork(),
		agent.WithConfig(fmt.Sprintf("syncFrequency: %s\nvolumeStatsAggPeriod: %s\n", syncFrequency, volumeStatsAggPeriod))}, opts...)
	if upstream {
		opts = append(opts, agent.WithConfig(upstreamConfig))
	}
	c := agent.NewClusterNode(t, binary, opts...)
	n := &volNode{ClusterNode: c, e: c.Env, cfg: c.Env.AdminRESTConfig(t)}
	n.AtCleanup(func() {
		for _, mp := range mountsUnder(t, n.RootDir) {
			if err := syscall.Unmount(mp, syscall.MNT_DETACH); err != nil {
				t.Logf("cleanup: unmount %s: %v", mp, err)
			}
		}
	})
	n.Start()
	agent.Eventually(t, "node Ready", 30*time.Second, n.Ready)
	n.ns = n.Namespace("vol")
	return n
}

// pod is a pod bound to the node (no scheduler here) with containers and
// volumes, a grace period of 1 s and no service account token unless the
// test asks for it.
func (n *volNode) pod(name string, vols []v1.Volume, containers ...v1.Container) *v1.Pod {
	grace := int64(1)
	no := false
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: n.ns},
		Spec: v1.PodSpec{
			NodeName:                      n.Name,
			TerminationGracePeriodSeconds: &grace,
			AutomountServiceAccountToken:  &no,
			Volumes:                       vols,
			Containers:                    containers,
		},
	}
}

// busybox is a busybox container running script (sh -c) with mounts.
func (n *volNode) busybox(name, script string, mounts ...v1.VolumeMount) v1.Container {
	return v1.Container{Name: name, Image: n.e.BusyboxImage, ImagePullPolicy: v1.PullIfNotPresent,
		Command: []string{"sh", "-c", script}, VolumeMounts: mounts}
}

// sleeper is a busybox container that only waits, for exec.
func (n *volNode) sleeper(name string, mounts ...v1.VolumeMount) v1.Container {
	return n.busybox(name, "exec sleep 3600", mounts...)
}

func mnt(volume, path string) v1.VolumeMount { return v1.VolumeMount{Name: volume, MountPath: path} }

// create creates the pod through the API as the admin.
func (n *volNode) create(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	created, err := n.Admin.CoreV1().Pods(p.Namespace).Create(context.Background(), p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s/%s: %v", p.Namespace, p.Name, err)
	}
	return created
}

func (n *volNode) get(name string) (*v1.Pod, error) {
	return n.Admin.CoreV1().Pods(n.ns).Get(context.Background(), name, metav1.GetOptions{})
}

// run creates the pod and waits until the API shows it Running with every
// container running; it returns the pod as the API shows it then.
func (n *volNode) run(t *testing.T, p *v1.Pod) *v1.Pod {
	t.Helper()
	n.create(t, p)
	return n.running(t, p.Name, 60*time.Second)
}

// running waits until the API shows the pod Running with every container
// running.
func (n *volNode) running(t *testing.T, name string, within time.Duration) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	agent.Eventually(t, "pod "+name+" running in the API", within, func() error {
		p, err := n.get(name)
		if err != nil {
			return err
		}
		if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
			return fmt.Errorf("phase %s, %d container statuses of %d", p.Status.Phase, len(p.Status.ContainerStatuses), len(p.Spec.Containers))
		}
		if err := agent.PodRunning(p); err != nil {
			return err
		}
		pod = p
		return nil
	})
	return pod
}

// containerState returns the API's status of the pod's container.
func (n *volNode) containerState(name, container string) (*v1.ContainerStatus, error) {
	p, err := n.get(name)
	if err != nil {
		return nil, err
	}
	for i := range p.Status.ContainerStatuses {
		if cs := &p.Status.ContainerStatuses[i]; cs.Name == container {
			return cs, nil
		}
	}
	return nil, fmt.Errorf("pod %s (phase %s): no status of container %s", name, p.Status.Phase, container)
}

// containerRunning waits until the API shows the pod's container running.
func (n *volNode) containerRunning(t *testing.T, name, container string) {
	t.Helper()
	agent.Eventually(t, "container "+container+" of "+name+" running", 60*time.Second, func() error {
		cs, err := n.containerState(name, container)
		if err != nil {
			return err
		}
		if cs.State.Running == nil {
			return fmt.Errorf("container %s: %+v", container, cs.State)
		}
		return nil
	})
}

// creating is nil while the API shows the pod waiting for its volumes as
// upstream shows it: phase Pending, every container waiting with reason
// ContainerCreating, and no sandbox yet (PodReadyToStartContainers
// False): upstream mounts the volumes before it makes the sandbox.
func (n *volNode) creating(name string) func() error {
	return func() error {
		p, err := n.get(name)
		if err != nil {
			return err
		}
		if p.Status.Phase != v1.PodPending {
			return fmt.Errorf("phase %s, want Pending", p.Status.Phase)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReadyToStartContainers && c.Status != v1.ConditionFalse {
				return fmt.Errorf("condition %s=%s, want False", c.Type, c.Status)
			}
		}
		if len(p.Status.ContainerStatuses) == 0 {
			return fmt.Errorf("no container statuses yet")
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Waiting == nil || cs.State.Waiting.Reason != "ContainerCreating" {
				return fmt.Errorf("container %s: %+v, want waiting ContainerCreating", cs.Name, cs.State)
			}
		}
		return nil
	}
}

// stuckCreating waits until the pod shows ContainerCreating and then
// checks that it stays so for a few seconds: its volumes hold it.
func (n *volNode) stuckCreating(t *testing.T, name string) {
	t.Helper()
	agent.Eventually(t, name+" ContainerCreating", 30*time.Second, n.creating(name))
	agent.Consistently(t, name+" ContainerCreating", 4*time.Second, 500*time.Millisecond, n.creating(name))
}

// event waits for an event of the pod with reason whose message contains
// every one of parts, and returns it.
func (n *volNode) event(t *testing.T, name, reason string, parts ...string) *v1.Event {
	t.Helper()
	var found *v1.Event
	agent.Eventually(t, fmt.Sprintf("a %s event of %s saying %q", reason, name, parts), 60*time.Second, func() error {
		evs, err := n.Admin.CoreV1().Events(n.ns).List(context.Background(),
			metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
		if err != nil {
			return err
		}
		var seen []string
		for i, ev := range evs.Items {
			seen = append(seen, ev.Reason+": "+ev.Message)
			if ev.Reason != reason {
				continue
			}
			if !containsAll(ev.Message, parts) {
				continue
			}
			found = &evs.Items[i]
			t.Logf("%s: %s", ev.Reason, ev.Message)
			return nil
		}
		return fmt.Errorf("events: %q", seen)
	})
	return found
}

func containsAll(s string, parts []string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

// sh runs script (sh -c) in the pod's container through the API server's
// pods/exec and returns its output without the last newline; it fails the
// test when the script fails.
func (n *volNode) sh(t *testing.T, pod, container, script string) string {
	t.Helper()
	out, err := n.shErr(pod, container, script)
	if err != nil {
		t.Fatalf("in %s/%s: %s: %v", pod, container, script, err)
	}
	return out
}

// shErr is sh that returns the script's failure, with its stderr.
func (n *volNode) shErr(pod, container, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var stdout, stderr bytes.Buffer
	err := agent.Exec(ctx, n.cfg, n.Admin, agent.ExecOptions{Namespace: n.ns, Pod: pod, Container: container,
		Command: []string{"sh", "-c", script}, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		return stdout.String(), fmt.Errorf("%v (stderr %q)", err, stderr.String())
	}
	return strings.TrimSuffix(stdout.String(), "\n"), nil
}

// expect runs script in the container and fails the subtest unless its
// output is want.
func (n *volNode) expect(t *testing.T, pod, container, script, want string) {
	t.Helper()
	if got := n.sh(t, pod, container, script); got != want {
		t.Errorf("in %s/%s, %s: got %q, want %q", pod, container, script, got, want)
	}
}

// eventuallySees polls script in the container until its output is want,
// and returns how long that took.
func (n *volNode) eventuallySees(t *testing.T, pod, container, script, want string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	agent.Eventually(t, fmt.Sprintf("%s in %s/%s printing %q", script, pod, container, want), within, func() error {
		got, err := n.shErr(pod, container, script)
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

// containerMount is the line of the container's /proc/mounts whose mount
// point is path: "SOURCE PATH FSTYPE OPTIONS 0 0".
func (n *volNode) containerMount(t *testing.T, pod, container, path string) (fstype string, options []string) {
	t.Helper()
	line := n.sh(t, pod, container, fmt.Sprintf("awk '$2 == %q' /proc/mounts", path))
	lines := strings.Split(line, "\n")
	fields := strings.Fields(lines[len(lines)-1])
	if len(fields) < 4 {
		t.Fatalf("in %s/%s: no mount at %s in /proc/mounts (%q)", pod, container, path, line)
	}
	return fields[2], strings.Split(fields[3], ",")
}

// volumeDir is where upstream's layout puts a volume of the pod on the
// host: ROOT/pods/UID/volumes/PLUGIN/NAME.
func (n *volNode) volumeDir(uid types.UID, plugin, name string) string {
	return filepath.Join(n.RootDir, "pods", string(uid), "volumes", plugin, name)
}

// podDir is ROOT/pods/UID.
func (n *volNode) podDir(uid types.UID) string { return filepath.Join(n.RootDir, "pods", string(uid)) }

// hostMount is one mount of the host's (the test's) mount namespace, as
// /proc/self/mountinfo shows it.
type hostMount struct {
	Point, FSType, Options string
}

// hostMounts reads /proc/self/mountinfo: the test runs in the host's mount
// namespace, where actorlet mounts.
func hostMounts(t testing.TB) []hostMount {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var ms []hostMount
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		fields := strings.Fields(sc.Text())
		sep := slices.Index(fields, "-")
		if len(fields) < 6 || sep < 0 || sep+3 > len(fields) {
			continue
		}
		ms = append(ms, hostMount{Point: unescapeMountPath(fields[4]), FSType: fields[sep+1], Options: fields[sep+3]})
	}
	return ms
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	return strings.NewReplacer(`\040`, " ", `\011`, "\t", `\012`, "\n", `\134`, `\`).Replace(s)
}

// mountsAt are the host's mounts whose mount point is path.
func mountsAt(t testing.TB, path string) []hostMount {
	t.Helper()
	var at []hostMount
	for _, m := range hostMounts(t) {
		if m.Point == path {
			at = append(at, m)
		}
	}
	return at
}

// mountsUnder are the host's mount points at dir or below it, deepest
// first (the order to unmount them in).
func mountsUnder(t testing.TB, dir string) []string {
	t.Helper()
	var under []string
	for _, m := range hostMounts(t) {
		if m.Point == dir || strings.HasPrefix(m.Point, dir+"/") {
			under = append(under, m.Point)
		}
	}
	slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
	return under
}

// kib is a tmpfs size as the kernel shows it in the mount options: in
// KiB, rounded up to whole pages.
func kib(bytes int64) string {
	page := int64(os.Getpagesize())
	return fmt.Sprintf("size=%dk", (bytes+page-1)/page*page/1024)
}
