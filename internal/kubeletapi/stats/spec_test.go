package stats

import (
	"reflect"
	"testing"
	"time"
)

func TestSpec(t *testing.T) {
	tests := []struct {
		host string
		want MachineInfo
	}{
		{"testdata/v1", MachineInfo{
			CPUVendorID: "GenuineIntel", NumCores: 2, NumPhysicalCores: 2, NumSockets: 1,
			CPUFrequencyKHz: 2999998, // cpuinfo's MHz: no cpufreq
			MemoryCapacity:  8000000 * 1024, SwapCapacity: 1048576 * 1024,
			HugePages:      []HugePagesInfo{{PageSize: 2048, NumPages: 16}, {PageSize: 1048576, NumPages: 0}},
			MachineID:      "0123456789abcdef0123456789abcdef",
			SystemUUID:     "4c4c4544-0000-1000-8000-000000000002",
			BootID:         "b0a1c2d3-0000-4000-8000-000000000001",
			NetworkDevices: []NetInfo{{Name: "cni0", MacAddress: "f6:e3:8d:b6:3a:f4", Mtu: 1450}, {Name: "eth0", MacAddress: "52:54:00:12:34:56", Speed: 10000, Mtu: 1500}},
		}},
		{"testdata/v2", MachineInfo{
			CPUVendorID: "AuthenticAMD", NumCores: 2, NumPhysicalCores: 2, NumSockets: 2,
			CPUFrequencyKHz: 3500000, // cpufreq's maximum
			MemoryCapacity:  2000000 * 1024,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.host, func(t *testing.T) {
			p := &Provider{HostRoot: tt.host, now: func() time.Time { return timeAt(0) }}
			got, err := p.Spec()
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Timestamp = timeAt(0)
			if !reflect.DeepEqual(*got, tt.want) {
				t.Errorf("spec\n got %+v\nwant %+v", *got, tt.want)
			}
		})
	}
}

func TestSpecFilesystem(t *testing.T) {
	p := &Provider{HostRoot: "testdata/v1", RootDir: t.TempDir()}
	m, err := p.Spec()
	if err != nil {
		t.Fatal(err)
	}
	// The fixture's mountinfo has / on /dev/vda1 and /tmp on tmpfs;
	// which one holds the test's directory depends on TMPDIR.
	if len(m.Filesystems) != 1 || m.Filesystems[0].Capacity == 0 || m.Filesystems[0].Device == "" {
		t.Errorf("filesystems %+v: want the root directory's, with a device and a capacity", m.Filesystems)
	}
}

func TestMountOf(t *testing.T) {
	mountinfo := []byte(
		"21 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n" +
			"22 21 0:20 / /var/lib rw shared:2 - xfs /dev/vdb rw\n" +
			"23 22 0:21 / /var/lib/kubelet/pods/x rw shared:3 - tmpfs tmpfs rw\n" +
			"24 21 0:22 / /var/lib\\040data rw shared:4 - ext4 /dev/vdc rw\n" +
			"25 22 0:23 / /var/lib rw shared:5 - overlay overlay rw\n")
	tests := []struct {
		dir, wantSource, wantType string
	}{
		{"/var/lib/kubelet", "overlay", "overlay"}, // mounted over /var/lib last
		{"/var/library", "/dev/vda1", "ext4"},      // not under /var/lib
		{"/var/lib data/x", "/dev/vdc", "ext4"},    // escaped space
		{"/", "/dev/vda1", "ext4"},
	}
	for _, tt := range tests {
		got, ok := mountOf(mountinfo, tt.dir)
		if !ok || got.source != tt.wantSource || got.fsType != tt.wantType {
			t.Errorf("mountOf(%q) = %+v %v, want %s %s", tt.dir, got, ok, tt.wantSource, tt.wantType)
		}
	}
	if _, ok := mountOf([]byte("garbage\n"), "/x"); ok {
		t.Error("a mount found in garbage")
	}
}

func TestParseCPUInfo(t *testing.T) {
	// Two sockets of two cores with two threads each.
	in := ""
	for _, cpu := range []struct{ socket, core string }{{"0", "0"}, {"0", "1"}, {"1", "0"}, {"1", "1"}, {"0", "0"}, {"0", "1"}, {"1", "0"}, {"1", "1"}} {
		in += "processor\t: x\nvendor_id\t: GenuineIntel\ncpu MHz\t\t: 2100.5\nphysical id\t: " + cpu.socket + "\ncore id\t\t: " + cpu.core + "\n\n"
	}
	got := parseCPUInfo([]byte(in))
	want := cpuInfo{vendor: "GenuineIntel", processors: 8, cores: 4, sockets: 2, khz: 2100500}
	if got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
	// ARM: no vendor, sockets, cores nor MHz.
	if got := parseCPUInfo([]byte("processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\nBogoMIPS\t: 50.00\n")); got != (cpuInfo{processors: 2}) {
		t.Errorf("arm: got %+v", got)
	}
}
