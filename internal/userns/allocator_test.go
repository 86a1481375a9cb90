package userns

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestNewAllocator(t *testing.T) {
	tests := []struct {
		name                     string
		first, length, idsPerPod uint32
		maxPods                  int
		want                     string
		wantSlots                int
	}{
		{name: "upstream's default range", first: 65536, length: DefaultRange(65536).Length, idsPerPod: 65536, maxPods: 110, wantSlots: 65535},
		{name: "a subuid range", first: 1 << 20, length: 110 * 65536, idsPerPod: 65536, maxPods: 110, wantSlots: 110},
		{name: "two units per pod", first: 131072, length: 4 * 131072, idsPerPod: 131072, maxPods: 4, wantSlots: 4},
		{name: "idsPerPod not a multiple of the unit", first: 65536, length: 65536 * 10, idsPerPod: 1000, maxPods: 1,
			want: "kubelet user namespace length 1000 is not a multiple of 65536"},
		{name: "first ID not a multiple of idsPerPod", first: 65537, length: 65536 * 10, idsPerPod: 65536, maxPods: 1,
			want: "kubelet user assigned ID 65537 is not a multiple of 65536"},
		{name: "host ID 0 in range", first: 0, length: 65536 * 10, idsPerPod: 65536, maxPods: 1,
			want: "kubelet user assigned ID 0 must be greater or equal to 65536"},
		{name: "length not a multiple of idsPerPod", first: 65536, length: 65536*10 + 1, idsPerPod: 65536, maxPods: 1,
			want: "kubelet user assigned IDs length 655361 is not a multiple of 65536"},
		{name: "past the last ID", first: 1 << 31, length: 1<<31 + 65536, idsPerPod: 65536, maxPods: 1,
			want: "kubelet user assigned IDs 2147483648+2147549184 go past the last ID 4294967295"},
		{name: "too few slots for maxPods", first: 65536, length: 65536 * 10, idsPerPod: 65536, maxPods: 11,
			want: "kubelet user assigned IDs are not enough to support 11 pods"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAllocator(tc.first, tc.length, tc.idsPerPod, tc.maxPods)
			if got := errString(err); got != tc.want {
				t.Fatalf("error %q, want %q", got, tc.want)
			}
			if err == nil && a.Slots() != tc.wantSlots {
				t.Errorf("%d slots, want %d", a.Slots(), tc.wantSlots)
			}
		})
	}
}

// op is one step of an allocator's table test.
type op struct {
	do      string // allocate, record, release
	pod     types.UID
	start   int    // allocate
	from    uint32 // record; allocate: the first ID wanted
	length  uint32 // record
	want    string // the error wanted
	present bool   // release: whether the pod had a range
}

func TestAllocatorSteps(t *testing.T) {
	const u = 65536
	tests := []struct {
		name  string
		slots int
		ops   []op
	}{
		{name: "allocations are disjoint and start at the drawn slot", slots: 4, ops: []op{
			{do: "allocate", pod: "a", start: 0, from: 1 * u},
			{do: "allocate", pod: "b", start: 0, from: 2 * u},
			{do: "allocate", pod: "c", start: 3, from: 4 * u},
			{do: "allocate", pod: "d", start: 3, from: 3 * u}, // wraps past the last slot
		}},
		{name: "a pod keeps its range", slots: 4, ops: []op{
			{do: "allocate", pod: "a", start: 2, from: 3 * u},
			{do: "allocate", pod: "a", start: 0, from: 3 * u},
		}},
		{name: "exhaustion, then a release frees a slot", slots: 2, ops: []op{
			{do: "allocate", pod: "a", start: 0, from: 1 * u},
			{do: "allocate", pod: "b", start: 0, from: 2 * u},
			{do: "allocate", pod: "c", start: 0, want: "could not find an empty slot to allocate a user namespace"},
			{do: "release", pod: "a", present: true},
			{do: "release", pod: "a", present: false},
			{do: "allocate", pod: "c", start: 1, from: 1 * u},
		}},
		{name: "start beyond and below the slots", slots: 3, ops: []op{
			{do: "allocate", pod: "a", start: 7, from: 2 * u},
			{do: "allocate", pod: "b", start: -1, from: 3 * u},
		}},
		{name: "records from disk", slots: 4, ops: []op{
			{do: "record", pod: "a", from: 2 * u, length: u},
			{do: "record", pod: "a", from: 2 * u, length: u}, // again: nothing to do
			{do: "record", pod: "a", from: 3 * u, length: u, want: `different user namespace range already used by pod "a"`},
			{do: "record", pod: "b", from: 2 * u, length: u, want: `range picked for pod "b" already taken`},
			{do: "record", pod: "b", from: 2 * u, length: 2 * u, want: "wrong user namespace length 131072"},
			{do: "record", pod: "b", from: 2*u + 1, length: u, want: "wrong user namespace offset specified 131073"},
			{do: "record", pod: "b", from: 0, length: u, want: "id 0 is out of range"},
			{do: "record", pod: "b", from: 5 * u, length: u, want: "id 327680 is out of range"},
			{do: "allocate", pod: "c", start: 1, from: 3 * u}, // slot 1 is a's
		}},
		{name: "the 65th slot: past one bitmap word", slots: 70, ops: func() []op {
			var ops []op
			for i := range 70 {
				ops = append(ops, op{do: "allocate", pod: types.UID(fmt.Sprint(i)), start: 0, from: uint32(i+1) * u})
			}
			return append(ops,
				op{do: "allocate", pod: "x", want: "could not find an empty slot to allocate a user namespace"},
				op{do: "release", pod: "66", present: true},
				op{do: "allocate", pod: "x", start: 3, from: 67 * u})
		}()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAllocator(u, uint32(tc.slots)*u, u, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, o := range tc.ops {
				switch o.do {
				case "allocate":
					got, err := a.Allocate(o.pod, o.start)
					if errString(err) != o.want || (err == nil && got != o.from) {
						t.Fatalf("step %d: Allocate(%s, %d) = %d, %v; want %d, %q", i, o.pod, o.start, got, err, o.from, o.want)
					}
				case "record":
					if err := a.Record(o.pod, o.from, o.length); errString(err) != o.want {
						t.Fatalf("step %d: Record(%s, %d, %d) = %v, want %q", i, o.pod, o.from, o.length, err, o.want)
					}
				case "release":
					if got := a.Release(o.pod); got != o.present {
						t.Fatalf("step %d: Release(%s) = %v, want %v", i, o.pod, got, o.present)
					}
				}
			}
			// Whatever happened, the pods' ranges are disjoint.
			seen := map[uint32]types.UID{}
			for _, uid := range a.Pods() {
				first, _ := a.Lookup(uid)
				if other, ok := seen[first]; ok {
					t.Errorf("pods %s and %s share the range at %d", uid, other, first)
				}
				seen[first] = uid
			}
			if len(seen) != a.count {
				t.Errorf("%d pods hold ranges, the bitmap counts %d", len(seen), a.count)
			}
		})
	}
}

func TestParseFile(t *testing.T) {
	tests := []struct {
		name          string
		content       string
		first, length uint32
		want          string
	}{
		{name: "upstream's file", content: `{"uidMappings":[{"hostId":131072,"containerId":0,"length":65536}],"gidMappings":[{"hostId":131072,"containerId":0,"length":65536}]}`,
			first: 131072, length: 65536},
		{name: "not JSON", content: `{"uidMappings":`, want: "invalid user namespace mappings file: unexpected end of JSON input"},
		{name: "no mapping", content: `{"uidMappings":[],"gidMappings":[]}`, want: "invalid user namespace configuration: no more than one mapping allowed."},
		{name: "two mappings", content: `{"uidMappings":[{"hostId":65536,"length":65536},{"hostId":131072,"length":65536}],"gidMappings":[]}`,
			want: "invalid user namespace configuration: no more than one mapping allowed."},
		{name: "no group mapping", content: `{"uidMappings":[{"hostId":65536,"length":65536}]}`,
			want: "invalid user namespace configuration: GID and UID mappings should be identical."},
		{name: "different group mapping", content: `{"uidMappings":[{"hostId":65536,"length":65536}],"gidMappings":[{"hostId":131072,"length":65536}]}`,
			want: "invalid user namespace configuration: GID and UID mapping should be identical"},
		{name: "root not mapped", content: `{"uidMappings":[{"hostId":65536,"containerId":1,"length":65536}],"gidMappings":[{"hostId":65536,"containerId":1,"length":65536}]}`,
			want: "invalid user namespace configuration: UID 0 must be mapped"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, length, err := ParseFile([]byte(tc.content))
			if errString(err) != tc.want || first != tc.first || length != tc.length {
				t.Errorf("ParseFile = %d, %d, %v; want %d, %d, %q", first, length, err, tc.first, tc.length, tc.want)
			}
		})
	}
	// What NewFile writes is upstream's shape, and reads back.
	data, err := NewFile(196608, 65536).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"uidMappings":[{"hostId":196608,"containerId":0,"length":65536}],"gidMappings":[{"hostId":196608,"containerId":0,"length":65536}]}`
	if string(data) != want {
		t.Errorf("NewFile = %s\nwant %s", data, want)
	}
	if first, length, err := ParseFile(data); err != nil || first != 196608 || length != 65536 {
		t.Errorf("ParseFile(NewFile) = %d, %d, %v", first, length, err)
	}
}

func TestSubIDRange(t *testing.T) {
	tests := []struct {
		name           string
		subuid, subgid string
		want           IDRange
		err            string
	}{
		{name: "by name", subuid: "alice:100000:65536\nkubelet:65536:2147483648\n", subgid: "kubelet:65536:2147483648\n",
			want: IDRange{65536, 2147483648}},
		{name: "by numeric ID, comments and blank lines", subuid: "# ranges\n\n999:131072:655360\n", subgid: "kubelet:131072:655360",
			want: IDRange{131072, 655360}},
		{name: "no entry", subuid: "alice:100000:65536\n", subgid: "kubelet:65536:65536\n",
			err: `error retrieving additional uids for user "kubelet": no subordinate IDs`},
		{name: "file missing", subgid: "kubelet:65536:65536\n",
			err: `error retrieving additional uids for user "kubelet": no subordinate IDs`},
		{name: "no group entry", subuid: "kubelet:65536:65536\n", subgid: "alice:100000:65536\n",
			err: `error retrieving additional gids for user "kubelet"`},
		{name: "mismatched", subuid: "kubelet:65536:65536\n", subgid: "kubelet:131072:65536\n",
			err: `mismatched subuids and subgids for user "kubelet"`},
		{name: "two ranges", subuid: "kubelet:65536:65536\nkubelet:262144:65536\n", subgid: "kubelet:65536:65536\nkubelet:262144:65536\n",
			err: `error parsing the subordinate IDs of user "kubelet": it must have only one range, it has 2`},
		{name: "a bad line of ours", subuid: "kubelet:65536\n", subgid: "kubelet:65536:65536\n",
			err: `error retrieving additional uids for user "kubelet": invalid line "kubelet:65536"`},
		{name: "a bad number", subuid: "kubelet:65536:x\n", subgid: "kubelet:65536:65536\n",
			err: `error retrieving additional uids for user "kubelet": error parsing line "kubelet:65536:x": strconv.ParseUint: parsing "x": invalid syntax`},
		{name: "someone else's bad line is not ours", subuid: "bob:1\nkubelet:65536:65536\n", subgid: "kubelet:65536:65536\n",
			want: IDRange{65536, 65536}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var subuid []byte
			if tc.subuid != "" {
				subuid = []byte(tc.subuid)
			}
			got, err := SubIDRange("kubelet", "999", subuid, []byte(tc.subgid))
			if errString(err) != tc.err || got != tc.want {
				t.Errorf("SubIDRange = %v, %v; want %v, %q", got, err, tc.want, tc.err)
			}
		})
	}
	if r := DefaultRange(65536); r.First != 65536 || uint64(r.First)+uint64(r.Length) != 1<<32 {
		t.Errorf("DefaultRange(65536) = %v: not every ID from 65536 on", r)
	}
}
