package nodecapacity

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestIsExtended(t *testing.T) {
	for name, want := range map[v1.ResourceName]bool{
		"example.com/gpu": true, "cpu": false, "hugepages-2Mi": false, "kubernetes.io/foo": false,
		"requests.example.com/gpu": false, "scheduling.k8s.io/foo": true, "bad name/x": false,
	} {
		if got := IsExtended(name); got != want {
			t.Errorf("IsExtended(%q) = %v", name, got)
		}
	}
}

func TestStatusResources(t *testing.T) {
	q := resource.MustParse
	own := v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("4Gi")}
	ownAlloc := v1.ResourceList{v1.ResourceCPU: q("1900m"), v1.ResourceMemory: q("3Gi")}
	for _, tc := range []struct {
		name               string
		current            v1.NodeStatus
		wantCap, wantAlloc v1.ResourceList
	}{
		{"a new Node: the node's own", v1.NodeStatus{}, own, ownAlloc},
		{"the node's own replace what the Node says",
			v1.NodeStatus{Capacity: v1.ResourceList{v1.ResourceCPU: q("8")}, Allocatable: v1.ResourceList{v1.ResourceCPU: q("8")}}, own, ownAlloc},
		{"another's extended resource stays, allocatable at its capacity",
			v1.NodeStatus{Capacity: v1.ResourceList{"example.com/gpu": q("2")}, Allocatable: v1.ResourceList{"example.com/gpu": q("1")}},
			v1.ResourceList{v1.ResourceCPU: q("2"), v1.ResourceMemory: q("4Gi"), "example.com/gpu": q("2")},
			v1.ResourceList{v1.ResourceCPU: q("1900m"), v1.ResourceMemory: q("3Gi"), "example.com/gpu": q("2")}},
		{"one gone from capacity leaves allocatable",
			v1.NodeStatus{Allocatable: v1.ResourceList{"example.com/gpu": q("1")}}, own, ownAlloc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, a := StatusResources(tc.current, own, ownAlloc)
			for _, cmp := range []struct {
				what      string
				got, want v1.ResourceList
			}{{"capacity", c, tc.wantCap}, {"allocatable", a, tc.wantAlloc}} {
				if len(cmp.got) != len(cmp.want) {
					t.Errorf("%s %v, want %v", cmp.what, cmp.got, cmp.want)
				}
				for name, w := range cmp.want {
					if g, ok := cmp.got[name]; !ok || g.Cmp(w) != 0 {
						t.Errorf("%s %v, want %v", cmp.what, cmp.got, cmp.want)
					}
				}
			}
		})
	}
}
