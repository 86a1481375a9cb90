package csi

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

const node = "node-a"

func newManager(t *testing.T, objs ...any) (*NodeInfoManager, *fake.Clientset) {
	t.Helper()
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node, UID: "uid-1", Labels: map[string]string{"zone": "a"}}}
	kube := fake.NewClientset(n)
	for _, o := range objs {
		if c, ok := o.(*storagev1.CSINode); ok {
			if _, err := kube.StorageV1().CSINodes().Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &NodeInfoManager{Kube: kube, NodeName: node}, kube
}

func getNode(t *testing.T, m *NodeInfoManager) (*v1.Node, *storagev1.CSINode) {
	t.Helper()
	n, err := m.Kube.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := m.Kube.StorageV1().CSINodes().Get(context.Background(), node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return n, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return n, c
}

// TestInitializeCSINode: the CSINode is made owned by the Node, with the
// migrated-plugins annotation; one owned by an earlier Node of the name is
// deleted and made anew; one whose annotation is wrong is corrected.
func TestInitializeCSINode(t *testing.T) {
	annotation := strings.Join(MigratedPlugins, ",")
	for _, tc := range []struct {
		name     string
		existing *storagev1.CSINode
	}{
		{"missing", nil},
		{"owned by an earlier Node", &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: "uid-0"}}}}},
		{"annotation missing", &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node, UID: "uid-1"}}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []any
			if tc.existing != nil {
				objs = append(objs, tc.existing)
			}
			m, _ := newManager(t, objs...)
			if err := m.InitializeCSINode(context.Background()); err != nil {
				t.Fatal(err)
			}
			_, c := getNode(t, m)
			if c == nil {
				t.Fatal("no CSINode")
			}
			if got := c.Annotations[v1.MigratedPluginsAnnotationKey]; got != annotation {
				t.Errorf("migrated-plugins = %q, want %q", got, annotation)
			}
			if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].UID != "uid-1" || c.OwnerReferences[0].Kind != "Node" {
				t.Errorf("owner = %+v, want the Node uid-1", c.OwnerReferences)
			}
		})
	}
}

// TestInstallAndUninstall: two drivers install their node IDs, topology
// and limits; the same install again changes nothing; uninstalling one
// leaves the other, and the last takes the annotation with it. Topology
// labels stay, as upstream's.
func TestInstallAndUninstall(t *testing.T) {
	m, kube := newManager(t)
	ctx := context.Background()
	if err := m.InstallDriver(ctx, "a.csi", NodeInfo{NodeID: "id-a", MaxVolumes: 8, Topology: map[string]string{"a.csi/rack": "r1", "zone": "a"}}); err != nil {
		t.Fatal(err)
	}
	if err := m.InstallDriver(ctx, "b.csi", NodeInfo{NodeID: "id-b"}); err != nil {
		t.Fatal(err)
	}
	n, c := getNode(t, m)
	var ids map[string]string
	if err := json.Unmarshal([]byte(n.Annotations[AnnotationNodeID]), &ids); err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"a.csi": "id-a", "b.csi": "id-b"}; !maps.Equal(ids, want) {
		t.Errorf("node IDs = %v, want %v", ids, want)
	}
	if n.Labels["a.csi/rack"] != "r1" {
		t.Errorf("labels = %v, want a.csi/rack=r1", n.Labels)
	}
	if c == nil || len(c.Spec.Drivers) != 2 {
		t.Fatalf("CSINode = %+v, want two drivers", c)
	}
	a := c.Spec.Drivers[0]
	if a.Name != "a.csi" || a.NodeID != "id-a" || !slices.Equal(a.TopologyKeys, []string{"a.csi/rack", "zone"}) ||
		a.Allocatable == nil || *a.Allocatable.Count != 8 {
		t.Errorf("a.csi = %+v", a)
	}
	if b := c.Spec.Drivers[1]; b.Allocatable != nil || len(b.TopologyKeys) != 0 {
		t.Errorf("b.csi = %+v, want no limit and no topology", b)
	}

	writes := len(kube.Actions())
	if err := m.InstallDriver(ctx, "b.csi", NodeInfo{NodeID: "id-b"}); err != nil {
		t.Fatal(err)
	}
	for _, a := range kube.Actions()[writes:] {
		if a.GetVerb() != "get" {
			t.Errorf("the same install again wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}

	if err := m.UninstallDriver(ctx, "a.csi"); err != nil {
		t.Fatal(err)
	}
	n, c = getNode(t, m)
	if got := n.Annotations[AnnotationNodeID]; got != `{"b.csi":"id-b"}` {
		t.Errorf("annotation = %q after uninstalling a.csi", got)
	}
	if len(c.Spec.Drivers) != 1 || c.Spec.Drivers[0].Name != "b.csi" {
		t.Errorf("drivers = %+v after uninstalling a.csi", c.Spec.Drivers)
	}
	if n.Labels["a.csi/rack"] != "r1" {
		t.Errorf("topology label went with the driver: %v", n.Labels)
	}
	if err := m.UninstallDriver(ctx, "b.csi"); err != nil {
		t.Fatal(err)
	}
	n, c = getNode(t, m)
	if _, ok := n.Annotations[AnnotationNodeID]; ok || len(c.Spec.Drivers) != 0 {
		t.Errorf("after the last uninstall: annotations %v, drivers %+v", n.Annotations, c.Spec.Drivers)
	}
}

// TestInstallRefused: an empty node ID, and a topology label the Node has
// with another value, are errors that write nothing.
func TestInstallRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		info NodeInfo
		want string
	}{
		{"empty node ID", NodeInfo{}, "driverNodeID must not be empty"},
		{"topology collision", NodeInfo{NodeID: "x", Topology: map[string]string{"zone": "b"}}, "topology value collision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := newManager(t)
			err := m.InstallDriver(context.Background(), "a.csi", tc.info)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			n, c := getNode(t, m)
			if _, ok := n.Annotations[AnnotationNodeID]; ok || c != nil {
				t.Errorf("a refused install wrote: %v, %+v", n.Annotations, c)
			}
		})
	}
}
