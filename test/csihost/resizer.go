package csihost

import (
	"context"
	"fmt"
	"net"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The resizer is external-resizer's part that the tests need, run in the
// test process: external-resizer is not served as a Go module here (nor
// is csi-driver-host-path), and its controller side is small. Against
// the API it is the real thing: it reads claims and writes claims and
// PVs with the admin's credentials, and calls the driver's
// ControllerExpandVolume on its socket, so what the node sees is what
// external-resizer makes. It polls rather than watches: a test waits for
// seconds anyway, and a poll needs no informer to stop.

// resizeFileSystemPendingMessage is external-resizer's message of the
// FileSystemResizePending condition.
const resizeFileSystemPendingMessage = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."

// startResizer resizes the claims of the driver's volumes until Stop.
func (d *Driver) startResizer() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			if err := d.resizeClaims(ctx); err != nil && ctx.Err() == nil {
				d.logf("resizer: %v", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()
	d.stopResizer = func() {
		cancel()
		<-done
	}
}

// resizeClaims expands each bound claim of the driver's volumes whose
// request exceeds what was allocated to it, as external-resizer's
// expandAndRecover: the claim marked ControllerResizeInProgress with the
// new allocatedResources and the Resizing condition; ControllerExpandVolume;
// the PV's capacity set; then the claim marked NodeResizePending with the
// FileSystemResizePending condition when the driver wants the node to
// finish, or given its new capacity when it does not.
func (d *Driver) resizeClaims(ctx context.Context) error {
	pvcs, err := d.admin.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		// The claim's class may be any with the driver as provisioner
		// (the e2e testsuites copy the driver's StorageClass): resize
		// looks at the PV's driver, as external-resizer does.
		if pvc.Status.Phase != v1.ClaimBound {
			continue
		}
		want := pvc.Spec.Resources.Requests[v1.ResourceStorage]
		have := pvc.Status.Capacity[v1.ResourceStorage]
		if a, ok := pvc.Status.AllocatedResources[v1.ResourceStorage]; ok && a.Cmp(have) > 0 {
			have = a
		}
		if want.Cmp(have) <= 0 {
			continue
		}
		if err := d.resize(ctx, pvc, want); err != nil {
			return fmt.Errorf("claim %s/%s to %s: %w", pvc.Namespace, pvc.Name, want.String(), err)
		}
	}
	return nil
}

func (d *Driver) resize(ctx context.Context, pvc *v1.PersistentVolumeClaim, size resource.Quantity) error {
	pv, err := d.admin.CoreV1().PersistentVolumes().Get(ctx, pvc.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != d.Name {
		return nil // another driver's volume
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return fmt.Errorf("PV %s is not the claim's volume", pv.Name)
	}
	setStorageStatus(pvc, v1.PersistentVolumeClaimControllerResizeInProgress)
	if pvc.Status.AllocatedResources == nil {
		pvc.Status.AllocatedResources = v1.ResourceList{}
	}
	pvc.Status.AllocatedResources[v1.ResourceStorage] = size
	setResizeConditions(pvc, v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimResizing, Status: v1.ConditionTrue, LastTransitionTime: metav1.Now()})
	if pvc, err = d.admin.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
		return err
	}

	res, err := d.controllerExpand(ctx, pv, size)
	if err != nil {
		// Marked, and not tried again: a test's driver that fails
		// this fails the test.
		setResizeConditions(pvc, v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimControllerResizeError,
			Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(), Message: "failed to expand pvc with " + err.Error()})
		_, _ = d.admin.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
		return err
	}
	if got := resource.NewQuantity(res.CapacityBytes, resource.BinarySI); res.CapacityBytes > 0 && got.Cmp(size) > 0 {
		size = *got
	}
	pv.Spec.Capacity[v1.ResourceStorage] = size
	if _, err := d.admin.CoreV1().PersistentVolumes().Update(ctx, pv, metav1.UpdateOptions{}); err != nil {
		return err
	}

	if res.NodeExpansionRequired {
		setStorageStatus(pvc, v1.PersistentVolumeClaimNodeResizePending)
		setResizeConditions(pvc, v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimFileSystemResizePending,
			Status: v1.ConditionTrue, LastTransitionTime: metav1.Now(), Message: resizeFileSystemPendingMessage})
	} else {
		pvc.Status.Capacity[v1.ResourceStorage] = size
		delete(pvc.Status.AllocatedResourceStatuses, v1.ResourceStorage)
		setResizeConditions(pvc)
	}
	_, err = d.admin.CoreV1().PersistentVolumeClaims(pvc.Namespace).UpdateStatus(ctx, pvc, metav1.UpdateOptions{})
	return err
}

// controllerExpand calls the driver's ControllerExpandVolume as
// external-resizer does: the PV's handle, the size, and its capability.
func (d *Driver) controllerExpand(ctx context.Context, pv *v1.PersistentVolume, size resource.Quantity) (*csipb.ControllerExpandVolumeResponse, error) {
	conn, err := grpc.NewClient("passthrough:///"+d.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", addr)
		}))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	mode := csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	if len(pv.Spec.AccessModes) > 0 && pv.Spec.AccessModes[0] == v1.ReadWriteMany {
		mode = csipb.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER
	}
	return csipb.NewControllerClient(conn).ControllerExpandVolume(callCtx, &csipb.ControllerExpandVolumeRequest{
		VolumeId:      pv.Spec.CSI.VolumeHandle,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: size.Value()},
		VolumeCapability: &csipb.VolumeCapability{AccessMode: &csipb.VolumeCapability_AccessMode{Mode: mode},
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{FsType: pv.Spec.CSI.FSType}}},
	})
}

func setStorageStatus(pvc *v1.PersistentVolumeClaim, s v1.ClaimResourceStatus) {
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[v1.ResourceStorage] = s
}

// setResizeConditions replaces the claim's resize conditions with conds,
// keeping the others, as external-resizer's MergeResizeConditionsOfPVC.
func setResizeConditions(pvc *v1.PersistentVolumeClaim, conds ...v1.PersistentVolumeClaimCondition) {
	var out []v1.PersistentVolumeClaimCondition
	for _, c := range pvc.Status.Conditions {
		switch c.Type {
		case v1.PersistentVolumeClaimResizing, v1.PersistentVolumeClaimFileSystemResizePending,
			v1.PersistentVolumeClaimControllerResizeError, v1.PersistentVolumeClaimNodeResizeError:
		default:
			out = append(out, c)
		}
	}
	pvc.Status.Conditions = append(out, conds...)
}
