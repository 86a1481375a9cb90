package volumes

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/actorlet/actorlet/test/agent"
)

const pluginLocal = "kubernetes.io~local-volume"

// TestPersistentVolumes: claims bound to a hostPath and to a local
// PersistentVolume (its node affinity respected), and a volume that needs
// a CSI driver, which this node has none of.
func TestPersistentVolumes(t *testing.T) {
	n := newVolNode(t)

	t.Run("claim of a hostPath PersistentVolume", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "seed"), []byte("from-the-admin\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		claim := n.boundClaim(t, "hostpath-claim", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}, nil)
		n.Run(t, n.NewPod("claim-hostpath", []v1.Volume{claimVolume("data", claim)}, n.Sleeper("c", mnt("data", "/data"))))
		n.Expect(t, "claim-hostpath", "c", "cat /data/seed && echo from-the-pod > /data/back", "from-the-admin")
		if got := readFile(t, filepath.Join(dir, "back")); got != "from-the-pod\n" {
			t.Errorf("the pod's write in the PV's directory: %q", got)
		}
	})

	t.Run("claim of a local PersistentVolume on this node", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "seed"), []byte("local\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		claim := n.boundClaim(t, "local-claim", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: dir}}, onNode(n.Name))
		created := n.Run(t, n.NewPod("claim-local", []v1.Volume{claimVolume("data", claim)}, n.Sleeper("c", mnt("data", "/data"))))
		n.Expect(t, "claim-local", "c", "cat /data/seed", "local")
		// Upstream bind-mounts the local path at
		// ROOT/pods/UID/volumes/kubernetes.io~local-volume/PV.
		if at := n.volumeDir(created.UID, pluginLocal, claim.pv); len(agent.MountsAt(t, at)) != 1 {
			t.Errorf("host mounts at %s: %+v, want the local volume's bind mount", at, agent.MountsAt(t, at))
		}
	})

	t.Run("claim of a local PersistentVolume of another node", func(t *testing.T) {
		claim := n.boundClaim(t, "far-claim", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: t.TempDir()}}, onNode("actorlet-other-node"))
		n.Create(t, n.NewPod("claim-far", []v1.Volume{claimVolume("data", claim)}, n.Sleeper("c", mnt("data", "/data"))))
		// Upstream: "MountVolume.NodeAffinity check failed for volume
		// "PV" : no matching NodeSelectorTerms"; the cause is what counts.
		n.Event(t, "claim-far", "FailedMount", "no matching NodeSelectorTerms")
		n.stuckCreating(t, "claim-far")
	})

	t.Run("a CSI volume fails with a clear event", func(t *testing.T) {
		p := n.NewPod("csi", []v1.Volume{{Name: "csi-vol", VolumeSource: v1.VolumeSource{CSI: &v1.CSIVolumeSource{Driver: "csi.example.com"}}}},
			n.Sleeper("c", mnt("csi-vol", "/csi")))
		n.Create(t, p)
		// Upstream: MountVolume.SetUp failed for volume "csi-vol" :
		// kubernetes.io/csi: ... driver name csi.example.com not found in
		// the list of registered CSI drivers. The pod never starts without
		// it.
		n.Event(t, "csi", "FailedMount", `"csi-vol"`)
		n.stuckCreating(t, "csi")
	})
}

// claim names a PersistentVolumeClaim and its PersistentVolume.
type claim struct{ name, pv string }

func claimVolume(name string, c claim) v1.Volume {
	return v1.Volume{Name: name, VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c.name}}}
}

// onNode is a PersistentVolume's node affinity to the node named node.
func onNode(node string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

// boundClaim makes, as an admin would, a PersistentVolume of source and a
// claim of it (storageClassName "", volumeName the PV), and binds them as
// the PV controller would (claimRef, both statuses Bound): the
// environment runs no PV controller, and upstream's kubelet mounts only a
// claim whose status is Bound. The cleanup deletes the PV and the claim,
// with the protection finalizers that no controller here would remove.
func (n *volNode) boundClaim(t *testing.T, name string, source v1.PersistentVolumeSource, affinity *v1.VolumeNodeAffinity) claim {
	t.Helper()
	ctx := context.Background()
	c := claim{name: name, pv: n.NS + "-" + name}
	empty := ""
	size := resource.MustParse("1Gi")
	pvs, pvcs := n.Admin.CoreV1().PersistentVolumes(), n.Admin.CoreV1().PersistentVolumeClaims(n.NS)
	t.Cleanup(func() {
		unprotect := []byte(`{"metadata":{"finalizers":null}}`)
		_, _ = pvcs.Patch(ctx, c.name, types.MergePatchType, unprotect, metav1.PatchOptions{})
		_ = pvcs.Delete(ctx, c.name, metav1.DeleteOptions{})
		_, _ = pvs.Patch(ctx, c.pv, types.MergePatchType, unprotect, metav1.PatchOptions{})
		_ = pvs.Delete(ctx, c.pv, metav1.DeleteOptions{})
	})
	pv, err := pvs.Create(ctx, &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: c.pv},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: size},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              empty,
			PersistentVolumeSource:        source,
			NodeAffinity:                  affinity,
			ClaimRef:                      &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: n.NS, Name: c.name},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PV %s: %v", c.pv, err)
	}
	pvc, err := pvcs.Create(ctx, &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: c.name},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &empty,
			VolumeName:       c.pv,
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: size}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PVC %s: %v", c.name, err)
	}
	pv.Spec.ClaimRef.UID = pvc.UID
	if pv, err = pvs.Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PV %s's claimRef: %v", c.pv, err)
	}
	pv.Status.Phase = v1.VolumeBound
	if _, err := pvs.UpdateStatus(ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PV %s Bound: %v", c.pv, err)
	}
	pvc.Status.Phase = v1.ClaimBound
	pvc.Status.AccessModes = pvc.Spec.AccessModes
	pvc.Status.Capacity = v1.ResourceList{v1.ResourceStorage: size}
	if _, err := pvcs.UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("PVC %s Bound: %v", c.name, err)
	}
	return c
}
