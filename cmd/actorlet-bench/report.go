package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// results is everything one invocation measured; it is written as JSON.
type results struct {
	Date    string       `json:"date"`
	Host    host         `json:"host"`
	Binary  string       `json:"binary"`
	Runs    int          `json:"runs"`
	Only    string       `json:"only,omitempty"`
	Sizes   []sizeResult `json:"sizes,omitempty"`
	Churn   *churnResult `json:"churn,omitempty"`
	Targets []target     `json:"targets,omitempty"`
}

type host struct {
	CPUs      int    `json:"cpus"`
	Kernel    string `json:"kernel"`
	GoVersion string `json:"goVersion"`
	// OtherPods: pods of other namespaces bound to the node at the start;
	// actorlet runs them too, so they would weigh on its figures.
	OtherPods int `json:"otherPodsOnNode"`
}

// sizeResult holds the runs of one N.
type sizeResult struct {
	N        int        `json:"n"`
	Floor    []floorRun `json:"floor,omitempty"`
	Actorlet []nodeRun  `json:"actorlet,omitempty"`
}

// row is one line of the table: one run, or the medians of the runs. NaN
// is a figure not measured.
type row struct {
	N     int
	Label string

	FloorP50, FloorP99, FloorAllRunning, FloorAllRemoved float64
	P50, P90, P99, Max                                   float64
	// Overhead is actorlet's p99 − the floor's all-running: the issue's
	// targets compare these two.
	Overhead, GoneAPI, GoneCRI, CPUPerPod float64
	// PeakRSS and IdleRSS are VmRSS; PeakAnon and IdleAnon RssAnon, the
	// private memory the targets are checked against. MiB.
	PeakRSS, IdleRSS, PeakAnon, IdleAnon float64

	CtrdCPUFloor, CtrdCPUActorlet, CtrdPeakFloor, CtrdPeakActorlet float64
	Startup, LoadFloor, LoadActorlet                               float64
	Note                                                           string
}

func nan() float64 { return math.NaN() }

// runRow is the row of run i of s (either side may be missing).
func runRow(s sizeResult, i int) row {
	r := row{N: s.N, Label: fmt.Sprintf("run %d", i+1)}
	r.FloorP50, r.FloorP99, r.FloorAllRunning, r.FloorAllRemoved = nan(), nan(), nan(), nan()
	r.CtrdCPUFloor, r.CtrdPeakFloor, r.LoadFloor, r.LoadActorlet = nan(), nan(), nan(), nan()
	if i < len(s.Floor) {
		r.LoadFloor = s.Floor[i].Load1
	}
	if i < len(s.Actorlet) {
		r.LoadActorlet = s.Actorlet[i].Load1
	}
	if i < len(s.Floor) && len(s.Floor[i].Errors) == 0 {
		f := s.Floor[i]
		r.FloorP50, r.FloorP99 = percentile(f.Latencies, 50), percentile(f.Latencies, 99)
		r.FloorAllRunning, r.FloorAllRemoved = f.AllRunning, f.AllRemoved
		r.CtrdCPUFloor, r.CtrdPeakFloor = f.Containerd.CPUSeconds/float64(f.N), toMiB(f.Containerd.PeakRSS)
	}
	r.P50, r.P90, r.P99, r.Max = nan(), nan(), nan(), nan()
	r.GoneAPI, r.GoneCRI, r.CPUPerPod, r.PeakRSS, r.IdleRSS = nan(), nan(), nan(), nan(), nan()
	r.PeakAnon, r.IdleAnon = nan(), nan()
	r.CtrdCPUActorlet, r.CtrdPeakActorlet, r.Startup = nan(), nan(), nan()
	if i < len(s.Actorlet) {
		a := s.Actorlet[i]
		r.P50, r.P90, r.P99, r.Max = percentile(a.Latencies, 50), percentile(a.Latencies, 90), percentile(a.Latencies, 99), percentile(a.Latencies, 100)
		if a.Ready < a.N {
			// A p99 over the pods that made it would flatter the run.
			r.P99, r.Max = nan(), nan()
			r.Note = fmt.Sprintf("%d/%d Ready", a.Ready, a.N)
		}
		if a.Actorlet.CPUSeconds > 0 || a.GoneAPI > 0 {
			r.GoneAPI, r.GoneCRI = a.GoneAPI, a.GoneCRI
			r.CPUPerPod = a.Actorlet.CPUSeconds / float64(a.N)
			r.PeakRSS = toMiB(a.Actorlet.PeakRSS)
			if a.Actorlet.PeakAnon > 0 {
				r.PeakAnon = toMiB(a.Actorlet.PeakAnon)
			}
			r.CtrdCPUActorlet, r.CtrdPeakActorlet = a.Containerd.CPUSeconds/float64(a.N), toMiB(a.Containerd.PeakRSS)
		}
		if a.IdleRSS > 0 {
			r.IdleRSS, r.IdleAnon = toMiB(a.IdleRSS), toMiB(a.IdleAnon)
			r.Startup = a.StartupSeconds
		}
		if len(a.Errors) > 0 && r.Note == "" {
			r.Note = "failed"
		}
	}
	r.Overhead = r.P99 - r.FloorAllRunning
	return r
}

// medianRow is the median of each column over the runs. Its overhead is
// the median p99 − the median floor all-running, the figures the targets
// compare, not the median of the runs' overheads.
func medianRow(rows []row) row {
	m := row{Label: "median"}
	if len(rows) > 0 {
		m.N = rows[0].N
	}
	col := func(f func(r row) float64) float64 {
		xs := make([]float64, len(rows))
		for i, r := range rows {
			xs[i] = f(r)
		}
		return median(xs)
	}
	m.FloorP50 = col(func(r row) float64 { return r.FloorP50 })
	m.FloorP99 = col(func(r row) float64 { return r.FloorP99 })
	m.FloorAllRunning = col(func(r row) float64 { return r.FloorAllRunning })
	m.FloorAllRemoved = col(func(r row) float64 { return r.FloorAllRemoved })
	m.P50 = col(func(r row) float64 { return r.P50 })
	m.P90 = col(func(r row) float64 { return r.P90 })
	m.P99 = col(func(r row) float64 { return r.P99 })
	m.Max = col(func(r row) float64 { return r.Max })
	m.GoneAPI = col(func(r row) float64 { return r.GoneAPI })
	m.GoneCRI = col(func(r row) float64 { return r.GoneCRI })
	m.CPUPerPod = col(func(r row) float64 { return r.CPUPerPod })
	m.PeakRSS = col(func(r row) float64 { return r.PeakRSS })
	m.IdleRSS = col(func(r row) float64 { return r.IdleRSS })
	m.PeakAnon = col(func(r row) float64 { return r.PeakAnon })
	m.IdleAnon = col(func(r row) float64 { return r.IdleAnon })
	m.CtrdCPUFloor = col(func(r row) float64 { return r.CtrdCPUFloor })
	m.CtrdCPUActorlet = col(func(r row) float64 { return r.CtrdCPUActorlet })
	m.CtrdPeakFloor = col(func(r row) float64 { return r.CtrdPeakFloor })
	m.CtrdPeakActorlet = col(func(r row) float64 { return r.CtrdPeakActorlet })
	m.Startup = col(func(r row) float64 { return r.Startup })
	m.LoadFloor = col(func(r row) float64 { return r.LoadFloor })
	m.LoadActorlet = col(func(r row) float64 { return r.LoadActorlet })
	m.Overhead = m.P99 - m.FloorAllRunning
	return m
}

// rows are the table's lines for every N: the median first, then each run.
func tableRows(sizes []sizeResult) []row {
	var out []row
	for _, s := range sizes {
		runs := max(len(s.Floor), len(s.Actorlet))
		var rs []row
		for i := range runs {
			rs = append(rs, runRow(s, i))
		}
		out = append(out, medianRow(rs))
		out = append(out, rs...)
	}
	return out
}

// mainTable is the table: latencies in seconds, CPU in seconds per
// pod, memory in MiB.
func mainTable(rows []row) string {
	header := []string{"N", "", "floor p50", "floor p99", "floor all-running", "floor all-removed",
		"actorlet p50", "p90", "p99", "max", "overhead", "all-gone API", "all-gone CRI", "CPU-s/pod", "peak RssAnon", "peak VmRSS", "idle RssAnon", "idle VmRSS", "note"}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{nLabel(r), r.Label, sec(r.FloorP50), sec(r.FloorP99), sec(r.FloorAllRunning), sec(r.FloorAllRemoved),
			sec(r.P50), sec(r.P90), sec(r.P99), sec(r.Max), signed(r.Overhead), sec(r.GoneAPI), sec(r.GoneCRI),
			num(r.CPUPerPod, 3), num(r.PeakAnon, 1), num(r.PeakRSS, 1), num(r.IdleAnon, 1), num(r.IdleRSS, 1), r.Note})
	}
	return markdownTable(header, cells)
}

// containerdTable is the runtime's and the machine's side: containerd's
// CPU per pod and peak RSS with the floor and with actorlet, actorlet's
// start-up time, and the load average each side started under (the
// machine is shared).
func containerdTable(rows []row) string {
	header := []string{"N", "", "containerd CPU-s/pod floor", "containerd CPU-s/pod actorlet",
		"containerd peak RSS floor", "containerd peak RSS actorlet", "actorlet start → node Ready", "load1 floor", "load1 actorlet"}
	var cells [][]string
	for _, r := range rows {
		cells = append(cells, []string{nLabel(r), r.Label, num(r.CtrdCPUFloor, 3), num(r.CtrdCPUActorlet, 3),
			num(r.CtrdPeakFloor, 1), num(r.CtrdPeakActorlet, 1), sec(r.Startup), sec(r.LoadFloor), sec(r.LoadActorlet)})
	}
	return markdownTable(header, cells)
}

// nLabel prints N on the median row only, so that the runs read as its
// details.
func nLabel(r row) string {
	if r.Label == "median" {
		return fmt.Sprint(r.N)
	}
	return ""
}

func sec(x float64) string { return num(x, 2) }

func num(x float64, prec int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, x)
}

func signed(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%+.2f", x)
}

// markdownTable renders a table that reads in a terminal and pastes into
// docs/performance.md: columns padded to their widest cell, numbers
// right-aligned, text left-aligned.
func markdownTable(header []string, rows [][]string) string {
	width := make([]int, len(header))
	for i, h := range header {
		width[i] = len([]rune(h))
	}
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	line := func(cells []string, pad func(i int, c string) string) {
		b.WriteString("|")
		for i, c := range cells {
			b.WriteString(" " + pad(i, c) + " |")
		}
		b.WriteString("\n")
	}
	left := func(i int, c string) string { return c + strings.Repeat(" ", width[i]-len([]rune(c))) }
	right := func(i int, c string) string { return strings.Repeat(" ", width[i]-len([]rune(c))) + c }
	line(header, left)
	rule := make([]string, len(header))
	for i := range rule {
		rule[i] = strings.Repeat("-", width[i])
	}
	line(rule, left)
	for _, r := range rows {
		line(r, func(i int, c string) string {
			if numeric(c) {
				return right(i, c)
			}
			return left(i, c)
		})
	}
	return b.String()
}

// numeric tells cells that are right-aligned: numbers and "-" for none.
func numeric(c string) bool {
	if c == "-" {
		return true
	}
	_, err := strconv.ParseFloat(c, 64)
	return err == nil
}

// writeReport prints the tables, churn and targets to w.
func writeReport(w io.Writer, res *results) {
	runs := ""
	if len(res.Sizes) > 0 {
		runs = fmt.Sprintf(", %d run(s) per N", res.Runs)
	}
	fmt.Fprintf(w, "actorlet-bench %s, %d CPUs, kernel %s%s, actorlet %s\n\n", res.Date, res.Host.CPUs, res.Host.Kernel, runs, res.Binary)
	if res.Host.OtherPods > 0 {
		fmt.Fprintf(w, "warning: %d pods of other namespaces were bound to the node; actorlet ran them too\n\n", res.Host.OtherPods)
	}
	if len(res.Sizes) > 0 {
		rows := tableRows(res.Sizes)
		fmt.Fprintf(w, "Latencies in seconds; overhead = actorlet p99 − floor all-running; CPU-s/pod = actorlet's CPU from the first create to all gone / N; RSS in MiB.\n\n")
		fmt.Fprint(w, mainTable(rows))
		fmt.Fprintln(w)
		if anon, file := idleSplit(res.Sizes); !math.IsNaN(anon) {
			fmt.Fprintf(w, "Idle RSS, median of all runs: %.1f MiB anonymous (heap, stacks), %.1f MiB file-backed (the binary).\n\n", anon, file)
		}
		fmt.Fprint(w, containerdTable(rows))
		fmt.Fprintln(w)
		fmt.Fprint(w, probeHoldLines(res.Sizes))
	}
	if res.Churn != nil {
		fmt.Fprint(w, churnTable(res.Churn))
		fmt.Fprintln(w)
	}
	if len(res.Targets) > 0 {
		fmt.Fprintln(w, "Targets (issue #8, on the medians):")
		fmt.Fprint(w, targetLines(res.Targets))
	}
}

// idleSplit is the median anonymous and file-backed idle RSS over every
// actorlet run, in MiB.
func idleSplit(sizes []sizeResult) (anon, file float64) {
	var as, fs []float64
	for _, s := range sizes {
		for _, a := range s.Actorlet {
			if a.IdleRSS > 0 {
				as, fs = append(as, toMiB(a.IdleAnon)), append(fs, toMiB(a.IdleFile))
			}
		}
	}
	return median(as), median(fs)
}

func writeJSON(path string, res *results) error {
	raw, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return fmt.Errorf("encode results: %w", err)
	}
	if err := os.WriteFile(path, append(raw, '\n'), 0o644); err != nil {
		return fmt.Errorf("write results: %w", err)
	}
	return nil
}

// probeHoldLines reports, per N, the -probes hold: actorlet's CPU while
// every pod stayed Ready and probed, and the pod updates meanwhile.
func probeHoldLines(sizes []sizeResult) string {
	var b strings.Builder
	for _, s := range sizes {
		var cpu []float64
		updates := 0
		for _, r := range s.Actorlet {
			if r.ProbeHoldCPU > 0 {
				cpu = append(cpu, r.ProbeHoldCPU)
				updates += r.ProbeHoldUpdates
			}
		}
		if len(cpu) == 0 {
			continue
		}
		fmt.Fprintf(&b, "N=%d, every pod probed 3×/s for %s: actorlet %.3f CPU-s/s (median of %d runs), %d pod updates in all\n",
			s.N, probeHold, median(cpu), len(cpu), updates)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	return b.String()
}
