package memorymanager

import (
	"encoding/json"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The files of upstream's state_checkpoint_test.go (v1.37.2), checksums
// as upstream's package computed them.
const (
	upstreamV1 = `{
		"policyName":"static",
		"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
		"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
		"checksum": 4215593881
	}`
	upstreamV2 = `{
		"policyName":"static",
		"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
		"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
		"podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}},
		"checksum": 1278640530
	}`
	upstreamV3 = `{
		"policyName":"other",
		"machineState":{"0":{"numberOfAssignments":5,"memoryMap":{"memory":{"total":1024,"systemReserved":256,"allocatable":768,"reserved":256,"free":512}},"cells":[]}},
		"entries":{"pod":{"containerX":[{"numaAffinity":[0],"type":"memory","size":128}]}},
		"checksum": 1234,
		"data": "{\"policyName\":\"static\",\"machineState\":{\"0\":{\"numberOfAssignments\":0,\"memoryMap\":{\"memory\":{\"total\":2048,\"systemReserved\":512,\"allocatable\":1536,\"reserved\":512,\"free\":1024}},\"cells\":[]}},\"entries\":{\"pod\":{\"container1\":[{\"numaAffinity\":[0],\"type\":\"memory\",\"size\":512}]}}}",
		"dataChecksum": 1849615440
	}`
)

func upstreamState() *State {
	return &State{Policy: "static",
		Machine: NUMANodeMap{0: {MemoryMap: map[v1.ResourceName]*MemoryTable{
			v1.ResourceMemory: {TotalMemSize: 2048, SystemReserved: 512, Allocatable: 1536, Reserved: 512, Free: 1024}}, Cells: []int{}}},
		Entries: ContainerMemoryAssignments{"pod": {"container1": {{NUMAAffinity: []int{0}, Type: v1.ResourceMemory, Size: 512}}}}}
}

func TestUnmarshalUpstream(t *testing.T) {
	for _, tc := range []struct {
		name, file, err string
	}{
		{name: "v3, the data authoritative", file: upstreamV3},
		{name: "v2", file: upstreamV2},
		{name: "v1", file: upstreamV1},
		{name: "v1, checksum zeroed", file: strings.Replace(upstreamV1, "4215593881", "0", 1)},
		{name: "v1, bad checksum", file: strings.Replace(upstreamV1, "4215593881", "101010", 1), err: "checkpoint is corrupted"},
		{name: "v2, bad checksum", file: strings.Replace(upstreamV2, "1278640530", "101010", 1), err: "checkpoint is corrupted"},
		{name: "v3, bad data checksum", file: strings.Replace(upstreamV3, "1849615440", "1234", 1), err: "could not load v3 checkpoint: checkpoint is corrupted"},
		{name: "v3 without data", file: strings.Replace(upstreamV1, `"checksum": 4215593881`, `"checksum": 4215593881, "dataChecksum": 1234`, 1),
			err: "could not load v3 checkpoint: failed to deserialize memory manager checkpoint data: unexpected end of JSON input"},
	} {
		st, err := Unmarshal([]byte(tc.file))
		if tc.err != "" {
			if err == nil || err.Error() != tc.err {
				t.Errorf("%s: err %v, want %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !st.Equal(*upstreamState()) {
			t.Errorf("%s: got %+v", tc.name, st)
		}
	}
}

// TestMarshalUpstream: the file written has upstream's data checksum, and
// its top-level checksum is the one an older kubelet verifies.
func TestMarshalUpstream(t *testing.T) {
	b, err := upstreamState().Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil {
		t.Fatal(err)
	}
	// The same fields as upstream's v1 fixture: its checksum.
	if cp.Checksum != 4215593881 {
		t.Errorf("legacy checksum %d, want upstream's 4215593881", cp.Checksum)
	}
	if cp.Data == "" || dataChecksum(cp.Data) != cp.DataChecksum {
		t.Errorf("data checksum %d of %q", cp.DataChecksum, cp.Data)
	}
	back, err := Unmarshal(b)
	if err != nil || !back.Equal(*upstreamState()) {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	// Upstream's v3 fixture's data has upstream's checksum.
	var up checkpoint
	if err := json.Unmarshal([]byte(upstreamV3), &up); err != nil {
		t.Fatal(err)
	}
	if got := dataChecksum(up.Data); got != 1849615440 {
		t.Errorf("data checksum %d, want upstream's 1849615440", got)
	}
}

func TestLoadSave(t *testing.T) {
	dir := t.TempDir()
	if st, err := Load(dir); st != nil || err != nil {
		t.Fatalf("no file: %v, %v", st, err)
	}
	if err := Save(dir, *upstreamState()); err != nil {
		t.Fatal(err)
	}
	st, err := Load(dir)
	if err != nil || !st.Equal(*upstreamState()) {
		t.Fatalf("got %+v, %v", st, err)
	}
	write(t, dir+"/"+StateFile, strings.Replace(upstreamV1, "4215593881", "101010", 1))
	_, err = Load(dir)
	want := `could not restore state from checkpoint: checkpoint is corrupted, please drain this node and delete the memory manager checkpoint file "` + dir + `/memory_manager_state" before restarting Kubelet`
	if err == nil || err.Error() != want {
		t.Errorf("err %v, want %q", err, want)
	}
}
