package csi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	registerapi "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/test/agent"
)

// csiNode is the environment's node with the fake driver registered on
// it, serving volumes from backing, and its CSIDriver object.
type csiNode struct {
	*agent.APIPods
	plugin  *fakeplugin.Plugin
	backing string
}

// fakeUsage is what the fake driver tells of every volume's usage:
// figures no filesystem on the node has, so the summary shows whether
// they came from the driver.
var fakeUsage = []*csipb.VolumeUsage{
	{Unit: csipb.VolumeUsage_BYTES, Total: 5 << 30, Available: 5<<30 - 123456789, Used: 123456789},
	{Unit: csipb.VolumeUsage_INODES, Total: 4321, Available: 4000, Used: 321},
}

// newCSINode starts the node, registers the fake driver (staging volumes)
// and makes its CSIDriver object with attachRequired as asked.
func newCSINode(t *testing.T, attachRequired bool, opts ...agent.NodeOption) *csiNode {
	t.Helper()
	n := &csiNode{APIPods: kubelet.NewAPIPods(t, opts...), backing: t.TempDir()}
	n.AtCleanup(func() { removeTopologyLabel(t, n.ClusterNode) })
	n.Up(t, "csi")
	csiDir := filepath.Join(n.RootDir, "plugins", driver)
	if err := os.MkdirAll(csiDir, 0o750); err != nil {
		t.Fatal(err)
	}
	n.plugin = &fakeplugin.Plugin{Type: registerapi.CSIPlugin, Name: driver, Versions: []string{"1.0.0"},
		NodeID: "fake-node-" + n.Name, MaxVolumes: 7, Topology: map[string]string{topologyKey: "zone-1"},
		BackingDir: n.backing, StageUnstage: true, GetVolumeStats: true, VolumeUsage: fakeUsage, ExpandVolume: true}
	n.plugin.Serve(t, filepath.Join(n.RootDir, "plugins_registry", driver+"-reg.sock"), filepath.Join(csiDir, "csi.sock"))
	registered(t, n.ClusterNode, n.plugin, 1)

	file := storagev1.FileFSGroupPolicy
	yes := true
	obj := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{
		AttachRequired: &attachRequired, PodInfoOnMount: &yes, FSGroupPolicy: &file,
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent, storagev1.VolumeLifecycleEphemeral}}}
	n.MakeCSIDriver(t, obj)
	return n
}

// boundClaim makes a CSI PV of the fake driver with handle and a claim
// bound to it (agent.BoundCSIClaim).
func (n *csiNode) boundClaim(t *testing.T, name, handle string) {
	t.Helper()
	n.BoundCSIClaim(t, driver, name, handle)
}

func claimVolume(name, claim string) v1.Volume { return agent.CSIClaimVolume(name, claim) }

func mnt(volume, path string) v1.VolumeMount { return v1.VolumeMount{Name: volume, MountPath: path} }

// count is how many calls of method the plugin served for volumeID ("":
// any).
func count(calls []fakeplugin.Call, method, volumeID string) int {
	return fakeplugin.Count(calls, method, volumeID)
}

// deleted deletes the pod and waits until the API no longer has it: the
// node lets it go only once its volumes are torn down.
func (n *csiNode) deleted(t *testing.T, name string) {
	t.Helper()
	if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "pod "+name+" gone", 90*time.Second, func() error {
		_, err := n.Get(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
}

// csiMounts are the host's mounts of CSI volumes under the node's root.
func (n *csiNode) csiMounts(t *testing.T) []string {
	var out []string
	for _, m := range agent.MountsUnder(t, n.RootDir) {
		if strings.Contains(m, "kubernetes.io~csi") || strings.Contains(m, "kubernetes.io/csi") {
			out = append(out, m)
		}
	}
	return out
}

// TestCSIVolumes: a pod with a claim of a CSI PV (the driver requires no
// attach) and an inline CSI volume runs; what it writes is in the
// driver's directories; the PV was staged once and both published into
// the pod with its information; deleted, the pod's volumes are
// unpublished, the PV unstaged, and nothing stays mounted.
func TestCSIVolumes(t *testing.T) {
	n := newCSINode(t, false)
	handle := "vol-" + n.NS
	n.boundClaim(t, "data", handle)
	inline := v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: driver,
		VolumeAttributes: map[string]string{"from": "inline"}}}}
	pod := n.Run(t, n.NewPod("csi-pod", []v1.Volume{claimVolume("data", "data"), inline},
		n.Busybox("c", "echo from-the-pod > /data/hello && echo inline > /scratch/hi && exec sleep 3600", mnt("data", "/data"), mnt("scratch", "/scratch"))))
	agent.Eventually(t, "the pod's files in the driver's directories", 30*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(n.backing, handle, "hello"))
		if err != nil || string(b) != "from-the-pod\n" {
			return fmt.Errorf("PV: %q, %v", b, err)
		}
		matches, _ := filepath.Glob(filepath.Join(n.backing, "csi-*", "hi"))
		if len(matches) != 1 {
			return fmt.Errorf("inline: %v", matches)
		}
		return nil
	})
	calls := n.plugin.Calls()
	if count(calls, "NodeStageVolume", handle) != 1 || count(calls, "NodePublishVolume", handle) != 1 || count(calls, "NodePublishVolume", "") != 2 ||
		count(calls, "NodeStageVolume", "") != 1 {
		t.Fatalf("calls: %+v", calls)
	}
	for _, c := range calls {
		if c.Method != "NodePublishVolume" {
			continue
		}
		if c.VolumeContext["csi.storage.k8s.io/pod.name"] != "csi-pod" || c.VolumeContext["csi.storage.k8s.io/pod.uid"] != string(pod.UID) {
			t.Errorf("publish without the pod's information: %+v", c.VolumeContext)
		}
		wantEph := strconv.FormatBool(c.VolumeID != handle)
		if c.VolumeContext["csi.storage.k8s.io/ephemeral"] != wantEph {
			t.Errorf("publish of %s: ephemeral %q, want %s", c.VolumeID, c.VolumeContext["csi.storage.k8s.io/ephemeral"], wantEph)
		}
		if !strings.HasPrefix(c.Path, filepath.Join(n.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~csi")+"/") {
			t.Errorf("target %s", c.Path)
		}
	}
	if len(n.csiMounts(t)) != 3 { // the staging path and two targets
		t.Errorf("CSI mounts: %v", n.csiMounts(t))
	}
	// The summary names each volume by the pod's volume, the claim's with
	// its claim, as upstream's.
	agent.Eventually(t, "both CSI volumes in /stats/summary with the driver's figures", 90*time.Second, func() error {
		vols, err := n.summaryVolumes(pod.UID)
		if err != nil {
			return err
		}
		for _, c := range []struct {
			name string
			pvc  *statsapi.PVCReference
		}{{"data", &statsapi.PVCReference{Name: "data", Namespace: n.NS}}, {"scratch", nil}} {
			v, ok := vols[c.name]
			if !ok {
				return fmt.Errorf("volume %s not listed among %v", c.name, vols)
			}
			if (v.PVCRef == nil) != (c.pvc == nil) || (c.pvc != nil && *v.PVCRef != *c.pvc) {
				return fmt.Errorf("volume %s: pvcRef %+v, want %+v", c.name, v.PVCRef, c.pvc)
			}
			if figure(v.UsedBytes) != 123456789 || figure(v.CapacityBytes) != 5<<30 || figure(v.InodesUsed) != 321 || figure(v.Inodes) != 4321 {
				return fmt.Errorf("volume %s: used %d of %d bytes, %d of %d inodes; want the driver's", c.name,
					figure(v.UsedBytes), figure(v.CapacityBytes), figure(v.InodesUsed), figure(v.Inodes))
			}
		}
		return nil
	})
	for _, c := range n.plugin.StatsCalls() {
		if !strings.HasPrefix(c.Path, filepath.Join(n.RootDir, "pods", string(pod.UID), "volumes", "kubernetes.io~csi")+"/") ||
			filepath.Base(c.Path) != "mount" {
			t.Errorf("NodeGetVolumeStats of %s at %s, want the publish target", c.VolumeID, c.Path)
		}
	}

	n.deleted(t, "csi-pod")
	calls = n.plugin.Calls()
	if count(calls, "NodeUnpublishVolume", "") != 2 || count(calls, "NodeUnstageVolume", handle) != 1 {
		t.Fatalf("calls after the pod went: %+v", calls)
	}
	if m := n.csiMounts(t); len(m) != 0 {
		t.Errorf("still mounted: %v", m)
	}
	// Upstream's kubelet removes the directory in a later housekeeping
	// pass; actorlet before the pod leaves the API.
	agent.Eventually(t, "the pod's directory removed", 30*time.Second, func() error {
		if _, err := os.Stat(filepath.Join(n.RootDir, "pods", string(pod.UID))); !os.IsNotExist(err) {
			return fmt.Errorf("the pod's directory stays: %v", err)
		}
		return nil
	})
	if b, err := os.ReadFile(filepath.Join(n.backing, handle, "hello")); err != nil || string(b) != "from-the-pod\n" {
		t.Errorf("the volume's data after the pod: %q, %v", b, err)
	}
}

// TestCSIVolumesAfterRestart: the node killed while a pod's CSI volume is
// mounted, the pod deleted meanwhile: the node back, what its directories
// say (vol_data.json) is unpublished and unstaged, and nothing stays.
func TestCSIVolumesAfterRestart(t *testing.T) {
	n := newCSINode(t, false, agent.WithConfig("syncFrequency: 10s\n"))
	handle := "restart-" + n.NS
	n.boundClaim(t, "data", handle)
	pod := n.Run(t, n.NewPod("before", []v1.Volume{claimVolume("data", "data")}, n.Sleeper("c", mnt("data", "/data"))))
	n.Stop(syscall.SIGKILL)
	zero := int64(0)
	if err := n.Admin.CoreV1().Pods(n.NS).Delete(context.Background(), "before", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	n.Start()
	agent.Eventually(t, "the volume unpublished and unstaged", 90*time.Second, func() error {
		calls := n.plugin.Calls()
		if count(calls, "NodeUnpublishVolume", handle) == 0 || count(calls, "NodeUnstageVolume", handle) == 0 {
			return fmt.Errorf("calls %v", calls)
		}
		if m := n.csiMounts(t); len(m) != 0 {
			return fmt.Errorf("still mounted: %v", m)
		}
		if _, err := os.Stat(filepath.Join(n.RootDir, "pods", string(pod.UID))); !os.IsNotExist(err) {
			return fmt.Errorf("the pod's directory stays: %v", err)
		}
		return nil
	})
}

// TestCSIHungPublish: a driver whose NodePublishVolume never answers
// keeps only its pod waiting: another pod of the node starts meanwhile.
func TestCSIHungPublish(t *testing.T) {
	n := newCSINode(t, false)
	handle := "hung-" + n.NS
	n.boundClaim(t, "hung", handle)
	n.plugin.HangPublish(handle)
	n.Create(t, n.NewPod("stuck", []v1.Volume{claimVolume("data", "hung")}, n.Sleeper("c", mnt("data", "/data"))))
	agent.Eventually(t, "the hung publish called", 30*time.Second, func() error {
		if count(n.plugin.Calls(), "NodePublishVolume", handle) == 0 {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	n.Run(t, n.NewPod("free", nil, n.Sleeper("c")))
	p, err := n.Get("stuck")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending {
		t.Errorf("the pod of the hung volume is %s", p.Status.Phase)
	}
}

// TestCSIAttachRequired: with a driver that requires attach, the pod
// waits until its VolumeAttachment, which the attach-detach controller
// makes, is attached (the test plays external-attacher), and is then
// given its publish context; the Node lists the volume in use meanwhile.
func TestCSIAttachRequired(t *testing.T) {
	n := newCSINode(t, true)
	node, err := n.NodeObject()
	if err != nil {
		t.Fatal(err)
	}
	if node.Annotations["volumes.kubernetes.io/controller-managed-attach-detach"] != "true" {
		t.Fatalf("the Node's annotations: %v", node.Annotations)
	}
	agent.StartKubeControllers(t, n.Env, agent.AttachDetachController)
	handle := "att-" + n.NS
	n.boundClaim(t, "data", handle)
	n.Create(t, n.NewPod("attached", []v1.Volume{claimVolume("data", "data")}, n.Sleeper("c", mnt("data", "/data"))))

	vas := n.Admin.StorageV1().VolumeAttachments()
	var va *storagev1.VolumeAttachment
	agent.Eventually(t, "the attach-detach controller's VolumeAttachment", 60*time.Second, func() error {
		list, err := vas.List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			if s := list.Items[i].Spec.Source.PersistentVolumeName; s != nil && *s == n.NS+"-data" && list.Items[i].Spec.NodeName == n.Name {
				va = &list.Items[i]
				return nil
			}
		}
		return fmt.Errorf("none among %d", len(list.Items))
	})
	t.Cleanup(func() { _ = vas.Delete(context.Background(), va.Name, metav1.DeleteOptions{}) })
	// Not attached yet: the pod waits, and nothing is published.
	time.Sleep(2 * time.Second)
	if c := count(n.plugin.Calls(), "NodePublishVolume", ""); c != 0 {
		t.Fatalf("published %d times before the attach", c)
	}
	if !kubelet.Upstream {
		// Upstream's kubelet waits without an event until its 2 min
		// timeout; actorlet says at once what it waits for.
		n.Event(t, "attached", "FailedMount", "waiting for VolumeAttachment "+va.Name)
	}

	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"device": "/dev/fake0"}}
	if _, err := vas.UpdateStatus(context.Background(), va, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Running(t, "attached", 3*time.Minute)
	calls := n.plugin.Calls()
	for _, c := range calls {
		if (c.Method == "NodePublishVolume" || c.Method == "NodeStageVolume") && c.PublishContext["device"] != "/dev/fake0" {
			t.Errorf("%s without the attachment's publish context: %+v", c.Method, c.PublishContext)
		}
	}
	want := v1.UniqueVolumeName("kubernetes.io/csi/" + driver + "^" + handle)
	volumeInUse(t, n.ClusterNode, want, true)

	n.deleted(t, "attached")
	volumeInUse(t, n.ClusterNode, want, false)
	if m := n.csiMounts(t); len(m) != 0 {
		t.Errorf("still mounted: %v", m)
	}
}
