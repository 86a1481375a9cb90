package csi

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// publishedTo is the publish context key of the hostpath driver's
// ControllerPublishVolume (test/csi/hostpathplugin): the node ID it
// published the volume to.
const publishedTo = "hostpath.csi.actorlet.example.com/published-to"

// namespace makes a namespace for the test's claims, deleted at cleanup.
func namespace(t *testing.T, admin kubernetes.Interface) string {
	t.Helper()
	ns, err := admin.CoreV1().Namespaces().Create(context.Background(),
		&v1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "csi-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// provision creates a claim of the driver's StorageClass and waits until
// kube-controller-manager has bound it to the PV that external-provisioner
// made; it returns that PV.
func provision(t *testing.T, admin kubernetes.Interface, d *agent.CSIDriver, ns, name, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	t.Helper()
	return provisionMode(t, admin, d, ns, name, size, v1.PersistentVolumeFilesystem, modes...)
}

// provisionMode is provision of a claim of the volume mode asked.
func provisionMode(t *testing.T, admin kubernetes.Interface, d *agent.CSIDriver, ns, name, size string, mode v1.PersistentVolumeMode, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	t.Helper()
	ctx := context.Background()
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &d.StorageClass, AccessModes: modes, VolumeMode: &mode,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}}}
	if _, err := admin.CoreV1().PersistentVolumeClaims(ns).Create(ctx, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var pv *v1.PersistentVolume
	agent.Eventually(t, "claim "+name+" Bound", 90*time.Second, func() error {
		c, err := admin.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if c.Status.Phase != v1.ClaimBound || c.Spec.VolumeName == "" {
			return fmt.Errorf("phase %q, volume %q", c.Status.Phase, c.Spec.VolumeName)
		}
		pv, err = admin.CoreV1().PersistentVolumes().Get(ctx, c.Spec.VolumeName, metav1.GetOptions{})
		return err
	})
	return pv
}

// deleteClaim deletes a claim and waits until its PV is gone, and with it,
// the Delete reclaim policy says, the driver's volume.
func deleteClaim(t *testing.T, admin kubernetes.Interface, ns, name, pv string) {
	t.Helper()
	ctx := context.Background()
	if err := admin.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "PV "+pv+" deleted", 90*time.Second, func() error {
		_, err := admin.CoreV1().PersistentVolumes().Get(ctx, pv, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			err = errors.New("still there")
		}
		return err
	})
}

// TestCSIProvisioning: the controller side of the hostpath driver with
// external-provisioner, external-attacher and the real
// kube-controller-manager's PV binder. The CSIDriver object says attach is
// required; a claim of the driver's StorageClass (Immediate binding) gets
// a PV with spec.csi naming the driver and the volume, of the size asked,
// whose directory the driver made; the claim is Bound; deleting the claim
// deletes the PV and the directory.
func TestCSIProvisioning(t *testing.T) {
	e := env.Require(t, env.WithAPIServer())
	admin := e.AdminClient(t)
	d := agent.StartCSIDriver(t, e, agent.CSIDriverConfig{Sidecars: true})
	ns := namespace(t, admin)

	cd, err := admin.StorageV1().CSIDrivers().Get(context.Background(), d.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cd.Spec.AttachRequired == nil || !*cd.Spec.AttachRequired {
		t.Fatalf("CSIDriver %s: attachRequired %v, want true", d.Name, cd.Spec.AttachRequired)
	}

	for _, c := range []struct {
		name, size string
		modes      []v1.PersistentVolumeAccessMode
		capacity   string // the PV's
	}{
		{name: "rwo", size: "1Mi", modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, capacity: "1Mi"},
		{name: "rwx", size: "3Mi", modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}, capacity: "3Mi"},
		{name: "rwop", size: "1500k", modes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}, capacity: "1500k"},
	} {
		t.Run(c.name, func(t *testing.T) {
			pv := provision(t, admin, d, ns, c.name, c.size, c.modes...)
			if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != d.Name || pv.Spec.CSI.VolumeHandle == "" {
				t.Fatalf("PV %s: spec.csi %+v, want driver %s and a volume handle", pv.Name, pv.Spec.CSI, d.Name)
			}
			if got := pv.Spec.Capacity[v1.ResourceStorage]; got.Cmp(resource.MustParse(c.capacity)) != 0 {
				t.Errorf("PV %s: capacity %s, want %s", pv.Name, got.String(), c.capacity)
			}
			if pv.Spec.StorageClassName != d.StorageClass || pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
				t.Errorf("PV %s: class %q, reclaim policy %q", pv.Name, pv.Spec.StorageClassName, pv.Spec.PersistentVolumeReclaimPolicy)
			}
			dir := d.VolumeDir(pv.Spec.CSI.VolumeHandle)
			if _, err := os.Stat(dir); err != nil {
				t.Fatalf("the volume's directory: %v", err)
			}

			deleteClaim(t, admin, ns, c.name, pv.Name)
			if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the volume's directory after its PV is deleted: %v, want it gone", err)
			}
		})
	}
}

// TestCSIAttach: the hostpath driver registers with the kubelet through
// plugins_registry, as with node-driver-registrar, and the node's CSINode
// lists it with its node ID. A VolumeAttachment for a provisioned volume
// on that node, made by hand as the attach-detach controller would, is
// attached by external-attacher: ControllerPublishVolume with the node ID
// from the CSINode, its publish context in the status. Deleted, it is
// detached and goes; then the claim and the volume go.
func TestCSIAttach(t *testing.T) {
	agent.CSISidecars(t, env.Require(t, env.WithAPIServer()))
	n := agent.NewClusterNode(t, kubelet.Binary, kubelet.Options()...)
	n.Start()
	d := agent.StartCSIDriver(t, n.Env, agent.CSIDriverConfig{Sidecars: true, KubeletRoot: n.RootDir,
		NodeID: "hostpath-" + n.Name})
	ctx := context.Background()
	admin := n.Admin

	driverOnNode(t, n, d)

	ns := n.Namespace("csi")
	pv := provision(t, admin, d, ns, "attached", "2Mi", v1.ReadWriteOnce)
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{GenerateName: "csi-test-"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: d.Name, NodeName: n.Name,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}}}
	va, err := admin.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}) })
	agent.Eventually(t, "VolumeAttachment "+va.Name+" attached", 60*time.Second, func() error {
		got, err := admin.StorageV1().VolumeAttachments().Get(ctx, va.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if !got.Status.Attached {
			return fmt.Errorf("status %+v", got.Status)
		}
		if m := got.Status.AttachmentMetadata[publishedTo]; m != d.NodeID {
			return fmt.Errorf("attachment metadata %v, want %s=%s", got.Status.AttachmentMetadata, publishedTo, d.NodeID)
		}
		return nil
	})

	if err := admin.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	agent.Eventually(t, "VolumeAttachment "+va.Name+" detached and gone", 60*time.Second, func() error {
		got, err := admin.StorageV1().VolumeAttachments().Get(ctx, va.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("still there: finalizers %v, status %+v", got.Finalizers, got.Status)
		}
		return err
	})
	deleteClaim(t, admin, ns, "attached", pv.Name)
	if _, err := os.Stat(d.VolumeDir(pv.Spec.CSI.VolumeHandle)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the volume's directory after its PV is deleted: %v, want it gone", err)
	}
}
