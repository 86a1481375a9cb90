package volume

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/mount-utils"
)

// claimSources serves claims and volumes from maps; the content sources
// are not called by these tests.
type claimSources struct {
	Sources
	pvcs map[string]*v1.PersistentVolumeClaim
	pvs  map[string]*v1.PersistentVolume
}

func (s *claimSources) PersistentVolumeClaim(_ context.Context, ns, name string) (*v1.PersistentVolumeClaim, error) {
	if c, ok := s.pvcs[ns+"/"+name]; ok {
		return c, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumeclaims"}, name)
}

func (s *claimSources) PersistentVolume(_ context.Context, name string) (*v1.PersistentVolume, error) {
	if v, ok := s.pvs[name]; ok {
		return v, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "persistentvolumes"}, name)
}

func boundClaim(name, pv string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("claim-" + name)},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: pv},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound},
	}
}

func pvFor(name, claim string, src v1.PersistentVolumeSource) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			PersistentVolumeSource: src,
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: claim, UID: boundClaim(claim, name).UID},
		},
	}
}

func hostAffinity(node string) *v1.VolumeNodeAffinity {
	return &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{node}}},
	}}}}
}

func TestSetUpClaim(t *testing.T) {
	host := t.TempDir()
	localDir := filepath.Join(host, "local")
	if err := os.Mkdir(localDir, 0o755); err != nil {
		t.Fatal(err)
	}
	hostPathPV := func(path string) v1.PersistentVolumeSource {
		return v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: path}}
	}
	local := v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: localDir}}
	block := v1.PersistentVolumeBlock
	deleting := metav1.Now()

	tests := []struct {
		name     string
		claim    *v1.PersistentVolumeClaim // nil: none
		pv       *v1.PersistentVolume      // nil: none
		readOnly bool
		wantErr  string
		want     func(root string) Mounted
		wantOpts []string // the local bind mount's options
	}{
		{name: "no claim", wantErr: "error processing PVC ns/data: failed to fetch PVC from API server"},
		{name: "claim pending", claim: func() *v1.PersistentVolumeClaim {
			c := boundClaim("data", "pv1")
			c.Status.Phase = v1.ClaimPending
			return c
		}(), wantErr: "error processing PVC ns/data: PVC is not bound"},
		{name: "claim without volume name", claim: boundClaim("data", ""), wantErr: "PVC has empty pvc.Spec.VolumeName"},
		{name: "claim being deleted", claim: func() *v1.PersistentVolumeClaim {
			c := boundClaim("data", "pv1")
			c.DeletionTimestamp = &deleting
			return c
		}(), wantErr: "PVC is being deleted"},
		{name: "claim being deleted but protected", claim: func() *v1.PersistentVolumeClaim {
			c := boundClaim("data", "pv1")
			c.DeletionTimestamp = &deleting
			c.Finalizers = []string{pvcProtectionFinalizer}
			return c
		}(), pv: pvFor("pv1", "data", hostPathPV(host)), want: func(string) Mounted {
			return Mounted{Name: "vol", Path: host, HostPath: true}
		}},
		{name: "no volume", claim: boundClaim("data", "pv1"), wantErr: "failed to fetch PV pv1 from API server"},
		{name: "volume bound to another claim", claim: boundClaim("data", "pv1"), pv: pvFor("pv1", "other", hostPathPV(host)),
			wantErr: "found PV object pv1 but its pv.Spec.ClaimRef.UID claim-other does not point to claim.UID claim-data"},
		{name: "volume not bound", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", hostPathPV(host))
			pv.Spec.ClaimRef = nil
			return pv
		}(), wantErr: "it has a nil pv.Spec.ClaimRef"},
		{name: "hostPath", claim: boundClaim("data", "pv1"), pv: pvFor("pv1", "data", hostPathPV(host)), readOnly: true,
			want: func(string) Mounted { return Mounted{Name: "vol", Path: host, HostPath: true, ReadOnly: true} }},
		{name: "hostPath of the wrong type", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			typ := v1.HostPathFile
			return pvFor("pv1", "data", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host, Type: &typ}})
		}(), wantErr: "is not a file, it's a Directory"},
		{name: "local", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", local)
			pv.Spec.NodeAffinity = hostAffinity("node-a")
			pv.Spec.MountOptions = []string{"noexec"}
			return pv
		}(), want: func(root string) Mounted {
			return Mounted{Name: "vol", Path: filepath.Join(root, "pods/uid-c/volumes/kubernetes.io~local-volume/pv1"), SELinuxRelabel: true}
		}, wantOpts: []string{"bind", "noexec"}},
		{name: "local read-only", claim: boundClaim("data", "pv1"), pv: pvFor("pv1", "data", local), readOnly: true,
			want: func(root string) Mounted {
				return Mounted{Name: "vol", Path: filepath.Join(root, "pods/uid-c/volumes/kubernetes.io~local-volume/pv1"), ReadOnly: true, SELinuxRelabel: true}
			}, wantOpts: []string{"bind", "ro"}},
		{name: "local of another node", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", local)
			pv.Spec.NodeAffinity = hostAffinity("node-b")
			return pv
		}(), wantErr: "persistent volume pv1 is not reachable from node node-a: no matching NodeSelectorTerms"},
		{name: "local by metadata.name", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", local)
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchFields: []v1.NodeSelectorRequirement{{Key: "metadata.name", Operator: v1.NodeSelectorOpIn, Values: []string{"node-a"}}},
			}}}}
			return pv
		}(), want: func(root string) Mounted {
			return Mounted{Name: "vol", Path: filepath.Join(root, "pods/uid-c/volumes/kubernetes.io~local-volume/pv1"), SELinuxRelabel: true}
		}, wantOpts: []string{"bind"}},
		{name: "local path missing", claim: boundClaim("data", "pv1"),
			pv:      pvFor("pv1", "data", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: filepath.Join(host, "nowhere")}}),
			wantErr: "does not exist"},
		{name: "local block volume", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", local)
			pv.Spec.VolumeMode = &block
			return pv
		}(), wantErr: "persistent volume pv1 is a block volume of type local: only CSI block volumes are supported by this node"},
		{name: "csi block volume", claim: boundClaim("data", "pv1"), pv: func() *v1.PersistentVolume {
			pv := pvFor("pv1", "data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}})
			pv.Spec.VolumeMode = &block
			return pv
		}(), wantErr: "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name d not found in the list of registered CSI drivers"},
		{name: "csi", claim: boundClaim("data", "pv1"),
			pv:      pvFor("pv1", "data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}),
			wantErr: "kubernetes.io/csi: mounter.SetUpAt failed to get CSI client: driver name d not found in the list of registered CSI drivers"},
		{name: "nfs", claim: boundClaim("data", "pv1"),
			pv:      pvFor("pv1", "data", v1.PersistentVolumeSource{NFS: &v1.NFSVolumeSource{Server: "s", Path: "/"}}),
			wantErr: "is of type nfs, which this node cannot attach or mount"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &claimSources{pvcs: map[string]*v1.PersistentVolumeClaim{}, pvs: map[string]*v1.PersistentVolume{}}
			if tt.claim != nil {
				src.pvcs["ns/data"] = tt.claim
			}
			if tt.pv != nil {
				src.pvs[tt.pv.Name] = tt.pv
			}
			fm := mount.NewFakeMounter(nil)
			h := &Host{RootDir: t.TempDir(), NodeName: "node-a", Sources: src, Mounter: fm}
			vol := &v1.Volume{Name: "vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{
				ClaimName: "data", ReadOnly: tt.readOnly}}}
			m, err := h.SetUp(t.Context(), localTestPod("c"), vol)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				if mps, _ := fm.List(); len(mps) != 0 {
					t.Fatalf("mounts %+v after a failure", mps)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := tt.want(h.RootDir); m != want {
				t.Fatalf("mounted %+v, want %+v", m, want)
			}
			mps, _ := fm.List()
			if tt.wantOpts == nil {
				if len(mps) != 0 {
					t.Fatalf("mounts %+v, want none", mps)
				}
				return
			}
			if len(mps) != 1 || mps[0].Path != m.Path || mps[0].Device != localDir || !slices.Equal(mps[0].Opts, tt.wantOpts) {
				t.Fatalf("mounts %+v, want %s bound at %s with %v", mps, localDir, m.Path, tt.wantOpts)
			}
			if _, err := h.SetUp(t.Context(), localTestPod("c"), vol); err != nil {
				t.Fatal(err)
			}
			if mps, _ := fm.List(); len(mps) != 1 {
				t.Fatalf("mounts after a second SetUp %+v", mps)
			}
		})
	}
}

func TestSetUpClaimWithoutAPIServer(t *testing.T) {
	h := &Host{RootDir: t.TempDir(), Mounter: mount.NewFakeMounter(nil)}
	vol := &v1.Volume{Name: "vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	if _, err := h.SetUp(t.Context(), localTestPod("c"), vol); err == nil || !strings.Contains(err.Error(), "no API server") {
		t.Fatalf("error %v", err)
	}
}

// TestLocalVolumeMount binds a real local volume, writes through it, and
// tears the pod down: the volume's own files stay on the node.
func TestLocalVolumeMount(t *testing.T) {
	localNeedsRoot(t)
	localDir := t.TempDir()
	src := &claimSources{
		pvcs: map[string]*v1.PersistentVolumeClaim{"ns/data": boundClaim("data", "pv1")},
		pvs:  map[string]*v1.PersistentVolume{"pv1": pvFor("pv1", "data", v1.PersistentVolumeSource{Local: &v1.LocalVolumeSource{Path: localDir}})},
	}
	h := &Host{RootDir: t.TempDir(), NodeName: "node-a", Sources: src, Mounter: mount.New("")}
	pod := localTestPod("l")
	vol := &v1.Volume{Name: "vol", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}
	m, err := h.SetUp(t.Context(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Mounter.Unmount(m.Path) })
	if err := os.WriteFile(filepath.Join(m.Path, "kept"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatal(err)
	}
	if err := h.TearDownPod(pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(localDir, "kept")); err != nil {
		t.Fatalf("the local volume's file is gone: %v", err)
	}
	if _, err := os.Stat(PodDir(h.RootDir, pod.UID)); !os.IsNotExist(err) {
		t.Fatalf("pod directory left: %v", err)
	}
}

// TestSetUpEphemeral: a generic ephemeral volume is the claim named after
// the pod and the volume, used only once it is bound and controlled by the
// pod, as upstream's desired-state populator.
func TestSetUpEphemeral(t *testing.T) {
	hostDir := t.TempDir()
	pod := localTestPod("e")
	owned := func(c *v1.PersistentVolumeClaim, controller bool, uid types.UID) *v1.PersistentVolumeClaim {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: uid, Controller: &controller}}
		return c
	}
	pending := boundClaim("pod-scratch", "pv1")
	pending.Status.Phase = v1.ClaimPending
	tests := []struct {
		name    string
		claim   *v1.PersistentVolumeClaim // nil: none
		wantErr string
	}{
		{name: "no claim yet", wantErr: `error processing PVC ns/pod-scratch: failed to fetch PVC from API server: persistentvolumeclaims "pod-scratch" not found`},
		{name: "claim not bound yet", claim: owned(pending, true, pod.UID), wantErr: "error processing PVC ns/pod-scratch: PVC is not bound"},
		{name: "claim of no owner", claim: boundClaim("pod-scratch", "pv1"),
			wantErr: "PVC ns/pod-scratch was not created for pod ns/pod (pod is not owner)"},
		{name: "claim owned but not controlled by the pod", claim: owned(boundClaim("pod-scratch", "pv1"), false, pod.UID),
			wantErr: "PVC ns/pod-scratch was not created for pod ns/pod (pod is not owner)"},
		{name: "claim of an earlier pod of the same name", claim: owned(boundClaim("pod-scratch", "pv1"), true, "uid-earlier"),
			wantErr: "PVC ns/pod-scratch was not created for pod ns/pod (pod is not owner)"},
		{name: "claim controlled by the pod", claim: owned(boundClaim("pod-scratch", "pv1"), true, pod.UID)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &claimSources{pvcs: map[string]*v1.PersistentVolumeClaim{},
				pvs: map[string]*v1.PersistentVolume{"pv1": pvFor("pv1", "pod-scratch", v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: hostDir}})}}
			if tt.claim != nil {
				src.pvcs["ns/pod-scratch"] = tt.claim
			}
			h := &Host{RootDir: t.TempDir(), NodeName: "node-a", Sources: src, Mounter: mount.NewFakeMounter(nil)}
			vol := &v1.Volume{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{
				VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{}}}}
			m, err := h.SetUp(t.Context(), pod, vol)
			if tt.wantErr != "" {
				if err == nil || err.Error() != `MountVolume.SetUp failed for volume "scratch" : `+tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := (Mounted{Name: "scratch", Path: hostDir, HostPath: true}); m != want {
				t.Fatalf("mounted %+v, want %+v", m, want)
			}
		})
	}
}
