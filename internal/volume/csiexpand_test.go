package volume

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/record"

	"github.com/actorlet/actorlet/internal/events"
	"github.com/actorlet/actorlet/internal/plugins/fakeplugin"
	"github.com/actorlet/actorlet/internal/testutil"
)

// PatchPersistentVolumeClaimStatus applies the patch to the claim it
// holds, as the API server would (without its checks), and keeps it.
func (s *csiSources) PatchPersistentVolumeClaimStatus(_ context.Context, ns, name string, patch []byte) (*v1.PersistentVolumeClaim, error) {
	old, ok := s.pvcs[ns+"/"+name]
	if !ok {
		return nil, errors.New("no such claim")
	}
	a, err := json.Marshal(old)
	if err != nil {
		return nil, err
	}
	b, err := strategicpatch.StrategicMergePatch(a, patch, old)
	if err != nil {
		return nil, err
	}
	out := &v1.PersistentVolumeClaim{}
	if err := json.Unmarshal(b, out); err != nil {
		return nil, err
	}
	s.pvcs[ns+"/"+name] = out
	s.patches = append(s.patches, string(patch))
	return out, nil
}

// TestCSIExpand: a claim grown by its resizer while its pod runs is
// grown on the node at the next set-up (NodeExpandVolume with the size and
// the publish target), its status then shows the size and no pending
// resize; a failure is an event of upstream's wording, marked on the
// claim, and the next set-up tries again.
func TestCSIExpand(t *testing.T) {
	f := newCSIFixture(t, true, func(p *fakeplugin.Plugin) { p.ExpandVolume = true })
	rec := record.NewFakeRecorder(10)
	f.h.Events = rec
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	vol := f.claimed("vol-x", func(pv *v1.PersistentVolume) {
		pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}
	})
	pvc := f.src.pvcs["ns/data"]
	pvc.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Mi")}
	pod := csiPod("e")
	m, err := f.h.SetUp(t.Context(), pod, vol)
	if err != nil {
		t.Fatal(err)
	}
	if !m.CSIExpandable {
		t.Fatalf("mounted %+v, want expandable", m)
	}

	// The resizer grew the volume and says the node's part is pending.
	f.src.pvs["pv-vol-x"].Spec.Capacity[v1.ResourceStorage] = resource.MustParse("2Mi")
	grown := sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizePending)
	grown.ObjectMeta, grown.Spec = pvc.ObjectMeta, pvc.Spec
	grown.Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}}
	f.src.pvcs["ns/data"] = grown

	f.plugin.FailExpand(1, status.Error(codes.Internal, "disk busy"))
	_, err = f.h.SetUp(t.Context(), pod, vol)
	want := `NodeExpandVolume.NodeExpandVolume failed for volume "pv-vol-x" : Expander.NodeExpand failed to expand the volume : NodeExpandVolume at `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "disk busy") || EventReason(err) != events.VolumeResizeFailed {
		t.Fatalf("error %v (reason %s), want %q... VolumeResizeFailed", err, EventReason(err), want)
	}
	failed := f.src.pvcs["ns/data"]
	if st := failed.Status.AllocatedResourceStatuses[v1.ResourceStorage]; st != v1.PersistentVolumeClaimNodeResizeInProgress ||
		len(failed.Status.Conditions) != 2 || failed.Status.Conditions[1].Type != v1.PersistentVolumeClaimNodeResizeError ||
		!strings.Contains(failed.Status.Conditions[1].Message, "disk busy") {
		t.Fatalf("claim status after the failure %+v", failed.Status)
	}

	if _, err := f.h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatal(err)
	}
	var expands []fakeplugin.Call
	for _, c := range f.plugin.Calls() {
		if c.Method == "NodeExpandVolume" {
			expands = append(expands, c)
		}
	}
	if len(expands) != 2 || expands[1].RequiredBytes != 2<<20 || expands[1].Path != m.Path ||
		expands[1].StagingPath != csiGlobalDir(f.h.RootDir, testDriver, "vol-x")+"/globalmount" {
		t.Fatalf("expand calls %+v, want two to 2Mi at %s", expands, m.Path)
	}
	done := f.src.pvcs["ns/data"].Status
	if c := done.Capacity[v1.ResourceStorage]; c.Cmp(resource.MustParse("2Mi")) != 0 || done.AllocatedResourceStatuses != nil || len(done.Conditions) != 0 {
		t.Fatalf("claim status after the expansion %+v", done)
	}
	if got := testutil.Events(rec); len(got) != 2 || !strings.HasPrefix(got[0], "Normal FileSystemResizeSuccessful MountVolume.NodeExpandVolume succeeded for volume \"pv-vol-x\"") {
		t.Fatalf("events %q, want the success on the pod and the claim", got)
	}

	// Sizes agree: nothing more is asked.
	n := len(f.plugin.Calls())
	if _, err := f.h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatal(err)
	}
	if got := methods(f.plugin.Calls()[n:]); len(got) != 0 {
		t.Fatalf("asked again: %v", got)
	}
}

// TestCSIExpandAtMount: a claim grown while no pod used it is grown at
// the mount, which fails (FailedMount) while the driver fails; a driver
// that cannot grow an in-use volume (FailedPrecondition) does not fail
// the mount, and is not asked again while it stays published.
func TestCSIExpandAtMount(t *testing.T) {
	f := newCSIFixture(t, true, func(p *fakeplugin.Plugin) { p.ExpandVolume = true })
	f.driverObject(false, storagev1.VolumeLifecyclePersistent)
	vol := f.claimed("vol-y", func(pv *v1.PersistentVolume) {
		pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("2Mi")}
	})
	grown := sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizePending)
	grown.ObjectMeta, grown.Spec = f.src.pvcs["ns/data"].ObjectMeta, f.src.pvcs["ns/data"].Spec
	f.src.pvcs["ns/data"] = grown
	pod := csiPod("m")

	f.plugin.FailExpand(1, status.Error(codes.Internal, "not yet"))
	_, err := f.h.SetUp(t.Context(), pod, vol)
	if err == nil || !strings.HasPrefix(err.Error(), `MountVolume.Setup failed while expanding volume for volume "pv-vol-y" : `) || EventReason(err) != events.FailedMountVolume {
		t.Fatalf("error %v, want the mount failed while expanding", err)
	}
	f.plugin.FailExpand(1, status.Error(codes.FailedPrecondition, "in use"))
	if _, err := f.h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatalf("a FailedPrecondition failed the mount: %v", err)
	}
	if cs := f.src.pvcs["ns/data"].Status.Conditions; len(cs) != 1 || cs[0].Type != v1.PersistentVolumeClaimNodeResizeError {
		t.Fatalf("conditions %+v", cs)
	}
	n := len(f.plugin.Calls())
	if _, err := f.h.SetUp(t.Context(), pod, vol); err != nil {
		t.Fatal(err)
	}
	if got := methods(f.plugin.Calls()[n:]); len(got) != 0 {
		t.Fatalf("asked again while in use: %v", got)
	}
}
