package csi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// AnnotationNodeID is the Node's annotation that maps each registered CSI
// driver's name to its node ID, as JSON.
const AnnotationNodeID = "csi.volume.kubernetes.io/nodeid"

// MigratedPlugins are the in-tree volume plugins whose volumes upstream's
// kubelet v1.37 hands to CSI drivers, all of them unconditionally: the
// CSINode's storage.alpha.kubernetes.io/migrated-plugins annotation names
// them, sorted, so that the controllers treat this node as upstream's.
var MigratedPlugins = []string{
	"kubernetes.io/aws-ebs",
	"kubernetes.io/azure-disk",
	"kubernetes.io/azure-file",
	"kubernetes.io/cinder",
	"kubernetes.io/gce-pd",
	"kubernetes.io/portworx-volume",
	"kubernetes.io/vsphere-volume",
}

// updateBackoff is upstream's: four tries within about two seconds, for a
// write that conflicts with another writer of the same object.
var updateBackoff = wait.Backoff{Steps: 4, Duration: 10 * time.Millisecond, Factor: 5.0, Jitter: 0.1}

// NodeInfoManager writes what the node's CSI drivers tell of it into the
// API, as upstream's nodeinfomanager: one driver's entry in the CSINode
// named after the node, its node ID in the Node's annotation, its topology
// as the Node's labels. Its writes are read-modify-write of whole objects
// (the annotation is one JSON value for every driver), so they take turns:
// two drivers registering at once would otherwise lose one's node ID.
type NodeInfoManager struct {
	Kube     kubernetes.Interface
	NodeName string

	mu sync.Mutex
}

// InitializeCSINode makes sure the node's CSINode exists, owned by the
// Node, with the migrated-plugins annotation, as upstream's
// InitializeCSINodeWithAnnotation does at start-up. It needs the Node.
func (m *NodeInfoManager) InitializeCSINode(ctx context.Context) error {
	return retryConflicts(ctx, "initialize CSINode", func(ctx context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		node, err := m.Kube.CoreV1().Nodes().Get(ctx, m.NodeName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		csiNode, err := m.ownedCSINode(ctx, node.UID)
		if err != nil {
			return err
		}
		if !setMigrationAnnotation(csiNode) {
			return nil
		}
		_, err = m.Kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
}

// InstallDriver records driver's node info: its node ID in the Node's
// annotation and its topology on the Node's labels first, then its entry
// in the CSINode (made if missing), as upstream's InstallCSIDriver. A
// topology label the Node has with another value is an error: the driver
// would contradict what schedules pods here.
func (m *NodeInfoManager) InstallDriver(ctx context.Context, driver string, info NodeInfo) error {
	if info.NodeID == "" {
		return errors.New("error adding CSI driver node info: driverNodeID must not be empty")
	}
	var uid types.UID
	err := retryConflicts(ctx, "update Node with CSI driver node info", func(ctx context.Context) error {
		var err error
		uid, err = m.updateNode(ctx, func(n *v1.Node) (bool, error) {
			a, err := setNodeID(n, driver, info.NodeID)
			if err != nil {
				return false, err
			}
			l, err := setTopologyLabels(n, info.Topology)
			return a || l, err
		})
		return err
	})
	if err != nil {
		return err
	}
	return retryConflicts(ctx, "update CSINode with CSI driver node info", func(ctx context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		csiNode, err := m.ownedCSINode(ctx, uid)
		if err != nil {
			return err
		}
		if !installDriver(csiNode, driver, info) {
			return nil
		}
		_, err = m.Kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
}

// UninstallDriver removes driver from the CSINode, then its node ID from
// the Node's annotation, as upstream's UninstallCSIDriver; the topology
// labels stay, as upstream's (another driver may report the same).
func (m *NodeInfoManager) UninstallDriver(ctx context.Context, driver string) error {
	err := retryConflicts(ctx, "uninstall CSI driver from CSINode", func(ctx context.Context) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		csiNode, err := m.Kube.StorageV1().CSINodes().Get(ctx, m.NodeName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		kept := slices.DeleteFunc(slices.Clone(csiNode.Spec.Drivers), func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
		if len(kept) == len(csiNode.Spec.Drivers) {
			return nil
		}
		csiNode.Spec.Drivers = kept
		_, err = m.Kube.StorageV1().CSINodes().Update(ctx, csiNode, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return err
	}
	return retryConflicts(ctx, "remove CSI driver node info from Node", func(ctx context.Context) error {
		_, err := m.updateNode(ctx, func(n *v1.Node) (bool, error) { return removeNodeID(n, driver) })
		return err
	})
}

// updateNode reads the Node, applies change and, if it changed anything,
// patches the Node through its status, as upstream's PatchNodeStatus
// (metadata and status; never the spec). It returns the Node's UID.
func (m *NodeInfoManager) updateNode(ctx context.Context, change func(*v1.Node) (bool, error)) (types.UID, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, err := m.Kube.CoreV1().Nodes().Get(ctx, m.NodeName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	node := old.DeepCopy()
	changed, err := change(node)
	if err != nil || !changed {
		return old.UID, err
	}
	oldData, err := json.Marshal(old)
	if err != nil {
		return "", err
	}
	node.Spec = old.Spec
	newData, err := json.Marshal(node)
	if err != nil {
		return "", err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(oldData, newData, v1.Node{})
	if err != nil {
		return "", err
	}
	_, err = m.Kube.CoreV1().Nodes().Patch(ctx, m.NodeName, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	return old.UID, err
}

// ownedCSINode returns the node's CSINode, owned by the Node of uid. A
// missing one is created; one owned
// by an earlier Node of the same name is deleted and an error returned, so
// that the next try creates it anew, as upstream's ensureNodeOwnsCSINode.
// The caller holds m.mu.
func (m *NodeInfoManager) ownedCSINode(ctx context.Context, uid types.UID) (*storagev1.CSINode, error) {
	csiNode, err := m.Kube.StorageV1().CSINodes().Get(ctx, m.NodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return m.createCSINode(ctx, uid)
	}
	if err != nil {
		return nil, err
	}
	owned, owner := false, types.UID("")
	for _, ref := range csiNode.OwnerReferences {
		if ref.Kind != "Node" {
			continue
		}
		owner = ref.UID
		if ref.Name == m.NodeName && ref.UID == uid {
			owned = true
			break
		}
	}
	if !owned {
		if err := m.Kube.StorageV1().CSINodes().Delete(ctx, m.NodeName, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("error deleting existing CSINode %q: %w", m.NodeName, err)
		}
		return nil, fmt.Errorf("CSINode %q was owned by different node (oldNodeID=%q, newNodeID=%q), deleted it", m.NodeName, owner, uid)
	}
	return csiNode, nil
}

func (m *NodeInfoManager) createCSINode(ctx context.Context, uid types.UID) (*storagev1.CSINode, error) {
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.NodeName,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Node", Name: m.NodeName, UID: uid,
			}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{}},
	}
	setMigrationAnnotation(csiNode)
	return m.Kube.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
}

// retryConflicts runs try up to four times with upstream's short backoff,
// and returns the last error with what failed.
func retryConflicts(ctx context.Context, what string, try func(context.Context) error) error {
	var last error
	err := wait.ExponentialBackoffWithContext(ctx, updateBackoff, func(ctx context.Context) (bool, error) {
		if last = try(ctx); last != nil {
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return fmt.Errorf("%s: %w", what, last)
	}
	return nil
}

// setMigrationAnnotation sets the CSINode's migrated-plugins annotation to
// MigratedPlugins, and reports whether it changed (the same set in another
// order is no change, as upstream's).
func setMigrationAnnotation(csiNode *storagev1.CSINode) bool {
	old := csiNode.Annotations[v1.MigratedPluginsAnnotationKey]
	have := []string{}
	if old != "" {
		have = strings.Split(old, ",")
	}
	slices.Sort(have)
	if slices.Equal(slices.Compact(have), MigratedPlugins) {
		return false
	}
	if csiNode.Annotations == nil {
		csiNode.Annotations = map[string]string{}
	}
	csiNode.Annotations[v1.MigratedPluginsAnnotationKey] = strings.Join(MigratedPlugins, ",")
	return true
}

// installDriver puts driver's entry into the CSINode, replacing its old
// one, and reports whether the CSINode changed, as upstream's
// installDriverToCSINode: the topology keys sorted, allocatable.count the
// driver's limit (capped to an int32; none for no limit).
func installDriver(csiNode *storagev1.CSINode, driver string, info NodeInfo) bool {
	keys := slices.Sorted(maps.Keys(info.Topology))
	if keys == nil {
		keys = []string{}
	}
	entry := storagev1.CSINodeDriver{Name: driver, NodeID: info.NodeID, TopologyKeys: keys}
	if info.MaxVolumes > 0 {
		n := int32(min(info.MaxVolumes, math.MaxInt32))
		entry.Allocatable = &storagev1.VolumeNodeResources{Count: &n}
	}
	modified := true
	var drivers []storagev1.CSINodeDriver
	for _, d := range csiNode.Spec.Drivers {
		if d.Name != driver {
			drivers = append(drivers, d)
			continue
		}
		have := slices.Clone(d.TopologyKeys)
		slices.Sort(have)
		if d.NodeID == info.NodeID && slices.Equal(slices.Compact(have), keys) && sameCount(d.Allocatable, entry.Allocatable) {
			modified = false
		}
	}
	annotated := setMigrationAnnotation(csiNode)
	if !modified && !annotated {
		return false
	}
	csiNode.Spec.Drivers = append(drivers, entry)
	return true
}

func sameCount(a, b *storagev1.VolumeNodeResources) bool {
	if a == nil || a.Count == nil || b == nil || b.Count == nil {
		return (a == nil || a.Count == nil) && (b == nil || b.Count == nil)
	}
	return *a.Count == *b.Count
}

// nodeIDs reads the Node's annotation of drivers' node IDs.
func nodeIDs(node *v1.Node) (map[string]string, error) {
	ids := map[string]string{}
	if v := node.Annotations[AnnotationNodeID]; v != "" {
		if err := json.Unmarshal([]byte(v), &ids); err != nil {
			return nil, fmt.Errorf("failed to parse node's %q annotation value (%q) err=%v", AnnotationNodeID, v, err)
		}
		if ids == nil {
			ids = map[string]string{}
		}
	}
	return ids, nil
}

// setNodeID maps driver to id in the Node's annotation.
func setNodeID(node *v1.Node, driver, id string) (bool, error) {
	ids, err := nodeIDs(node)
	if err != nil {
		return false, err
	}
	if v, ok := ids[driver]; ok && v == id {
		return false, nil
	}
	ids[driver] = id
	b, err := json.Marshal(ids)
	if err != nil {
		return false, err
	}
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[AnnotationNodeID] = string(b)
	return true, nil
}

// removeNodeID drops driver from the Node's annotation, and the
// annotation once empty.
func removeNodeID(node *v1.Node, driver string) (bool, error) {
	if node.Annotations[AnnotationNodeID] == "" {
		return false, nil
	}
	ids, err := nodeIDs(node)
	if err != nil {
		return false, err
	}
	if _, ok := ids[driver]; !ok {
		return false, nil
	}
	delete(ids, driver)
	if len(ids) == 0 {
		delete(node.Annotations, AnnotationNodeID)
		return true, nil
	}
	b, err := json.Marshal(ids)
	if err != nil {
		return false, err
	}
	node.Annotations[AnnotationNodeID] = string(b)
	return true, nil
}

// setTopologyLabels puts the driver's topology onto the Node's labels; a
// label the Node has with another value is a collision, as upstream's.
func setTopologyLabels(node *v1.Node, topology map[string]string) (bool, error) {
	if len(topology) == 0 {
		return false, nil
	}
	for _, k := range slices.Sorted(maps.Keys(topology)) {
		if cur, ok := node.Labels[k]; ok && cur != topology[k] {
			return false, fmt.Errorf("detected topology value collision: driver reported %q:%q but existing label is %q:%q", k, topology[k], k, cur)
		}
	}
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	changed := false
	for k, v := range topology {
		if node.Labels[k] != v {
			node.Labels[k] = v
			changed = true
		}
	}
	return changed, nil
}
