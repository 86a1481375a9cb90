package chaos

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// sampler is the client of the agent's listeners: without keep-alive, so
// that the samples leave no idle connection (a goroutine and a descriptor
// in the agent) behind to be counted by the next.
var sampler = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// AgentSample is what a node agent holds at one moment: the figures a
// churn must not make grow. Those it did not serve are -1.
type AgentSample struct {
	// RssAnonKiB is the process's anonymous resident memory (heap, stacks):
	// what leaks, unlike the file-backed pages of its binary.
	RssAnonKiB int64
	// FDs counts the process's open file descriptors.
	FDs int
	// Goroutines is go_goroutines from its /metrics; HeapInuse
	// go_memstats_heap_inuse_bytes, the heap's part of RssAnon without the
	// pages freed and not yet returned.
	Goroutines float64
	HeapInuse  float64
	// Actors is actorlet_actors summed over kinds, and by kind; the
	// upstream kubelet has none (-1, nil).
	Actors       float64
	ActorsByKind map[string]float64
}

// SampleAgent reads pid's memory and descriptors from /proc and scrapes
// metricsURL (the read-only port's /metrics) for the rest.
func SampleAgent(pid int, metricsURL string) (AgentSample, error) {
	s := AgentSample{Goroutines: -1, HeapInuse: -1, Actors: -1}
	st, err := ProcStatus(pid, "RssAnon")
	if err != nil {
		return s, err
	}
	s.RssAnonKiB = st["RssAnon"]
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.FDs = len(fds)
	families, err := ScrapeMetrics(metricsURL)
	if err != nil {
		return s, err
	}
	if f, ok := families["go_goroutines"]; ok && len(f.Metric) > 0 {
		s.Goroutines = f.Metric[0].GetGauge().GetValue()
	}
	if f, ok := families["go_memstats_heap_inuse_bytes"]; ok && len(f.Metric) > 0 {
		s.HeapInuse = f.Metric[0].GetGauge().GetValue()
	}
	if f, ok := families["actorlet_actors"]; ok {
		s.Actors, s.ActorsByKind = 0, map[string]float64{}
		for _, m := range f.Metric {
			kind := ""
			for _, l := range m.Label {
				if l.GetName() == "kind" {
					kind = l.GetValue()
				}
			}
			v := m.GetGauge().GetValue()
			s.Actors += v
			s.ActorsByKind[kind] += v
		}
	}
	return s, nil
}

// ScrapeMetrics GETs a Prometheus text exposition and parses it by metric
// family.
func ScrapeMetrics(url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := sampler.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return families, nil
}

// ActorsAbove names the kinds of which now has more actors than base, with
// both counts; empty when none has.
func ActorsAbove(now, base map[string]float64) string {
	var out []string
	for kind, n := range now {
		if n > base[kind] {
			out = append(out, fmt.Sprintf("%s %g (was %g)", kind, n, base[kind]))
		}
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// Median is the median of xs (the mean of the middle two of an even
// count); 0 for none.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Slope is the least-squares slope of ys against their index: a figure's
// trend per loop; 0 for fewer than two.
func Slope(ys []float64) float64 {
	n := float64(len(ys))
	if n < 2 {
		return 0
	}
	var sx, sy, sxx, sxy float64
	for i, y := range ys {
		x := float64(i)
		sx, sy, sxx, sxy = sx+x, sy+y, sxx+x*x, sxy+x*y
	}
	return (n*sxy - sx*sy) / (n*sxx - sx*sx)
}

// Growth is the allowed growth of a figure from ref: the larger of frac of
// ref and floor.
func Growth(ref, frac, floor float64) float64 { return max(ref*frac, floor) }

// GoroutineDump reads the goroutine profile of a debug listener in its
// text form (debug=1) into the count of goroutines by stack, each stack
// named by its functions, innermost first.
func GoroutineDump(debugAddr string) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	url := "http://" + debugAddr + "/debug/pprof/goroutine?debug=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := sampler.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return parseGoroutineDump(resp.Body)
}

// parseGoroutineDump parses pprof's debug=1 goroutine profile: records of
// "N @ 0x… 0x…" followed by "#\t0x…\tfunction+0x…\tfile:line" lines.
func parseGoroutineDump(r io.Reader) (map[string]int, error) {
	out := map[string]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	count := 0
	var frames []string
	flush := func() {
		if count > 0 {
			out[strings.Join(frames, " < ")] += count
		}
		count, frames = 0, nil
	}
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.Contains(line, " @ 0x"):
			flush()
			n, err := strconv.Atoi(strings.Fields(line)[0])
			if err != nil {
				return nil, fmt.Errorf("goroutine record %q: %w", line, err)
			}
			count = n
		case strings.HasPrefix(line, "#\t"):
			f := strings.Fields(line)
			if len(f) >= 3 {
				fn := f[2]
				if i := strings.LastIndex(fn, "+0x"); i > 0 {
					fn = fn[:i]
				}
				frames = append(frames, fn)
			}
		case strings.TrimSpace(line) == "":
			flush()
		}
	}
	flush()
	return out, sc.Err()
}

// DumpGrowth lists the stacks with more goroutines in after than in
// before, the largest growth first, at most n.
func DumpGrowth(before, after map[string]int, n int) []string {
	type grown struct {
		stack string
		by    int
	}
	var gs []grown
	for stack, c := range after {
		if d := c - before[stack]; d > 0 {
			gs = append(gs, grown{stack, d})
		}
	}
	sort.Slice(gs, func(i, j int) bool {
		if gs[i].by != gs[j].by {
			return gs[i].by > gs[j].by
		}
		return gs[i].stack < gs[j].stack
	})
	var out []string
	for i, g := range gs {
		if i == n {
			break
		}
		out = append(out, fmt.Sprintf("+%d %s", g.by, g.stack))
	}
	return out
}

// PodLeftovers names what the node's root directory and /var/log/pods
// still hold of the namespace ns's pods: pod directories (ROOT/pods/UID:
// after the churn no pod of the node is left, so any is) and the mounts
// under them, and the namespace's log directories (NS_NAME_UID).
func PodLeftovers(rootDir, ns string, mounts []string) []string {
	var out []string
	podDirs, _ := filepath.Glob(filepath.Join(rootDir, "pods", "*"))
	for _, d := range podDirs {
		out = append(out, "pod directory "+d)
	}
	for _, m := range mounts {
		if strings.HasPrefix(m, filepath.Join(rootDir, "pods")+"/") {
			out = append(out, "mount "+m)
		}
	}
	logDirs, _ := filepath.Glob(filepath.Join("/var/log/pods", ns+"_*"))
	for _, d := range logDirs {
		out = append(out, "log directory "+d)
	}
	return out
}

// HeapProfile writes the heap profile of a debug listener, taken after a
// garbage collection (gc=1), to file: what is live, for go tool pprof
// -base between two loops.
func HeapProfile(debugAddr, file string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "http://" + debugAddr + "/debug/pprof/heap?gc=1"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := sampler.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
