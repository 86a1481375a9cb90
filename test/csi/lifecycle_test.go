package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// TestCSIHostpathPod: a volume's whole life through the node with a real
// driver and its sidecars. A claim of the hostpath driver's StorageClass
// is provisioned and bound; the attach-detach controller makes the
// VolumeAttachment of the pod that uses it, external-attacher attaches
// it; the node stages and publishes the volume, and what the pod writes
// is in the driver's volume directory; the Node lists the volume in use;
// the driver measures it. The claim's request raised: the resizer grows
// the volume, the node grows it under the running pod and the claim shows
// the new size.
// The pod deleted: unpublished and unstaged, no mount left, the volume no
// longer in use, the VolumeAttachment detached and gone. The claim
// deleted: the volume's directory gone.
func TestCSIHostpathPod(t *testing.T) {
	agent.CSISidecars(t, env.Require(t, env.WithAPIServer()))
	// A short volume stats period: a measure taken before the publish
	// (the eviction manager reads the summary too) is not kept long.
	// A short sync period: a running pod's claim grown is noticed at a
	// sync of the pod, as upstream's.
	n := &csiNode{APIPods: kubelet.NewAPIPods(t, agent.WithConfig("volumeStatsAggPeriod: 10s\nsyncFrequency: 10s\n"))}
	n.Up(t, "csi-hostpath")
	d := agent.StartCSIDriver(t, n.Env, agent.CSIDriverConfig{Sidecars: true, AttachDetach: true, Resizer: true,
		KubeletRoot: n.RootDir, NodeID: "hostpath-" + n.Name})
	ctx := context.Background()
	driverOnNode(t, n.ClusterNode, d)

	pv := provision(t, n.Admin, d, n.NS, "data", "4Mi", v1.ReadWriteOnce)
	handle := pv.Spec.CSI.VolumeHandle
	writer := n.Run(t, n.NewPod("writer", []v1.Volume{claimVolume("store", "data")},
		n.Busybox("c", "echo from-the-pod > /data/hello && exec sleep 3600", mnt("store", "/data"))))
	agent.Eventually(t, "the pod's file in the driver's volume", 30*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(d.VolumeDir(handle), "hello"))
		if err != nil || string(b) != "from-the-pod\n" {
			return fmt.Errorf("%q, %v", b, err)
		}
		return nil
	})
	vas, err := n.Admin.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var va string
	for _, a := range vas.Items {
		if s := a.Spec.Source.PersistentVolumeName; s != nil && *s == pv.Name && a.Spec.NodeName == n.Name && a.Status.Attached {
			va = a.Name
		}
	}
	if va == "" {
		t.Fatalf("no attached VolumeAttachment of %s on %s among %d", pv.Name, n.Name, len(vas.Items))
	}
	if m := n.csiMounts(t); len(m) != 2 { // the staging path and the pod's target
		t.Errorf("CSI mounts: %v", m)
	}
	inUse := v1.UniqueVolumeName("kubernetes.io/csi/" + d.Name + "^" + handle)
	volumeInUse(t, n.ClusterNode, inUse, true)
	// The driver measures the volume (NodeGetVolumeStats): its capacity
	// is the claim's, its usage the pod's file. The summary names it by
	// the pod's volume, with its claim; /metrics has the claim's series
	// with the same figures.
	agent.Eventually(t, "the volume in /stats/summary and /metrics with the driver's figures", 90*time.Second, func() error {
		vols, err := n.summaryVolumes(writer.UID)
		if err != nil {
			return err
		}
		v, ok := vols["store"]
		if !ok {
			return fmt.Errorf("volume store not listed among %v", vols)
		}
		if v.PVCRef == nil || *v.PVCRef != (statsapi.PVCReference{Name: "data", Namespace: n.NS}) {
			return fmt.Errorf("volume store: pvcRef %+v, want data in %s", v.PVCRef, n.NS)
		}
		if figure(v.CapacityBytes) == 0 || figure(v.UsedBytes) == 0 || figure(v.Inodes) == 0 {
			return fmt.Errorf("volume store: used %d of %d bytes, %d inodes; want nonzero",
				figure(v.UsedBytes), figure(v.CapacityBytes), figure(v.Inodes))
		}
		m, err := n.volumeStatsMetrics(n.NS, "data")
		if err != nil {
			return err
		}
		if got := m["kubelet_volume_stats_capacity_bytes"]; got != float64(figure(v.CapacityBytes)) {
			return fmt.Errorf("kubelet_volume_stats_capacity_bytes %v, want the summary's %d", got, figure(v.CapacityBytes))
		}
		if m["kubelet_volume_stats_used_bytes"] == 0 || m["kubelet_volume_stats_inodes"] == 0 {
			return fmt.Errorf("volume stats metrics %v: want nonzero usage and inodes", m)
		}
		return nil
	})

	expandRunning(t, n, d, "data", writer, publishTarget(n.RootDir, writer.UID, pv.Name), "8Mi")

	n.deleted(t, "writer")
	if m := n.csiMounts(t); len(m) != 0 {
		t.Errorf("still mounted: %v", m)
	}
	volumeInUse(t, n.ClusterNode, inUse, false)
	agent.Eventually(t, "VolumeAttachment "+va+" detached and gone", 2*time.Minute, func() error {
		_, err := n.Admin.StorageV1().VolumeAttachments().Get(ctx, va, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			err = errors.New("still there")
		}
		return err
	})
	deleteClaim(t, n.Admin, n.NS, "data", pv.Name)
	if _, err := os.Stat(d.VolumeDir(handle)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume's directory after its PV is deleted: %v, want it gone", err)
	}
}

// driverOnNode waits until the node's CSINode lists the driver with its
// node ID: the driver registered through plugins_registry.
func driverOnNode(t *testing.T, n *agent.ClusterNode, d *agent.CSIDriver) {
	t.Helper()
	agent.Eventually(t, "the driver in the node's CSINode", 60*time.Second, func() error {
		c, err := n.Admin.StorageV1().CSINodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, dr := range c.Spec.Drivers {
			if dr.Name == d.Name {
				if dr.NodeID != d.NodeID {
					return fmt.Errorf("node ID %q, want %q", dr.NodeID, d.NodeID)
				}
				return nil
			}
		}
		return fmt.Errorf("drivers %v", c.Spec.Drivers)
	})
}

// volumeInUse waits until the Node's status.volumesInUse lists the volume,
// or no longer does.
func volumeInUse(t *testing.T, n *agent.ClusterNode, name v1.UniqueVolumeName, want bool) {
	t.Helper()
	agent.Eventually(t, fmt.Sprintf("%s in the Node's volumesInUse: %v", name, want), 60*time.Second, func() error {
		node, err := n.NodeObject()
		if err != nil {
			return err
		}
		if slices.Contains(node.Status.VolumesInUse, name) != want {
			return fmt.Errorf("volumesInUse %v", node.Status.VolumesInUse)
		}
		return nil
	})
}
