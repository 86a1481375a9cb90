package csi

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// TestCSIHostpathBlock: a raw block volume through the node with the
// hostpath driver, as upstream maps it. A claim of volumeMode Block is
// provisioned (a file of its size), attached, staged (on the driver's loop
// device) and published onto a file; the pod's container has it at its
// volumeDevices devicePath, as a block device it writes with dd and reads
// back; the Node lists it in use, the summary with the driver's capacity.
// Its claim grown, the node expands it (NodeExpandVolume on the pod's
// publish path) and the container's device has the new size and the same
// data. The node killed and started again, the pod still has it. The pod
// deleted, a second pod reads the same bytes from the same volume; the
// node killed, that pod deleted meanwhile and the node back, what is on
// disk is unmapped. Then: no loop device of the driver's or the node's
// left, no mount under the node's root, no link or directory of the
// volume left.
func TestCSIHostpathBlock(t *testing.T) {
	agent.CSISidecars(t, env.Require(t, env.WithAPIServer()))
	n := &csiNode{APIPods: kubelet.NewAPIPods(t, agent.WithConfig("syncFrequency: 10s\nvolumeStatsAggPeriod: 10s\n"))}
	n.Up(t, "csi-block")
	d := agent.StartCSIDriver(t, n.Env, agent.CSIDriverConfig{Sidecars: true, AttachDetach: true, Resizer: true,
		KubeletRoot: n.RootDir, NodeID: "hostpath-" + n.Name})
	driverOnNode(t, n.ClusterNode, d)

	pv := provisionMode(t, n.Admin, d, n.NS, "disk", "4Mi", v1.PersistentVolumeBlock, v1.ReadWriteOnce)
	handle := pv.Spec.CSI.VolumeHandle
	if fi, err := os.Stat(d.VolumeDir(handle)); err != nil || fi.Size() != 4<<20 {
		t.Fatalf("the volume's backing file: %v, %v; want 4Mi", fi, err)
	}
	withDisk := func(name string) *v1.Pod {
		c := n.Sleeper("c")
		c.VolumeDevices = []v1.VolumeDevice{{Name: "disk", DevicePath: "/dev/xvda"}}
		return n.NewPod(name, []v1.Volume{claimVolume("disk", "disk")}, c)
	}
	const data = "raw-block-bytes!"
	const read = "dd if=/dev/xvda bs=16 count=1 2>/dev/null"
	writer := n.Run(t, withDisk("writer"))
	n.Expect(t, "writer", "c", "test -b /dev/xvda && echo block", "block")
	n.Sh(t, "writer", "c", "printf "+data+" | dd of=/dev/xvda bs=512 conv=sync,fsync 2>/dev/null")
	n.Expect(t, "writer", "c", read, data)
	n.Expect(t, "writer", "c", "blockdev --getsize64 /dev/xvda", "4194304")
	inUse := v1.UniqueVolumeName("kubernetes.io/csi/" + d.Name + "^" + handle)
	volumeInUse(t, n.ClusterNode, inUse, true)
	// The driver measures the device: its capacity is the claim's. This
	// node names it by its PV, upstream by the pod's volume.
	agent.Eventually(t, "the block volume in /stats/summary with the driver's capacity", 90*time.Second, func() error {
		vols, err := n.summaryVolumes(writer.UID)
		if err != nil {
			return err
		}
		v, ok := vols[pv.Name]
		if !ok {
			v, ok = vols["disk"]
		}
		if !ok {
			return fmt.Errorf("volume %s not listed among %d", pv.Name, len(vols))
		}
		if figure(v.CapacityBytes) != 4<<20 {
			return fmt.Errorf("capacity %d, want 4Mi", figure(v.CapacityBytes))
		}
		return nil
	})

	// Grown while in use: NodeExpandVolume on the pod's publish path, and
	// the container's device shows the new size, its data kept.
	expandRunning(t, n, d, "disk", writer, blockPublishTarget(n.RootDir, writer.UID, pv.Name), "8Mi")
	n.Expect(t, "writer", "c", "blockdev --getsize64 /dev/xvda", "8388608")
	n.Expect(t, "writer", "c", read, data)

	n.Stop(syscall.SIGKILL)
	n.Start()
	agent.Eventually(t, "node Ready again", 60*time.Second, n.Ready)
	n.Running(t, "writer", 60*time.Second)
	// A restarted kubelet answers exec for the pod once it has synced it.
	n.EventuallySees(t, "writer", "c", read, data, 60*time.Second)
	n.deleted(t, "writer")

	n.Run(t, withDisk("reader"))
	n.Expect(t, "reader", "c", read, data)
	n.Stop(syscall.SIGKILL)
	zero := int64(0)
	if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), "reader", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	n.Start()
	volumeInUse(t, n.ClusterNode, inUse, false)
	agent.Eventually(t, "nothing of the volume left on the node", 90*time.Second, func() error {
		return blockLeftovers(t, n, d)
	})
}

// blockLeftovers reports what a block volume left on the node: a loop
// device of the driver's or the node's, a mount under the node's root, a
// pod's link, an entry of the volume under the plugin's directory.
func blockLeftovers(t *testing.T, n *csiNode, d *agent.CSIDriver) error {
	out, err := exec.Command("losetup", "-a").CombinedOutput()
	if err != nil {
		return fmt.Errorf("losetup -a: %v: %s", err, out)
	}
	for _, l := range strings.Split(string(out), "\n") {
		if strings.Contains(l, d.StateDir) || strings.Contains(l, n.RootDir) {
			return fmt.Errorf("a loop device left: %s", l)
		}
	}
	// Upstream's kubelet bind-mounts its root directory on itself: only
	// what is below it counts.
	for _, m := range agent.MountsUnder(t, n.RootDir) {
		if m != n.RootDir {
			return fmt.Errorf("a mount left under the node's root: %s", m)
		}
	}
	left, err := filepath.Glob(filepath.Join(n.RootDir, "pods", "*", "volumeDevices", "*", "*"))
	if err != nil {
		return err
	}
	// Upstream keeps the staging and publish directories themselves,
	// empty; nothing of the volume stays in them.
	plugin := filepath.Join(n.RootDir, "plugins", "kubernetes.io", "csi", "volumeDevices")
	for _, pattern := range []string{"staging/*", "publish/*", "*"} {
		m, err := filepath.Glob(filepath.Join(plugin, pattern))
		if err != nil {
			return err
		}
		for _, p := range m {
			if b := filepath.Base(p); pattern != "*" || (b != "staging" && b != "publish") {
				left = append(left, p)
			}
		}
	}
	if len(left) != 0 {
		return fmt.Errorf("left of the volume on the node: %v", left)
	}
	return nil
}
