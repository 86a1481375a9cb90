package csi

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// ephemeralVolume is a generic ephemeral volume of the driver's
// StorageClass.
func ephemeralVolume(name string, d *agent.CSIDriver, size string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
		VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: &d.StorageClass, AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}}}}}}
}

// TestCSIGenericEphemeral: a pod with a generic ephemeral volume of the
// hostpath driver's StorageClass. kube-controller-manager's ephemeral
// volume controller makes its claim POD-VOLUME, owned by the pod; it is
// provisioned, bound and attached; the pod runs and what it writes is in
// the driver's volume; the Node lists the volume in use. The pod deleted,
// nothing stays mounted and the volume is no longer in use. A pod whose
// claim name is taken by a claim it does not own waits with upstream's
// error in a FailedMount event and never runs.
func TestCSIGenericEphemeral(t *testing.T) {
	agent.CSISidecars(t, env.Require(t, env.WithAPIServer()))
	n := &csiNode{APIPods: kubelet.NewAPIPods(t)}
	n.Up(t, "csi-ephemeral")
	d := agent.StartCSIDriver(t, n.Env, agent.CSIDriverConfig{Sidecars: true, AttachDetach: true,
		KubeletRoot: n.RootDir, NodeID: "hostpath-" + n.Name})
	agent.StartKubeControllers(t, n.Env, agent.EphemeralVolumeController)
	ctx := context.Background()
	driverOnNode(t, n.ClusterNode, d)

	pod := n.NewPod("writer", []v1.Volume{ephemeralVolume("scratch", d, "3Mi")},
		n.Busybox("c", "echo from-the-pod > /scratch/hello && exec sleep 3600", mnt("scratch", "/scratch")))
	created := n.Create(t, pod)
	writer := n.Running(t, "writer", 3*time.Minute)
	pvc, err := n.Admin.CoreV1().PersistentVolumeClaims(n.NS).Get(ctx, "writer-scratch", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if owner := metav1.GetControllerOf(pvc); owner == nil || owner.Kind != "Pod" || owner.UID != created.UID {
		t.Errorf("claim %s controlled by %+v, want pod writer (%s)", pvc.Name, owner, created.UID)
	}
	pv, err := n.Admin.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	handle := pv.Spec.CSI.VolumeHandle
	agent.Eventually(t, "the pod's file in the driver's volume", 30*time.Second, func() error {
		b, err := os.ReadFile(filepath.Join(d.VolumeDir(handle), "hello"))
		if err != nil || string(b) != "from-the-pod\n" {
			return fmt.Errorf("%q, %v", b, err)
		}
		return nil
	})
	if m := n.csiMounts(t); len(m) != 2 { // the staging path and the pod's target
		t.Errorf("CSI mounts: %v", m)
	}
	inUse := v1.UniqueVolumeName("kubernetes.io/csi/" + d.Name + "^" + handle)
	volumeInUse(t, n.ClusterNode, inUse, true)

	n.deleted(t, writer.Name)
	if m := n.csiMounts(t); len(m) != 0 {
		t.Errorf("still mounted: %v", m)
	}
	volumeInUse(t, n.ClusterNode, inUse, false)

	// A claim of the name the pod's volume gets, made beforehand by
	// someone else and bound: the pod is not its owner.
	provision(t, n.Admin, d, n.NS, "squatted-scratch", "1Mi", v1.ReadWriteOnce)
	n.Create(t, n.NewPod("squatted", []v1.Volume{ephemeralVolume("scratch", d, "1Mi")}, n.Sleeper("c", mnt("scratch", "/scratch"))))
	n.Event(t, "squatted", "FailedMount",
		fmt.Sprintf("PVC %s/squatted-scratch was not created for pod %s/squatted (pod is not owner)", n.NS, n.NS))
	p, err := n.Get("squatted")
	if err != nil {
		t.Fatal(err)
	}
	if p.Status.Phase != v1.PodPending || len(n.csiMounts(t)) != 0 {
		t.Errorf("the pod of a claim it does not own: phase %s, CSI mounts %v", p.Status.Phase, n.csiMounts(t))
	}
}
