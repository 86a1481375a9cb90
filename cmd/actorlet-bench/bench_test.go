package main

import (
	"math"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/internal/testutil"
)

func TestPercentile(t *testing.T) {
	ten := []float64{10, 1, 9, 2, 8, 3, 7, 4, 6, 5}
	for _, tc := range []struct {
		name string
		xs   []float64
		p    float64
		want float64
	}{
		{"p50 of 10 is the 5th", ten, 50, 5},
		{"p90 of 10 is the 9th", ten, 90, 9},
		{"p99 of 10 is the slowest", ten, 99, 10},
		{"p100 is the max", ten, 100, 10},
		{"one value", []float64{0.7}, 99, 0.7},
		{"p99 of 110 is the 109th", seq(110), 99, 109},
		{"p50 of 3", []float64{3, 1, 2}, 50, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.xs, tc.p); got != tc.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tc.xs, tc.p, got, tc.want)
			}
		})
	}
	if got := percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("percentile of nothing = %v, want NaN", got)
	}
	if ten[0] != 10 {
		t.Errorf("percentile sorted its input: %v", ten)
	}
}

func seq(n int) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = float64(n - i)
	}
	return xs
}

func TestMedian(t *testing.T) {
	for _, tc := range []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{math.NaN(), 5, 1}, 3},
		{[]float64{7}, 7},
	} {
		if got := median(tc.xs); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.xs, got, tc.want)
		}
	}
	if got := median([]float64{math.NaN()}); !math.IsNaN(got) {
		t.Errorf("median of NaN only = %v, want NaN", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stat    string
		want    float64
		wantErr string
	}{
		{"plain", "1234 (actorlet) S 1 1234 1234 0 -1 4194560 2000 0 0 0 250 130 0 0 20 0 12 0 100 0 0\n", 3.8, ""},
		{"command with spaces and parens", "77 (a b) c)) R 1 77 77 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5\n", 0.1, ""},
		{"truncated", "1 (x) S 1 2 3", 0, "fields after the command name"},
		{"no command", "garbage", 0, "no ')'"},
		{"bad utime", "1 (x) S 1 1 1 0 -1 0 0 0 0 0 x 1 0 0 20 0 1 0 5", 0, "utime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatCPU([]byte(tc.stat))
			if testutil.WantErr(t, err, tc.wantErr) {
				return
			}
			if math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("CPU = %v s, want %v s", got, tc.want)
			}
		})
	}
}

func TestParseStatusMemory(t *testing.T) {
	status := "Name:\tactorlet\nVmPeak:\t 1000 kB\nVmHWM:\t   40960 kB\nVmRSS:\t   20480 kB\n" +
		"RssAnon:\t   12288 kB\nRssFile:\t    8192 kB\nRssShmem:\t       0 kB\nThreads:\t9\n"
	m, err := parseStatusMemory([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	if want := (memory{RSS: 20 << 20, HWM: 40 << 20, Anon: 12 << 20, File: 8 << 20}); m != want {
		t.Errorf("memory = %+v, want %+v", m, want)
	}
	for _, bad := range []string{"Name:\tkthreadd\n", "VmHWM:\t1 MB\nVmRSS:\t1 kB\n"} {
		if _, err := parseStatusMemory([]byte(bad)); err == nil {
			t.Errorf("parseStatusMemory(%q): no error", bad)
		}
	}
}

func TestParseMetrics(t *testing.T) {
	text := `# HELP go_goroutines Number of goroutines.
# TYPE go_goroutines gauge
go_goroutines 57
go_memstats_heap_inuse_bytes 1.2e+07
actorlet_actors{kind="pod-worker"} 20
actorlet_actors{kind="a }\" weird"} 3 1700000000000
`
	m, err := parseMetrics(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]float64{"go_goroutines": 57, "go_memstats_heap_inuse_bytes": 1.2e7, "actorlet_actors": 23} {
		if m[name] != want {
			t.Errorf("%s = %v, want %v", name, m[name], want)
		}
	}
	if _, err := parseMetrics(strings.NewReader(`x{a="b" 1`)); err == nil {
		t.Error("unterminated labels: no error")
	}
}

func TestMainTable(t *testing.T) {
	s := sizeResult{N: 10,
		Floor: []floorRun{
			{N: 10, Latencies: []float64{0.5, 0.6}, AllRunning: 0.7, AllRemoved: 1.5},
			{N: 10, Latencies: []float64{0.4, 0.8}, AllRunning: 0.9, AllRemoved: 1.7},
		},
		Actorlet: []nodeRun{
			{N: 10, Ready: 10, Latencies: []float64{0.9, 1.0}, GoneAPI: 2, GoneCRI: 1.8, IdleRSS: 20 << 20, IdleAnon: 10 << 20,
				Actorlet: usage{CPUSeconds: 0.5, PeakRSS: 40 << 20, PeakAnon: 30 << 20}},
			{N: 10, Ready: 9, Latencies: []float64{0.9, 1.4}, GoneAPI: 2.2, GoneCRI: 1.9, IdleRSS: 22 << 20, IdleAnon: 12 << 20,
				Actorlet: usage{CPUSeconds: 0.3, PeakRSS: 42 << 20, PeakAnon: 32 << 20}},
		},
	}
	rows := tableRows([]sizeResult{s})
	if len(rows) != 3 || rows[0].Label != "median" || rows[2].Label != "run 2" {
		t.Fatalf("rows = %+v, want the median then runs 1 and 2", rows)
	}
	med := rows[0]
	// Run 2 has a pod that never became Ready: its p99 is left out.
	if med.P99 != 1.0 || med.FloorAllRunning != 0.8 || math.Abs(med.Overhead-0.2) > 1e-9 {
		t.Errorf("median p99 %v, floor all-running %v, overhead %v; want 1.0, 0.8, +0.2", med.P99, med.FloorAllRunning, med.Overhead)
	}
	if math.Abs(med.CPUPerPod-0.04) > 1e-9 || med.PeakRSS != 41 || med.PeakAnon != 31 || med.IdleAnon != 11 {
		t.Errorf("median CPU/pod %v, peak VmRSS %v, peak RssAnon %v, idle RssAnon %v; want 0.04, 41, 31, 11", med.CPUPerPod, med.PeakRSS, med.PeakAnon, med.IdleAnon)
	}
	table := mainTable(rows)
	lines := strings.Split(strings.TrimSpace(table), "\n")
	if len(lines) != 5 {
		t.Fatalf("table has %d lines, want header, rule and 3 rows:\n%s", len(lines), table)
	}
	for _, l := range lines {
		if len([]rune(l)) != len([]rune(lines[0])) {
			t.Errorf("lines of unequal width:\n%s", table)
			break
		}
	}
	for _, want := range []string{"| 10 | median |", "+0.20", "9/10 Ready", "0.040", "41.0"} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
}

func TestTargets(t *testing.T) {
	for _, tc := range []struct {
		value, limit float64
		want         string
	}{
		{1.0, 1.25, "met"},
		{1.5, 1.25, "missed by 0.25s"},
		{math.NaN(), 1, "not measured"},
	} {
		if got := atMost("x", tc.value, tc.limit, "s", 2); got.Status != tc.want {
			t.Errorf("atMost(%v, %v) = %q, want %q", tc.value, tc.limit, got.Status, tc.want)
		}
	}
	c := &churnResult{LoopCount: 3, Loops: []churnLoop{{RSS: 100, RSSAnon: 100}, {RSS: 100, RSSAnon: 100}, {RSS: 300, RSSAnon: 115}}}
	ts := churnTargets(c)
	if !ts[0].Met || ts[1].Met || ts[1].Status != "missed by 5.0%" {
		t.Errorf("churn targets = %+v, want nothing left met and RssAnon +15%% (VmRSS ignored) missed by 5%%", ts)
	}
}

func TestParseProcStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat  string
		busy, total uint64
		wantErr     bool
	}{
		{"all fields", "cpu  100 5 50 800 40 3 2 1 7 0\ncpu0 1 2 3 4\n", 161, 1001, false},
		{"old kernel, four fields", "cpu 10 0 10 80\n", 20, 100, false},
		{"not the cpu line", "intr 1 2 3 4 5\n", 0, 0, true},
		{"bad number", "cpu 10 x 10 80\n", 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			busy, total, err := parseProcStatCPU(tc.stat)
			if (err != nil) != tc.wantErr || busy != tc.busy || total != tc.total {
				t.Errorf("parseProcStatCPU = %d, %d, %v; want %d, %d, error %v", busy, total, err, tc.busy, tc.total, tc.wantErr)
			}
		})
	}
}

func TestDefaultResultsDir(t *testing.T) {
	defer func(p, s bool) { withProbes, saToken = p, s }(withProbes, saToken)
	for _, tc := range []struct {
		name          string
		o             options
		probes, token bool
		want          string
	}{
		{name: "pod counts", want: "/repo/results/bench/pods"},
		{name: "churn", o: options{churn: true}, want: "/repo/results/bench/churn"},
		{name: "probes", probes: true, want: "/repo/results/bench/probes"},
		{name: "service-account token", token: true, want: "/repo/results/bench/sa-token"},
		{name: "both", probes: true, token: true, want: "/repo/results/bench/probes-sa-token"},
		{name: "another binary", o: options{binary: "/tmp/actorlet-before"}, want: "/repo/results/tmp/bench/pods"},
		{name: "another configuration", o: options{churn: true, agent: agentOptions{extraConfig: "kubeAPIQPS: 100"}}, want: "/repo/results/tmp/bench/churn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withProbes, saToken = tc.probes, tc.token
			if got := defaultResultsDir("/repo", tc.o); got != tc.want {
				t.Fatalf("got %s, want %s", got, tc.want)
			}
		})
	}
}
