package nodecapacity

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCapacityAndAllocatable(t *testing.T) {
	meminfo := filepath.Join(t.TempDir(), "meminfo")
	if err := os.WriteFile(meminfo, []byte("MemTotal:        4194304 kB\nMemFree: 1 kB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	capacity, err := Capacity(meminfo, 110)
	if err != nil {
		t.Fatal(err)
	}
	if mem := capacity[v1.ResourceMemory]; mem.Value() != 4<<30 {
		t.Errorf("memory = %v, want 4Gi", mem.String())
	}
	if cpu := capacity[v1.ResourceCPU]; cpu.Value() != int64(runtime.NumCPU()) {
		t.Errorf("cpu = %v", cpu.String())
	}
	for _, tc := range []struct {
		name               string
		kube, sys, evict   map[string]string
		wantMem, wantMilli int64
		wantErr            bool
	}{
		{name: "nothing reserved", wantMem: 4 << 30, wantMilli: int64(runtime.NumCPU()) * 1000},
		{name: "reservations and eviction", kube: map[string]string{"memory": "1Gi", "cpu": "500m"}, sys: map[string]string{"memory": "512Mi"},
			evict: map[string]string{"memory.available": "100Mi", "nodefs.available": "10%"}, wantMem: 4<<30 - 1<<30 - 512<<20 - 100<<20, wantMilli: int64(runtime.NumCPU())*1000 - 500},
		{name: "a percentage of capacity", evict: map[string]string{"memory.available": "5%"}, wantMem: 4<<30 - int64(float64(4<<30)*float64(float32(5)/100)), wantMilli: int64(runtime.NumCPU()) * 1000},
		{name: "100% is no threshold", evict: map[string]string{"memory.available": "100%"}, wantMem: 4 << 30, wantMilli: int64(runtime.NumCPU()) * 1000},
		{name: "bad percentage", evict: map[string]string{"memory.available": "x%"}, wantErr: true},
		{name: "never below zero", kube: map[string]string{"memory": "64Gi"}, wantMem: 0, wantMilli: int64(runtime.NumCPU()) * 1000},
		{name: "bad quantity", kube: map[string]string{"memory": "lots"}, wantErr: true},
	} {
		got, err := Allocatable(capacity, tc.kube, tc.sys, tc.evict)
		if (err != nil) != tc.wantErr {
			t.Fatalf("%s: err = %v", tc.name, err)
		}
		if tc.wantErr {
			continue
		}
		mem, cpu := got[v1.ResourceMemory], got[v1.ResourceCPU]
		if mem.Value() != tc.wantMem || cpu.MilliValue() != tc.wantMilli {
			t.Errorf("%s: allocatable memory %d cpu %dm, want %d and %dm", tc.name, mem.Value(), cpu.MilliValue(), tc.wantMem, tc.wantMilli)
		}
	}
}

func TestAllocatableEphemeralStorage(t *testing.T) {
	capacity := v1.ResourceList{v1.ResourceEphemeralStorage: *resource.NewQuantity(100<<30, resource.BinarySI)}
	for _, tc := range []struct {
		name           string
		kube, sys, evi map[string]string
		want           int64
	}{
		{name: "nothing reserved", want: 100 << 30},
		{name: "nodefs.available percentage", evi: map[string]string{"nodefs.available": "10%"}, want: 100<<30 - int64(float64(100<<30)*float64(float32(10)/100))},
		{name: "reserved and absolute threshold", kube: map[string]string{"ephemeral-storage": "1Gi"}, sys: map[string]string{"ephemeral-storage": "2Gi"},
			evi: map[string]string{"nodefs.available": "5Gi", "imagefs.available": "15%"}, want: 92 << 30},
	} {
		got, err := Allocatable(capacity, tc.kube, tc.sys, tc.evi)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if q := got[v1.ResourceEphemeralStorage]; q.Value() != tc.want {
			t.Errorf("%s: ephemeral-storage %d, want %d", tc.name, q.Value(), tc.want)
		}
	}
}

func TestMaxPods(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		maxPods, podsPerCore int32
		cores                int
		want                 int32
	}{
		{"podsPerCore unset", 110, 0, 2, 110},
		{"podsPerCore smaller", 110, 1, 2, 2},
		{"maxPods smaller", 110, 100, 2, 110},
		{"equal", 20, 10, 2, 20},
		{"no overflow", 110, 1 << 30, 8, 110},
	} {
		if got := MaxPods(tc.maxPods, tc.podsPerCore, tc.cores); got != tc.want {
			t.Errorf("%s: MaxPods(%d, %d, %d) = %d, want %d", tc.name, tc.maxPods, tc.podsPerCore, tc.cores, got, tc.want)
		}
	}
}
