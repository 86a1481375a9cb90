package stats

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MachineInfo is the machine's description that /metrics/cadvisor's
// machine metrics report: the fields of cAdvisor's MachineInfo that can be
// read honestly from /proc, /sys and /etc, under cAdvisor's JSON names (no
// listener serves it as JSON: upstream v1.37 dropped /spec). A field that could not be read is left out rather than
// given as zero (except num_cores, memory_capacity and swap_capacity,
// which are always read).
type MachineInfo struct {
	Timestamp        time.Time        `json:"timestamp"`
	CPUVendorID      string           `json:"vendor_id,omitempty"`
	NumCores         int              `json:"num_cores"`
	NumPhysicalCores int              `json:"num_physical_cores,omitempty"`
	NumSockets       int              `json:"num_sockets,omitempty"`
	CPUFrequencyKHz  uint64           `json:"cpu_frequency_khz,omitempty"`
	MemoryCapacity   uint64           `json:"memory_capacity"`
	SwapCapacity     uint64           `json:"swap_capacity"`
	HugePages        []HugePagesInfo  `json:"hugepages,omitempty"`
	MachineID        string           `json:"machine_id,omitempty"`
	SystemUUID       string           `json:"system_uuid,omitempty"`
	BootID           string           `json:"boot_id,omitempty"`
	Filesystems      []FilesystemInfo `json:"filesystems,omitempty"`
	NetworkDevices   []NetInfo        `json:"network_devices,omitempty"`
}

// HugePagesInfo is one huge page size and how many pages of it the kernel
// has reserved.
type HugePagesInfo struct {
	PageSize uint64 `json:"page_size"` // kB
	NumPages uint64 `json:"num_pages"`
}

// FilesystemInfo describes the filesystem of the kubelet's root
// directory; cAdvisor lists every block device's.
type FilesystemInfo struct {
	Device    string `json:"device"`
	Capacity  uint64 `json:"capacity"`
	Type      string `json:"type"`
	Inodes    uint64 `json:"inodes"`
	HasInodes bool   `json:"has_inodes"`
}

// NetInfo is a network device, without the ones cAdvisor ignores.
type NetInfo struct {
	Name       string `json:"name"`
	MacAddress string `json:"mac_address"`
	Speed      int64  `json:"speed,omitempty"` // Mbit/s; virtual devices have none
	Mtu        int64  `json:"mtu"`
}

// Spec reads the machine's description. /proc/cpuinfo and /proc/meminfo
// must be readable; everything else is left out when it is not.
func (p *Provider) Spec() (*MachineInfo, error) {
	p.init()
	cpuinfoPath := p.hostPath("proc", "cpuinfo")
	cpuinfo, err := os.ReadFile(cpuinfoPath)
	if err != nil {
		return nil, fmt.Errorf("machine spec: %w", err)
	}
	meminfoPath := p.hostPath("proc", "meminfo")
	data, err := os.ReadFile(meminfoPath)
	if err != nil {
		return nil, fmt.Errorf("machine spec: %w", err)
	}
	mi, err := parseMeminfo(data)
	if err != nil {
		return nil, fmt.Errorf("machine spec: %s: %w", meminfoPath, err)
	}
	cpu := parseCPUInfo(cpuinfo)
	if cpu.processors == 0 {
		return nil, fmt.Errorf("machine spec: %s lists no processor", cpuinfoPath)
	}
	m := &MachineInfo{
		Timestamp:        p.now(),
		CPUVendorID:      cpu.vendor,
		NumCores:         cpu.processors,
		NumPhysicalCores: cpu.cores,
		NumSockets:       cpu.sockets,
		CPUFrequencyKHz:  cpu.khz,
		MemoryCapacity:   mi["MemTotal"],
		SwapCapacity:     mi["SwapTotal"],
		HugePages:        p.hugePages(),
		MachineID:        p.firstReadable(p.hostPath("etc", "machine-id"), p.hostPath("var", "lib", "dbus", "machine-id")),
		SystemUUID:       p.firstReadable(p.hostPath("sys", "class", "dmi", "id", "product_uuid")),
		BootID:           p.firstReadable(p.hostPath("proc", "sys", "kernel", "random", "boot_id")),
		NetworkDevices:   p.networkDevices(),
	}
	// As cAdvisor: the highest frequency the CPU supports, else what
	// cpuinfo says it runs at.
	if khz, err := readUint(p.hostPath("sys", "devices", "system", "cpu", "cpu0", "cpufreq", "cpuinfo_max_freq")); err == nil {
		m.CPUFrequencyKHz = khz
	}
	if fs, ok := p.rootFilesystem(); ok {
		m.Filesystems = []FilesystemInfo{fs}
	}
	return m, nil
}

type cpuInfo struct {
	vendor                     string
	processors, cores, sockets int
	khz                        uint64 // of the first processor
}

// parseCPUInfo counts /proc/cpuinfo's processors, distinct sockets
// (physical id) and distinct cores (physical id, core id).
func parseCPUInfo(data []byte) cpuInfo {
	var out cpuInfo
	sockets := map[string]bool{}
	cores := map[string]bool{}
	socket := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			out.processors++
		case "vendor_id":
			out.vendor = v
		case "physical id":
			socket = v
			sockets[v] = true
		case "core id":
			cores[socket+"/"+v] = true
		case "cpu MHz":
			if mhz, err := strconv.ParseFloat(v, 64); err == nil && out.khz == 0 {
				out.khz = uint64(mhz * 1000)
			}
		}
	}
	out.sockets, out.cores = len(sockets), len(cores)
	return out
}

func (p *Provider) hugePages() []HugePagesInfo {
	dir := p.hostPath("sys", "kernel", "mm", "hugepages")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []HugePagesInfo
	for _, e := range entries {
		size, ok := strings.CutPrefix(e.Name(), "hugepages-")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(size, "kB"), 10, 64)
		if err != nil {
			continue
		}
		n, err := readUint(filepath.Join(dir, e.Name(), "nr_hugepages"))
		if err != nil {
			continue
		}
		out = append(out, HugePagesInfo{PageSize: kb, NumPages: n})
	}
	slices.SortFunc(out, func(a, b HugePagesInfo) int { return cmp.Compare(a.PageSize, b.PageSize) })
	return out
}

func (p *Provider) networkDevices() []NetInfo {
	dir := p.hostPath("sys", "class", "net")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []NetInfo
	for _, e := range entries {
		name := e.Name()
		if ignoredInterface(name) {
			continue
		}
		mac, err := readTrimmed(filepath.Join(dir, name, "address"))
		if err != nil {
			continue
		}
		n := NetInfo{Name: name, MacAddress: mac}
		if mtu, err := readUint(filepath.Join(dir, name, "mtu")); err == nil {
			n.Mtu = int64(mtu)
		}
		// Virtual devices answer EINVAL or -1.
		if s, err := readTrimmed(filepath.Join(dir, name, "speed")); err == nil {
			if speed, err := strconv.ParseInt(s, 10, 64); err == nil && speed > 0 {
				n.Speed = speed
			}
		}
		out = append(out, n)
	}
	return out
}

// rootFilesystem describes the filesystem holding RootDir: its device
// and type from the longest matching mount point of mountinfo.
func (p *Provider) rootFilesystem() (FilesystemInfo, bool) {
	if p.RootDir == "" {
		return FilesystemInfo{}, false
	}
	info, err := statFS(p.RootDir)
	if err != nil {
		return FilesystemInfo{}, false
	}
	data, err := os.ReadFile(p.hostPath("proc", "self", "mountinfo"))
	if err != nil {
		return FilesystemInfo{}, false
	}
	dir, err := filepath.EvalSymlinks(p.RootDir)
	if err != nil {
		dir = p.RootDir
	}
	mount, ok := mountOf(data, dir)
	if !ok {
		return FilesystemInfo{}, false
	}
	return FilesystemInfo{
		Device: mount.source, Type: mount.fsType,
		Capacity: info.capacity, Inodes: info.inodes, HasInodes: info.hasInodes,
	}, true
}

type mountEntry struct{ mountPoint, fsType, source string }

// mountOf finds the mount holding dir in a mountinfo file: the one with
// the longest mount point that is dir or a parent of it, the last one
// mounted winning among equals.
func mountOf(mountinfo []byte, dir string) (mountEntry, bool) {
	var best mountEntry
	found := false
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// 36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f, g := strings.Fields(pre), strings.Fields(post)
		if len(f) < 5 || len(g) < 2 {
			continue
		}
		mp := unescapeMountPath(f[4])
		if !within(dir, mp) || found && len(mp) < len(best.mountPoint) {
			continue
		}
		best, found = mountEntry{mountPoint: mp, fsType: g[0], source: g[1]}, true
	}
	return best, found
}

func within(dir, mountPoint string) bool {
	if mountPoint == "/" {
		return strings.HasPrefix(dir, "/")
	}
	return dir == mountPoint || strings.HasPrefix(dir, mountPoint+"/")
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func (p *Provider) firstReadable(paths ...string) string {
	for _, path := range paths {
		if s, err := readTrimmed(path); err == nil && s != "" {
			return s
		}
	}
	return ""
}
