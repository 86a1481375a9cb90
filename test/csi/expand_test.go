package csi

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// publishTarget is where the node publishes the PV for the pod, in the
// kubelet's layout.
func publishTarget(root string, pod types.UID, pv string) string {
	return filepath.Join(root, "pods", string(pod), "volumes", "kubernetes.io~csi", pv, "mount")
}

// blockPublishTarget is where a node publishes a block PV for a pod.
func blockPublishTarget(root string, pod types.UID, pv string) string {
	return filepath.Join(root, "plugins", "kubernetes.io", "csi", "volumeDevices", "publish", pv, string(pod))
}

// expandRunning raises the claim's request to size while pod uses it, and
// waits for the node's part: the driver's NodeExpandVolume to the size at
// target, the pod's publish path (the driver logs each call), the claim's
// capacity the size with no resize left pending, the pod still running,
// none of its containers restarted.
func expandRunning(t *testing.T, n *csiNode, d *agent.CSIDriver, claim string, pod *v1.Pod, target, size string) {
	t.Helper()
	ctx := context.Background()
	want := resource.MustParse(size)
	pvcs := n.Admin.CoreV1().PersistentVolumeClaims(n.NS)
	c, err := pvcs.Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.Spec.Resources.Requests[v1.ResourceStorage] = want
	if _, err := pvcs.Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`NodeExpandVolume .*volume_path:\s*"` + regexp.QuoteMeta(target) +
		`".*required_bytes:\s*` + fmt.Sprint(want.Value()))
	agent.Eventually(t, "NodeExpandVolume to "+size+" at the publish target", 2*time.Minute, func() error {
		if !call.MatchString(d.Log()) {
			return fmt.Errorf("no such call in the driver's log")
		}
		return nil
	})
	claimExpanded(t, n.Admin, n.NS, claim, want)
	p, err := n.Admin.CoreV1().Pods(n.NS).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.UID != pod.UID || p.Status.Phase != v1.PodRunning || len(p.Status.ContainerStatuses) == 0 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("pod %s after the expansion: phase %s, statuses %+v", pod.Name, p.Status.Phase, p.Status.ContainerStatuses)
	}
}

// claimExpanded waits until the claim's status shows size, with no resize
// status nor resize condition left: the node marked its part finished.
func claimExpanded(t *testing.T, admin kubernetes.Interface, ns, claim string, size resource.Quantity) {
	t.Helper()
	agent.Eventually(t, "claim "+claim+" expanded to "+size.String(), 2*time.Minute, func() error {
		c, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), claim, metav1.GetOptions{})
		if err != nil {
			return err
		}
		got := c.Status.Capacity[v1.ResourceStorage]
		if got.Cmp(size) != 0 || c.Status.AllocatedResourceStatuses[v1.ResourceStorage] != "" {
			return fmt.Errorf("capacity %s, resize status %q", got.String(), c.Status.AllocatedResourceStatuses[v1.ResourceStorage])
		}
		for _, cond := range c.Status.Conditions {
			switch cond.Type {
			case v1.PersistentVolumeClaimFileSystemResizePending, v1.PersistentVolumeClaimResizing, v1.PersistentVolumeClaimNodeResizeError:
				return fmt.Errorf("condition %s %s", cond.Type, cond.Message)
			}
		}
		return nil
	})
}

// TestCSIExpandFailure: the fake driver fails NodeExpandVolume of a
// running pod's volume whose claim its resizer grew: the node reports it
// as upstream does (a VolumeResizeFailed event of the pod, a
// NodeResizeError condition on the claim) and tries again until the
// driver succeeds, after which the claim shows the size; the pod runs
// throughout.
func TestCSIExpandFailure(t *testing.T) {
	n := newCSINode(t, false, agent.WithConfig("syncFrequency: 10s\n"))
	handle := "expand-" + n.NS
	n.boundClaim(t, "data", handle)
	pod := n.Run(t, n.NewPod("grown", []v1.Volume{claimVolume("data", "data")}, n.Sleeper("c", mnt("data", "/data"))))
	ctx := context.Background()
	n.plugin.FailExpand(2, status.Error(codes.Internal, "the disk is busy"))

	// What external-resizer leaves once the controller grew the volume.
	pvName := n.NS + "-data"
	size := resource.MustParse("2Gi")
	pv, err := n.Admin.CoreV1().PersistentVolumes().Get(ctx, pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv.Spec.Capacity[v1.ResourceStorage] = size
	if _, err := n.Admin.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc, err := n.Admin.CoreV1().PersistentVolumeClaims(n.NS).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: size}
	pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
	pvc.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}}
	if _, err := n.Admin.CoreV1().PersistentVolumeClaims(n.NS).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	n.Event(t, "grown", "VolumeResizeFailed", `NodeExpandVolume.NodeExpandVolume failed for volume "`+pvName+`"`,
		"Expander.NodeExpand failed to expand the volume", "the disk is busy")
	claimExpanded(t, n.Admin, n.NS, "data", size)
	var expands []fakeplugin.Call
	for _, c := range n.plugin.Calls() {
		if c.Method == "NodeExpandVolume" {
			expands = append(expands, c)
		}
	}
	target := publishTarget(n.RootDir, pod.UID, pvName)
	if len(expands) < 3 || expands[len(expands)-1].RequiredBytes != size.Value() || expands[len(expands)-1].Path != target {
		t.Fatalf("NodeExpandVolume calls %+v, want two failures then one to %d at %s", expands, size.Value(), target)
	}
	n.Event(t, "grown", "FileSystemResizeSuccessful", `MountVolume.NodeExpandVolume succeeded for volume "`+pvName+`"`)
	if p := n.Running(t, "grown", 10*time.Second); p.UID != pod.UID || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Fatalf("pod after the expansion: %+v", p.Status)
	}
}
