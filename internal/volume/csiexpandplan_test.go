package volume

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/actorlet/actorlet/internal/csi"
)

// sized is a claim of status.capacity capacity, with allocatedResources
// and the storage resize status when given (an external-resizer that
// recovers from expansion failures sets both).
func sized(capacity, allocated string, st v1.ClaimResourceStatus) *v1.PersistentVolumeClaim {
	pvc := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", ResourceVersion: "7"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(capacity)}}}
	if allocated != "" {
		pvc.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: resource.MustParse(allocated)}
	}
	if st != "" {
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: st}
	}
	return pvc
}

func pvOf(capacity string) *v1.PersistentVolume {
	return &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(capacity)}}}
}

// TestPlanExpansion is upstream's decision to grow a published CSI PV on
// the node (expandVolumeDuringMount, nodeExpandVolume, runPreCheck).
func TestPlanExpansion(t *testing.T) {
	for _, tc := range []struct {
		name     string
		pv       *v1.PersistentVolume
		pvc      *v1.PersistentVolumeClaim
		readOnly bool
		want     expandPlan
	}{
		{"sizes agree", pvOf("1Mi"), sized("1Mi", "", ""), false, expandPlan{}},
		{"the claim shows more than the PV", pvOf("1Mi"), sized("2Mi", "", ""), false, expandPlan{}},
		{"no PV size", &v1.PersistentVolume{}, sized("1Mi", "", ""), false, expandPlan{}},
		{"an inline volume", nil, nil, false, expandPlan{}},
		{"node resize pending: to the allocated size", pvOf("2Mi"), sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizePending), false,
			expandPlan{action: expandCall, size: resource.MustParse("2Mi")}},
		{"node resize in progress (a retry)", pvOf("2Mi"), sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizeInProgress), false,
			expandPlan{action: expandCall, size: resource.MustParse("2Mi")}},
		{"the controller's part runs: wait", pvOf("2Mi"), sized("1Mi", "2Mi", v1.PersistentVolumeClaimControllerResizeInProgress), false, expandPlan{}},
		{"the node's part failed for good: the resizer decides", pvOf("2Mi"), sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizeInfeasible), false, expandPlan{}},
		{"allocated but no status: wait", pvOf("2Mi"), sized("1Mi", "2Mi", ""), false, expandPlan{}},
		{"an older resizer: to the PV's size", pvOf("3Mi"), sized("1Mi", "", ""), false,
			expandPlan{action: expandCall, size: resource.MustParse("3Mi"), legacy: true}},
		{"read-only: refused", pvOf("2Mi"), sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizePending), true, expandPlan{action: expandRefusedReadOnly}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := planExpansion(tc.pv, tc.pvc, tc.readOnly)
			if got.action != tc.want.action || got.size.Cmp(tc.want.size) != 0 || got.legacy != tc.want.legacy {
				t.Fatalf("plan %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestExpandRequest: upstream's NodeExpandVolume request of a PV.
func TestExpandRequest(t *testing.T) {
	pv := pvFor("pv-1", "data", v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: testDriver, VolumeHandle: "h-1", FSType: "ext4",
		NodeExpandSecretRef: &v1.SecretReference{Namespace: "ns", Name: "expand"}}})
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOncePod}
	pv.Spec.MountOptions = []string{"noatime"}
	v := csiFromPV(pv, false)
	if v.expandSecretRef == nil || v.expandSecretRef.Name != "expand" {
		t.Fatalf("expand secret ref %v", v.expandSecretRef)
	}
	for _, tc := range []struct {
		caps csi.NodeCapabilities
		mode csipb.VolumeCapability_AccessMode_Mode
	}{
		{csi.NodeCapabilities{}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		{csi.NodeCapabilities{SingleNodeMultiWriter: true}, csipb.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER},
	} {
		req := v.expandRequest(tc.caps, "/root", "/target", resource.MustParse("2Mi"), map[string]string{"k": "s"})
		want := &csipb.NodeExpandVolumeRequest{
			VolumeId: "h-1", VolumePath: "/target", StagingTargetPath: csiGlobalDir("/root", testDriver, "h-1") + "/globalmount",
			CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 20},
			VolumeCapability: &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: tc.mode},
				AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{"noatime"}}}},
			Secrets: map[string]string{"k": "s"},
		}
		if fmt.Sprint(req) != fmt.Sprint(want) {
			t.Errorf("request\n%v\nwant\n%v", req, want)
		}
	}

	// A block volume: the pod's publish path and the block mapper's
	// staging path, with a Block capability, as upstream's block map.
	v.block, v.specName = true, "pv-1"
	req := v.expandRequest(csi.NodeCapabilities{}, "/root", "/publish", resource.MustParse("2Mi"), nil)
	want := &csipb.NodeExpandVolumeRequest{
		VolumeId: "h-1", VolumePath: "/publish", StagingTargetPath: "/root/plugins/kubernetes.io/csi/volumeDevices/staging/pv-1",
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 2 << 20},
		VolumeCapability: &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csipb.VolumeCapability_Block{Block: &csipb.VolumeCapability_BlockVolume{}}},
	}
	if fmt.Sprint(req) != fmt.Sprint(want) {
		t.Errorf("block request\n%v\nwant\n%v", req, want)
	}
}

// TestClaimMarks: the claim's status through a node expansion, as
// upstream's resize_util marks it, and the patches that carry it.
func TestClaimMarks(t *testing.T) {
	now := metav1.Now()
	pending := sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizePending)
	pending.Status.Conditions = []v1.PersistentVolumeClaimCondition{
		{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue},
		{Type: "Other", Status: v1.ConditionTrue},
	}
	rpcErr := errors.New("rpc error: code = Internal desc = no")
	for _, tc := range []struct {
		name    string
		updated *v1.PersistentVolumeClaim
		checked bool
		want    string
	}{
		{"in progress", markExpansionInProgress(pending), true,
			`{"metadata":{"resourceVersion":"7"},"status":{"allocatedResourceStatuses":{"storage":"NodeResizeInProgress"}}}`},
		{"finished: capacity, no resize status nor condition", markExpansionFinished(pending, resource.MustParse("2Mi")), true,
			`{"metadata":{"resourceVersion":"7"},"status":{"$setElementOrder/conditions":[{"type":"Other"}],"allocatedResourceStatuses":null,"capacity":{"storage":"2Mi"},"conditions":[{"$patch":"delete","type":"FileSystemResizePending"}]}}`},
		{"failed: a NodeResizeError condition, the others kept", markExpansionFailed(pending, rpcErr, false, now), false,
			fmt.Sprintf(`{"status":{"$setElementOrder/conditions":[{"type":"FileSystemResizePending"},{"type":"Other"},{"type":"NodeResizeError"}],"conditions":[{"lastProbeTime":null,"lastTransitionTime":%s,"message":"failed to expand pvc with %s","status":"True","type":"NodeResizeError"}]}}`, quoted(now), rpcErr)},
		{"infeasible: the resize status too", markExpansionFailed(sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizeInProgress), rpcErr, true, now), false,
			fmt.Sprintf(`{"status":{"allocatedResourceStatuses":{"storage":"NodeResizeInfeasible"},"conditions":[{"lastProbeTime":null,"lastTransitionTime":%s,"message":"failed to expand pvc with %s","status":"True","type":"NodeResizeError"}]}}`, quoted(now), rpcErr)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := pending
			if tc.name == "infeasible: the resize status too" {
				old = sized("1Mi", "2Mi", v1.PersistentVolumeClaimNodeResizeInProgress)
			}
			patch, err := pvcStatusPatch(old, tc.updated, tc.checked)
			if err != nil {
				t.Fatal(err)
			}
			if string(patch) != tc.want {
				t.Fatalf("patch\n%s\nwant\n%s", patch, tc.want)
			}
		})
	}
}

func quoted(t metav1.Time) string {
	b, _ := json.Marshal(t)
	return string(b)
}

// TestClassifyExpandError: upstream's reading of a failed NodeExpandVolume.
func TestClassifyExpandError(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want expandFailure
	}{
		{status.Error(codes.FailedPrecondition, "in use"), expandFailure{inUse: true}},
		{fmt.Errorf("wrapped: %w", status.Error(codes.OutOfRange, "too big")), expandFailure{infeasible: true}},
		{status.Error(codes.InvalidArgument, "x"), expandFailure{infeasible: true}},
		{status.Error(codes.NotFound, "x"), expandFailure{infeasible: true}},
		{status.Error(codes.Internal, "x"), expandFailure{}},
		{status.Error(codes.DeadlineExceeded, "x"), expandFailure{}},
		{errors.New("not gRPC"), expandFailure{}},
	} {
		if got := classifyExpandError(tc.err); got != tc.want {
			t.Errorf("%v: %+v, want %+v", tc.err, got, tc.want)
		}
	}
}
