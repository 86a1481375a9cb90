package stats

import (
	"reflect"
	"strings"
	"testing"
	"time"

	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

func TestProcStatBusyNanos(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    uint64
		wantErr string
	}{
		{"user nice system irq softirq steal, not idle nor iowait",
			"cpu  100 20 30 1000 50 5 5 10 7 3\ncpu0 1 1 1 1 1 1 1 1 0 0\n", 170 * 10_000_000, ""},
		{"old kernel without steal", "cpu  1 2 3 4 5 6 7\n", 19 * 10_000_000, ""},
		{"no cpu line", "cpu0 1 2 3 4 5 6 7 8\n", 0, "no cpu line"},
		{"too short", "cpu  1 2 3\n", 0, "at least 7"},
		{"not a number", "cpu  1 x 3 4 5 6 7 8\n", 0, "value 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := procStatBusyNanos([]byte(tt.in))
			if !errMatches(err, tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("busy %d ns, want %d", got, tt.want)
			}
		})
	}
}

func TestProcStatBootTime(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Time
		wantErr string
	}{
		{"cpu  1 2 3 4 5 6 7\nbtime 1700000000\n", time.Unix(1700000000, 0), ""},
		{"cpu  1 2 3 4 5 6 7\n", time.Time{}, "no btime"},
		{"btime soon\n", time.Time{}, "btime"},
	}
	for _, tt := range tests {
		got, err := procStatBootTime([]byte(tt.in))
		if !errMatches(err, tt.wantErr) || !got.Equal(tt.want) {
			t.Errorf("procStatBootTime(%q) = %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseMeminfo(t *testing.T) {
	got, err := parseMeminfo([]byte("MemTotal:        8000000 kB\nInactive(file):  1200 kB\nHugePages_Total:       3\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]uint64{"MemTotal": 8000000 * 1024, "Inactive(file)": 1200 * 1024, "HugePages_Total": 3}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if _, err := parseMeminfo([]byte("MemTotal: lots kB\n")); err == nil || !strings.Contains(err.Error(), "MemTotal") {
		t.Errorf("bad value: error %v, want one naming MemTotal", err)
	}
	if _, err := parseMeminfo(nil); err == nil {
		t.Error("empty meminfo: no error")
	}
}

const netDevHeader = "Inter-|   Receive                                                |  Transmit\n" +
	" face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed\n"

func TestParseNetDev(t *testing.T) {
	iface := func(name string, rx, rxErr, tx, txErr uint64) statsapi.InterfaceStats {
		return statsapi.InterfaceStats{Name: name, RxBytes: &rx, RxErrors: &rxErr, TxBytes: &tx, TxErrors: &txErr}
	}
	tests := []struct {
		name    string
		in      string
		want    []statsapi.InterfaceStats
		wantErr string
	}{
		{"lo veth docker nerdctl left out",
			netDevHeader +
				"    lo: 100 1 0 0 0 0 0 0 100 1 0 0 0 0 0 0\n" +
				"  eth0: 479273110 20407 3 0 0 0 0 0 1558934 14557 4 0 0 0 0 0\n" +
				"vethab12: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n" +
				"docker0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n" +
				"nerdctl0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n" +
				"  cni0: 491264 7083 0 0 0 0 0 6890 82302 808 0 8 0 0 0 0\n",
			[]statsapi.InterfaceStats{iface("eth0", 479273110, 3, 1558934, 4), iface("cni0", 491264, 0, 82302, 0)}, ""},
		{"a counter touching the name",
			netDevHeader + "eth0:12345678901234 1 2 0 0 0 0 0 5 1 6 0 0 0 0 0\n",
			[]statsapi.InterfaceStats{iface("eth0", 12345678901234, 2, 5, 6)}, ""},
		{"headers only", netDevHeader, nil, ""},
		{"short line", netDevHeader + "eth0: 1 2 3\n", nil, "eth0: 3 values"},
		{"no colon", netDevHeader + "eth0 1 2 3\n", nil, "no colon"},
		{"not a number", netDevHeader + "eth0: 1 1 0 0 0 0 0 0 x 1 0 0 0 0 0 0\n", nil, "value 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseNetDev([]byte(tt.in))
			if !errMatches(err, tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNetworkStatsDefaultInterface(t *testing.T) {
	rx := uint64(7)
	n := networkStats(time.Unix(10, 0), []statsapi.InterfaceStats{{Name: "cni0"}, {Name: "eth0", RxBytes: &rx}})
	if n.Name != "eth0" || n.RxBytes == nil || *n.RxBytes != 7 || len(n.Interfaces) != 2 {
		t.Errorf("network %+v: want eth0 inline and both interfaces listed", n)
	}
	if n := networkStats(time.Unix(10, 0), []statsapi.InterfaceStats{{Name: "ens3"}}); n.Name != "" {
		t.Errorf("no eth0: inline interface %q, want none", n.Name)
	}
}

func TestParsePressure(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    *statsapi.PSIStats
		wantErr string
	}{
		{"some and full", "some avg10=1.50 avg60=0.75 avg300=0.25 total=123456\nfull avg10=0.10 avg60=0.20 avg300=0.30 total=42\n",
			&statsapi.PSIStats{
				Some: statsapi.PSIData{Avg10: 1.5, Avg60: 0.75, Avg300: 0.25, Total: 123456},
				Full: statsapi.PSIData{Avg10: 0.1, Avg60: 0.2, Avg300: 0.3, Total: 42},
			}, ""},
		{"cpu on an older kernel: some only", "some avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
			&statsapi.PSIStats{Some: statsapi.PSIData{Total: 9}}, ""},
		{"empty", "", nil, "no some/full"},
		{"unknown line", "most avg10=1\n", nil, "want some or full"},
		{"not key=value", "some avg10\n", nil, "not key=value"},
		{"bad number", "some total=many\n", nil, "total"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePressure([]byte(tt.in))
			if !errMatches(err, tt.wantErr) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestLoadavgTasks(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr string
	}{
		{"1.36 3.49 4.53 2/3518 3715089\n", 3518, ""},
		{"1.36 3.49 4.53\n", 0, "want 5 fields"},
		{"1.36 3.49 4.53 3518 3715089\n", 0, "running/total"},
	}
	for _, tt := range tests {
		got, err := loadavgTasks([]byte(tt.in))
		if !errMatches(err, tt.wantErr) || got != tt.want {
			t.Errorf("loadavgTasks(%q) = %d, %v; want %d, %q", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

// errMatches tells whether err is nil when want is empty, or contains want.
func errMatches(err error, want string) bool {
	if want == "" {
		return err == nil
	}
	return err != nil && strings.Contains(err.Error(), want)
}
