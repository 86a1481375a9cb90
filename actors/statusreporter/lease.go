package statusreporter

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// leaseNamespace holds the node leases (upstream's v1.NamespaceNodeLease).
const leaseNamespace = v1.NamespaceNodeLease

// The lease is our own small implementation of upstream's nodelease
// controller rather than component-helpers' controller: that one runs its
// own loop with blocking retries, where here each renewal is one message
// and the actor owns timing and backoff.

// renewLease creates the node's lease, or renews it: renewTime now, holder
// and duration as configured, owned by the Node (so that deleting the Node
// deletes its lease).
func renewLease(ctx context.Context, kube kubernetes.Interface, nodeName string, nodeUID types.UID, duration int32, now time.Time) error {
	leases := kube.CoordinationV1().Leases(leaseNamespace)
	lease, err := leases.Get(ctx, nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, newLease(nil, nodeName, nodeUID, duration, now), metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create lease %s/%s: %w", leaseNamespace, nodeName, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("get lease %s/%s: %w", leaseNamespace, nodeName, err)
	}
	if _, err := leases.Update(ctx, newLease(lease, nodeName, nodeUID, duration, now), metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("renew lease %s/%s: %w", leaseNamespace, nodeName, err)
	}
	return nil
}

// newLease is base (nil: a new lease) renewed at now, as upstream's
// newLease builds it.
func newLease(base *coordinationv1.Lease, nodeName string, nodeUID types.UID, duration int32, now time.Time) *coordinationv1.Lease {
	var lease *coordinationv1.Lease
	if base == nil {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: nodeName, Namespace: leaseNamespace}}
	} else {
		lease = base.DeepCopy()
	}
	lease.Spec.HolderIdentity = &nodeName
	lease.Spec.LeaseDurationSeconds = &duration
	renew := metav1.NewMicroTime(now)
	lease.Spec.RenewTime = &renew
	if len(lease.OwnerReferences) == 0 && nodeUID != "" {
		lease.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Node", Name: nodeName, UID: nodeUID,
		}}
	}
	return lease
}
