package checkpoint

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// upstreamFile was written by upstream's checkpoint package
// (k8s.io/kubernetes@v1.37.2 pkg/kubelet/cm/devicemanager/checkpoint,
// MarshalCheckpoint) for the entries of TestUpstreamFormat.
const upstreamFile = `{"Data":{"PodDeviceEntries":[{"PodUID":"0b1c2d3e-uid","ContainerName":"app","ResourceName":"example.com/resource","DeviceIDs":{"-1":["Dev-1","Dev-2"]},"AllocResp":"CgNhYmM="},{"PodUID":"0b1c2d3e-uid","ContainerName":"init","ResourceName":"example.com/other","DeviceIDs":{"0":["a"],"1":["b"]},"AllocResp":null}],"RegisteredDevices":{"example.com/other":["a","b"],"example.com/resource":["Dev-1","Dev-2"]}},"Checksum":599473148}`

func upstreamEntries() ([]PodDevicesEntry, map[string][]string) {
	return []PodDevicesEntry{
			{PodUID: "0b1c2d3e-uid", ContainerName: "app", ResourceName: "example.com/resource",
				DeviceIDs: DevicesPerNUMA{NoTopology: {"Dev-1", "Dev-2"}}, AllocResp: []byte{0x0a, 0x03, 'a', 'b', 'c'}},
			{PodUID: "0b1c2d3e-uid", ContainerName: "init", ResourceName: "example.com/other",
				DeviceIDs: DevicesPerNUMA{0: {"a"}, 1: {"b"}}},
		}, map[string][]string{
			"example.com/resource": {"Dev-1", "Dev-2"}, "example.com/other": {"a", "b"}}
}

func TestUpstreamFormat(t *testing.T) {
	entries, registered := upstreamEntries()
	got, err := Marshal(entries, registered)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != upstreamFile {
		t.Errorf("Marshal:\n%s\nupstream wrote:\n%s", got, upstreamFile)
	}
	readEntries, readRegistered, err := Unmarshal([]byte(upstreamFile))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(readEntries, entries) || !reflect.DeepEqual(readRegistered, registered) {
		t.Errorf("Unmarshal: %#v %#v", readEntries, readRegistered)
	}
}

func TestRoundTripAndCorruption(t *testing.T) {
	dir := t.TempDir()
	if e, r, err := Read(dir); err != nil || e != nil || r != nil {
		t.Fatalf("missing file: %v %v %v", e, r, err)
	}
	entries, registered := upstreamEntries()
	if err := Write(dir, entries, registered); err != nil {
		t.Fatal(err)
	}
	e, r, err := Read(dir)
	if err != nil || !reflect.DeepEqual(e, entries) || !reflect.DeepEqual(r, registered) {
		t.Fatalf("Read: %v %v %v", e, r, err)
	}
	for name, blob := range map[string]string{
		"checksum": strings.Replace(upstreamFile, `"Dev-2"]},"AllocResp"`, `"Dev-3"]},"AllocResp"`, 1),
		"json":     upstreamFile[:40],
	} {
		if _, _, err := Unmarshal([]byte(blob)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: err %v, want ErrCorrupt", name, err)
		}
	}
}
