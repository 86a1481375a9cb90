package agent

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MakeCSIDriver creates the CSIDriver object, replacing one of the same
// name that a test killed before its cleanup left; the cleanup deletes it.
func (n *ClusterNode) MakeCSIDriver(t testing.TB, obj *storagev1.CSIDriver) {
	t.Helper()
	drivers := n.Admin.StorageV1().CSIDrivers()
	_ = drivers.Delete(context.Background(), obj.Name, metav1.DeleteOptions{})
	if _, err := drivers.Create(context.Background(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = drivers.Delete(context.Background(), obj.Name, metav1.DeleteOptions{}) })
}

// BoundCSIClaim makes a CSI PersistentVolume of driver with handle, named
// after the namespace and name, and a claim name bound to it, as the PV
// binder would (the environment runs none); the cleanup deletes both.
func (n *APIPods) BoundCSIClaim(t testing.TB, driver, name, handle string) {
	t.Helper()
	ctx := context.Background()
	pvName := n.NS + "-" + name
	size := resource.MustParse("1Gi")
	empty := ""
	pvs, pvcs := n.Admin.CoreV1().PersistentVolumes(), n.Admin.CoreV1().PersistentVolumeClaims(n.NS)
	t.Cleanup(func() {
		unprotect := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = pvcs.Patch(ctx, name, types.MergePatchType, unprotect, metav1.PatchOptions{})
		_ = pvcs.Delete(ctx, name, metav1.DeleteOptions{})
		_, _ = pvs.Patch(ctx, pvName, types.MergePatchType, unprotect, metav1.PatchOptions{})
		_ = pvs.Delete(ctx, pvName, metav1.DeleteOptions{})
	})
	pv, err := pvs.Create(ctx, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: pvName},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              empty,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: handle, VolumeAttributes: map[string]string{"from": "pv"}}},
			ClaimRef: &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: n.NS, Name: name},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PV %s: %v", pvName, err)
	}
	pvc, err := pvcs.Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}, StorageClassName: &empty, VolumeName: pvName,
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PVC %s: %v", name, err)
	}
	pv.Spec.ClaimRef.UID = pvc.UID
	if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	pvc.Status.Phase = v1.ClaimBound
	pvc.Status.AccessModes, pvc.Status.Capacity = pvc.Spec.AccessModes, v1.ResourceList{v1.ResourceStorage: size}
	if _, err := pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// CSIClaimVolume is a pod's volume name of the claim.
func CSIClaimVolume(name, claim string) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}
}
