package cpumanager

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/utils/cpuset"
)

// The files are upstream's own (state_checkpoint_test.go of v1.37.2),
// with the checksums upstream computed.
func TestUnmarshalUpstreamFiles(t *testing.T) {
	cases := []struct {
		name, file, wantErr string
		want                State
	}{
		{"v2", `{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":1942532442}`, "",
			State{Policy: "static", Default: cpuset.New(7, 8, 9), Entries: map[string]map[string]cpuset.CPUSet{"pod": {"container1": cpuset.New(4, 5, 6), "container2": cpuset.New(1, 2, 3)}}}},
		{"v4, its v2 part ignored", `{"policyName":"other","defaultCPUSet":"1-9","checksum":1234,"data":"{\"policyName\":\"static\",\"defaultCPUSet\":\"7-9\",\"entries\":{\"pod\":{\"container1\":\"4-6\",\"container2\":\"1-3\"}}}","dataChecksum":1420829534}`, "",
			State{Policy: "static", Default: cpuset.New(7, 8, 9), Entries: map[string]map[string]cpuset.CPUSet{"pod": {"container1": cpuset.New(4, 5, 6), "container2": cpuset.New(1, 2, 3)}}}},
		{"v4 none", `{"policyName":"other","defaultCPUSet":"1-9","checksum":1234,"data":"{\"policyName\":\"none\",\"defaultCPUSet\":\"4-6\"}","dataChecksum":657950972}`, "",
			State{Policy: "none", Default: cpuset.New(4, 5, 6), Entries: map[string]map[string]cpuset.CPUSet{}}},
		{"v4 with unknown fields and pod entries", `{"policyName":"other","defaultCPUSet":"1-9","checksum":1234,"data":"{\"policyName\":\"static\",\"defaultCPUSet\":\"1-3\",\"entries\":{\"pod\":{\"container1\":\"4-6\",\"container2\":\"7-9\"}},\"podEntries\":{\"pod\":{\"cpuSet\":\"4-10\"}},\"baselines\":{\"pod\":{\"container1\":{\"baseline\":\"4-5\"},\"container2\":{\"baseline\":\"7-8\"}}}}","dataChecksum":1032795074}`, "",
			State{Policy: "static", Default: cpuset.New(1, 2, 3), Entries: map[string]map[string]cpuset.CPUSet{"pod": {"container1": cpuset.New(4, 5, 6), "container2": cpuset.New(7, 8, 9)}}}},
		{"v4 bad data checksum", `{"policyName":"none","defaultCPUSet":"1-3","checksum":1234,"data":"{\"policyName\":\"none\",\"defaultCPUSet\":\"4-6\"}","dataChecksum":1234}`, "checkpoint is corrupted", State{}},
		{"v1 checksum", `{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}`, "checkpoint is corrupted", State{}},
		{"v1 entries", `{"policyName":"static","defaultCPUSet":"7-9","entries":{"containerID1":"4-6"},"checksum":2026311253}`, "cannot unmarshal string", State{}},
		{"bad default", `{"policyName":"none","defaultCPUSet":"7-9","checksum":98002435,"data":"{\"policyName\":\"none\",\"defaultCPUSet\":\"1.3\"}","dataChecksum":3033143655}`,
			`could not parse default CPU set "1.3": strconv.Atoi: parsing "1.3": invalid syntax`, State{}},
		{"bad entry", `{"policyName":"static","defaultCPUSet":"1-3","checksum":1659543133,"data":"{\"policyName\":\"static\",\"defaultCPUSet\":\"1-3\",\"entries\":{\"pod\":{\"container1\":\"4-6\",\"container2\":\"asd\"}}}","dataChecksum":3794806925}`,
			`could not parse cpuset "asd" for container "container2" in pod "pod"`, State{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Unmarshal([]byte(tc.file))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !got.Equal(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// What we write carries upstream's checksums on both parts: a v2 reader
// (an older kubelet) and a v4 reader verify it.
func TestMarshalRoundTrip(t *testing.T) {
	st := State{Policy: "static", Default: cpuset.New(7, 8, 9), Entries: map[string]map[string]cpuset.CPUSet{"pod": {"container1": cpuset.New(4, 5, 6), "container2": cpuset.New(1, 2, 3)}}}
	b, err := st.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	// The v2 part's checksum is the one upstream v1.37.2's
	// MarshalCheckpoint writes for this state (its dump under the name
	// CPUManagerCheckpoint, checked against upstream's types).
	if !strings.Contains(string(b), `"checksum":964019483`) {
		t.Errorf("v2 checksum is not upstream's: %s", b)
	}
	got, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Equal(st) {
		t.Fatalf("round trip: got %+v, want %+v", got, st)
	}
	dir := t.TempDir()
	if err := Save(dir, st); err != nil {
		t.Fatal(err)
	}
	loaded, err := Load(dir)
	if err != nil || loaded == nil || !loaded.Equal(st) {
		t.Fatalf("Load: %+v, %v", loaded, err)
	}
	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "please drain this node and delete the CPU manager checkpoint file") {
		t.Fatalf("a corrupt file: %v", err)
	}
	if st, err := Load(t.TempDir()); st != nil || err != nil {
		t.Fatalf("no file: %v, %v", st, err)
	}
}
