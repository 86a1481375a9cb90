// Package volumes runs actorlet as the environment's node against the real
// kube-apiserver and containerd with pods that use volumes (issue #17):
// for each volume type and option, what the container sees (files, modes,
// owners, mounts) and what the API shows (FailedMount events,
// ContainerCreating), and on the host, what is mounted under the pods'
// directories, across an actorlet kill -9 and after a pod is gone.
// Upstream kubelet v1.37.2 is the reference for every expectation.
package volumes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/test/agent"
)

// kubelet is actorlet, built once for the package, or the kubelet that
// VOLUMES_KUBELET names: upstream's, the reference, to check what the
// tests expect.
//
//	VOLUMES_KUBELET=$(hack/node-env upstream-kubelet) go test ./test/volumes/
var kubelet agent.Kubelet

func TestMain(m *testing.M) { kubelet.Main(m, "VOLUMES_KUBELET") }

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
	*agent.APIPods
}

// newVolNode starts the environment's node and waits until it is Ready.
// Its cleanup also unmounts whatever is left mounted under its root
// directory (a failed test's tmpfs), so that the temporary directory can
// be removed.
func newVolNode(t *testing.T, opts ...agent.NodeOption) *volNode {
	t.Helper()
	opts = append([]agent.NodeOption{
		agent.WithConfig(fmt.Sprintf("syncFrequency: %s\nvolumeStatsAggPeriod: %s\n", syncFrequency, volumeStatsAggPeriod))}, opts...)
	n := &volNode{APIPods: kubelet.NewAPIPods(t, opts...)}
	n.Up(t, "vol")
	return n
}

func mnt(volume, path string) v1.VolumeMount { return v1.VolumeMount{Name: volume, MountPath: path} }

// creating is nil while the API shows the pod waiting for its volumes as
// upstream shows it: phase Pending, every container waiting with reason
// ContainerCreating, and no sandbox yet (PodReadyToStartContainers
// False): upstream mounts the volumes before it makes the sandbox.
func (n *volNode) creating(name string) func() error {
	return func() error {
		p, err := n.Get(name)
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

// containerMount is the line of the container's /proc/mounts whose mount
// point is path: "SOURCE PATH FSTYPE OPTIONS 0 0".
func (n *volNode) containerMount(t *testing.T, pod, container, path string) (fstype string, options []string) {
	t.Helper()
	line := n.Sh(t, pod, container, fmt.Sprintf("awk '$2 == %q' /proc/mounts", path))
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

// kib is a tmpfs size as the kernel shows it in the mount options: in
// KiB, rounded up to whole pages.
func kib(bytes int64) string {
	page := int64(os.Getpagesize())
	return fmt.Sprintf("size=%dk", (bytes+page-1)/page*page/1024)
}
