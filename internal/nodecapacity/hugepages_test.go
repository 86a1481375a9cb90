package nodecapacity

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestHugePages(t *testing.T) {
	cases := []struct {
		name    string
		dirs    map[string]string // directory → nr_hugepages
		want    map[v1.ResourceName]string
		wantErr bool
	}{
		{name: "none pre-allocated", dirs: map[string]string{"hugepages-2048kB": "0\n", "hugepages-1048576kB": "0\n"},
			want: map[v1.ResourceName]string{"hugepages-2Mi": "0", "hugepages-1Gi": "0"}},
		{name: "pages of both sizes", dirs: map[string]string{"hugepages-2048kB": "512\n", "hugepages-1048576kB": "2\n"},
			want: map[v1.ResourceName]string{"hugepages-2Mi": "1Gi", "hugepages-1Gi": "2Gi"}},
		{name: "another size", dirs: map[string]string{"hugepages-64kB": "16"},
			want: map[v1.ResourceName]string{"hugepages-64Ki": "1Mi"}},
		{name: "no support", dirs: nil, want: map[v1.ResourceName]string{}},
		{name: "bad count", dirs: map[string]string{"hugepages-2048kB": "many"}, wantErr: true},
		{name: "bad size", dirs: map[string]string{"hugepages-2MB": "1"}, wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "hugepages")
			if c.dirs != nil {
				for d, n := range c.dirs {
					if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(filepath.Join(dir, d, "nr_hugepages"), []byte(n), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			got, err := HugePages(dir)
			if c.wantErr {
				if err == nil {
					t.Fatalf("no error; got %v", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
			for name, want := range c.want {
				q, ok := got[name]
				if !ok || q.Cmp(resource.MustParse(want)) != 0 {
					t.Errorf("%s = %v (present %v), want %s", name, q.String(), ok, want)
				}
			}
		})
	}
}

func TestStatusAllocatable(t *testing.T) {
	q := resource.MustParse
	cases := []struct {
		name                  string
		capacity, allocatable v1.ResourceList
		wantMemory            string
	}{
		{name: "no huge pages", capacity: v1.ResourceList{v1.ResourceMemory: q("4Gi")},
			allocatable: v1.ResourceList{v1.ResourceMemory: q("3Gi")}, wantMemory: "3Gi"},
		{name: "zero huge pages", capacity: v1.ResourceList{"hugepages-2Mi": q("0")},
			allocatable: v1.ResourceList{v1.ResourceMemory: q("3Gi")}, wantMemory: "3Gi"},
		{name: "both sizes", capacity: v1.ResourceList{"hugepages-2Mi": q("512Mi"), "hugepages-1Gi": q("1Gi")},
			allocatable: v1.ResourceList{v1.ResourceMemory: q("3Gi")}, wantMemory: "1536Mi"},
		{name: "never below zero", capacity: v1.ResourceList{"hugepages-1Gi": q("8Gi")},
			allocatable: v1.ResourceList{v1.ResourceMemory: q("3Gi")}, wantMemory: "0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := c.allocatable.DeepCopy()
			got := StatusAllocatable(c.capacity, c.allocatable)
			if m := got[v1.ResourceMemory]; m.Cmp(q(c.wantMemory)) != 0 {
				t.Errorf("memory = %s, want %s", m.String(), c.wantMemory)
			}
			if m := c.allocatable[v1.ResourceMemory]; m.Cmp(before[v1.ResourceMemory]) != 0 {
				t.Errorf("allocatable changed in place")
			}
		})
	}
}
