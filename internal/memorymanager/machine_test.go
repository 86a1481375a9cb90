package memorymanager

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseMemTotal(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     uint64
		err      bool
	}{
		{name: "node meminfo", in: "Node 0 MemTotal:       16318852 kB\nNode 0 MemFree:        1000 kB\n", want: 16318852 * 1024},
		{name: "second node", in: "Node 1 MemFree: 5 kB\nNode 1 MemTotal: 2048 kB\n", want: 2048 * 1024},
		{name: "no MemTotal", in: "Node 0 MemFree: 5 kB\n", err: true},
		{name: "bad number", in: "Node 0 MemTotal: x kB\n", err: true},
		{name: "bad unit", in: "Node 0 MemTotal: 5 MB\n", err: true},
	} {
		got, err := ParseMemTotal(tc.in)
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %d, %v; want %d, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestParseDistances(t *testing.T) {
	got, err := ParseDistances("10 21 31 21\n")
	if err != nil || !reflect.DeepEqual(got, []uint64{10, 21, 31, 21}) {
		t.Errorf("got %v, %v", got, err)
	}
	if _, err := ParseDistances("10 x"); err == nil {
		t.Error("a bad distance parsed")
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiscover(t *testing.T) {
	root := t.TempDir()
	nodes := filepath.Join(root, NodesDir)
	write(t, filepath.Join(nodes, "node1", "meminfo"), "Node 1 MemTotal: 4096 kB\n")
	write(t, filepath.Join(nodes, "node1", "distance"), "21 10\n")
	write(t, filepath.Join(nodes, "node0", "meminfo"), "Node 0 MemTotal: 8192 kB\n")
	write(t, filepath.Join(nodes, "node0", "distance"), "10 21\n")
	write(t, filepath.Join(nodes, "node0", "hugepages", "hugepages-2048kB", "nr_hugepages"), "4\n")
	write(t, filepath.Join(nodes, "node0", "hugepages", "hugepages-1048576kB", "nr_hugepages"), "0\n")
	write(t, filepath.Join(nodes, "possible"), "0-1\n")
	got, err := Discover(root, 1)
	if err != nil {
		t.Fatal(err)
	}
	want := []Node{
		{ID: 0, Memory: 8192 * 1024, Distances: []uint64{10, 21}, HugePages: []HugePages{{PageSizeKB: 2048, NumPages: 4}, {PageSizeKB: 1048576}}},
		{ID: 1, Memory: 4096 * 1024, Distances: []uint64{21, 10}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	// No NUMA nodes in sysfs: one node 0 of the machine's memory.
	got, err = Discover(t.TempDir(), 1234)
	if err != nil || !reflect.DeepEqual(got, []Node{{ID: 0, Memory: 1234}}) {
		t.Errorf("without NUMA nodes: %+v, %v", got, err)
	}
}
