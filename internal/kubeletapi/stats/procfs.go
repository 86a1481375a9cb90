package stats

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// userHZ is the unit of /proc/stat's CPU times. The kernel exports them in
// USER_HZ, which is 100 on every Linux architecture Kubernetes runs on.
const userHZ = 100

// procStatBusyNanos is the CPU time spent on everything but idle and
// iowait since boot, from the "cpu" line of /proc/stat. guest and
// guest_nice are already counted in user and nice.
func procStatBusyNanos(data []byte) (uint64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 8 {
			return 0, fmt.Errorf("cpu line %q: want at least 7 values", sc.Text())
		}
		var busy uint64
		// user nice system idle iowait irq softirq steal
		for i, f := range fields[1:] {
			if i == 3 || i == 4 || i >= 8 {
				continue
			}
			v, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("cpu line %q: value %d: %w", sc.Text(), i+1, err)
			}
			busy += v
		}
		return busy * uint64(time.Second/userHZ), nil
	}
	return 0, fmt.Errorf("no cpu line")
}

// procStatBootTime is the btime line of /proc/stat, as upstream's
// GetBootTime.
func procStatBootTime(data []byte) (time.Time, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 2 && fields[0] == "btime" {
			sec, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return time.Time{}, fmt.Errorf("btime %q: %w", fields[1], err)
			}
			return time.Unix(sec, 0), nil
		}
	}
	return time.Time{}, fmt.Errorf("no btime line")
}

// parseMeminfo reads /proc/meminfo into bytes by field name ("MemTotal").
func parseMeminfo(data []byte) (map[string]uint64, error) {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseUint(fields[0], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("meminfo %s: %w", name, err)
		}
		if len(fields) > 1 && fields[1] == "kB" {
			v *= 1024
		}
		out[name] = v
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no meminfo fields")
	}
	return out, nil
}

// parseKeyedValues reads the "name value" lines of memory.stat, cpu.stat
// and /proc/vmstat.
func parseKeyedValues(data []byte) map[string]uint64 {
	out := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 2 {
			continue
		}
		if v, err := strconv.ParseUint(fields[1], 10, 64); err == nil {
			out[fields[0]] = v
		}
	}
	return out
}

// ignoredInterfacePrefixes are the interfaces cAdvisor leaves out of a
// machine's and a container's network statistics.
var ignoredInterfacePrefixes = []string{"lo", "veth", "docker", "nerdctl"}

func ignoredInterface(name string) bool {
	name = strings.ToLower(name)
	for _, p := range ignoredInterfacePrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// defaultInterface is the interface whose figures fill NetworkStats'
// inline InterfaceStats, as upstream's defaultNetworkInterfaceName.
const defaultInterface = "eth0"

// netDevice is one interface's counters in /proc/<pid>/net/dev.
type netDevice struct {
	name                                    string
	rxBytes, rxPackets, rxErrors, rxDropped uint64
	txBytes, txPackets, txErrors, txDropped uint64
}

// parseNetDevices reads /proc/<pid>/net/dev, without the ignored
// interfaces. Unlike cAdvisor it splits the name at the colon, so a
// counter wide enough to touch the name is still read.
func parseNetDevices(data []byte) ([]netDevice, error) {
	var out []netDevice
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 0; sc.Scan(); line++ {
		if line < 2 {
			continue // two header lines
		}
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			return nil, fmt.Errorf("line %q: no colon after the interface name", sc.Text())
		}
		name = strings.TrimSpace(name)
		fields := strings.Fields(rest)
		if len(fields) != 16 {
			return nil, fmt.Errorf("interface %s: %d values, want 16", name, len(fields))
		}
		if ignoredInterface(name) {
			continue
		}
		var v [16]uint64
		for i, f := range fields {
			n, err := strconv.ParseUint(f, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("interface %s: value %d: %w", name, i+1, err)
			}
			v[i] = n
		}
		out = append(out, netDevice{name: name,
			rxBytes: v[0], rxPackets: v[1], rxErrors: v[2], rxDropped: v[3],
			txBytes: v[8], txPackets: v[9], txErrors: v[10], txDropped: v[11]})
	}
	return out, sc.Err()
}

// parseNetDev reads /proc/<pid>/net/dev into the summary's statistics per
// interface.
func parseNetDev(data []byte) ([]statsapi.InterfaceStats, error) {
	devs, err := parseNetDevices(data)
	if err != nil {
		return nil, err
	}
	var out []statsapi.InterfaceStats
	for _, d := range devs {
		out = append(out, statsapi.InterfaceStats{
			Name: d.name, RxBytes: ptrTo(d.rxBytes), RxErrors: ptrTo(d.rxErrors), TxBytes: ptrTo(d.txBytes), TxErrors: ptrTo(d.txErrors),
		})
	}
	return out, nil
}

// networkStats wraps interface statistics as the summary has them: every
// interface, and the default one inline.
func networkStats(at time.Time, ifaces []statsapi.InterfaceStats) *statsapi.NetworkStats {
	n := &statsapi.NetworkStats{Time: metaTime(at), Interfaces: ifaces}
	for _, i := range ifaces {
		if i.Name == defaultInterface {
			n.InterfaceStats = i
		}
	}
	return n
}

// parsePressure reads a PSI file (/proc/pressure/cpu, <cgroup>/cpu.pressure).
// A kernel that has no "full" line for CPU leaves it zero, as cAdvisor.
func parsePressure(data []byte) (*statsapi.PSIStats, error) {
	out := &statsapi.PSIStats{}
	found := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var d *statsapi.PSIData
		switch fields[0] {
		case "some":
			d = &out.Some
		case "full":
			d = &out.Full
		default:
			return nil, fmt.Errorf("line %q: want some or full", sc.Text())
		}
		for _, kv := range fields[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				return nil, fmt.Errorf("line %q: %q is not key=value", sc.Text(), kv)
			}
			var err error
			switch k {
			case "avg10":
				d.Avg10, err = strconv.ParseFloat(v, 64)
			case "avg60":
				d.Avg60, err = strconv.ParseFloat(v, 64)
			case "avg300":
				d.Avg300, err = strconv.ParseFloat(v, 64)
			case "total":
				d.Total, err = strconv.ParseUint(v, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("line %q: %s: %w", sc.Text(), k, err)
			}
		}
		found = true
	}
	if !found {
		return nil, fmt.Errorf("no some/full lines")
	}
	return out, nil
}

// loadavgTasks is the number of tasks from /proc/loadavg ("0.50 0.40 0.30
// 2/3518 371"), which upstream prefers to sysinfo(2)'s truncated count.
func loadavgTasks(data []byte) (int64, error) {
	fields := strings.Fields(string(data))
	if len(fields) < 5 {
		return 0, fmt.Errorf("%q: want 5 fields", strings.TrimSpace(string(data)))
	}
	_, total, ok := strings.Cut(fields[3], "/")
	if !ok {
		return 0, fmt.Errorf("field %q: want running/total", fields[3])
	}
	return strconv.ParseInt(total, 10, 64)
}

// readUint reads a file holding one unsigned number, as cgroup and sysctl
// files do.
func readUint(path string) (uint64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}

// readTrimmed reads a one-line file such as /etc/machine-id.
func readTrimmed(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}
