package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
)

// churnResult is the churn benchmark: one actorlet, pods created and
// deleted through the API in loops, so that what each pod leaves behind
// (goroutines, actors, metric series, cache entries) shows as growth.
type churnResult struct {
	PodCount  int `json:"pods"`
	LoopCount int `json:"loops"`
	// IdleRSS: actorlet's VmRSS once Ready, before the first loop, and
	// its anonymous and file-backed parts.
	IdleRSS  int64       `json:"idleRSSBytes"`
	IdleAnon int64       `json:"idleRSSAnonBytes"`
	IdleFile int64       `json:"idleRSSFileBytes"`
	Loops    []churnLoop `json:"loopResults"`
	// Left: what the runtime holds of the churn's pods at the end.
	Left   runtimeObjects `json:"leftInRuntime"`
	Errors []string       `json:"errors,omitempty"`
}

// churnLoop is actorlet's state after one loop, once all its pods are gone.
// Figures from actorlet's /metrics are -1 when it did not serve them.
type churnLoop struct {
	Loop       int     `json:"loop"`
	AllReady   float64 `json:"allReadySeconds"`
	GoneAPI    float64 `json:"goneAPISeconds"`
	RSS        int64   `json:"rssBytes"`
	RSSAnon    int64   `json:"rssAnonBytes"`
	Goroutines float64 `json:"goroutines"`
	Actors     float64 `json:"actors"`
	HeapInuse  float64 `json:"heapInuseBytes"`
	// Left: the loop's sandboxes and containers still in the runtime.
	Left runtimeObjects `json:"leftInRuntime"`
}

// churnSettle is how long actorlet idles after a loop before it is read:
// the last pods' removal and status writes are over by then.
const churnSettle = time.Second

func (b *nodeBench) churn(ctx context.Context, pods, loops int) (res *churnResult, err error) {
	res = &churnResult{PodCount: pods, LoopCount: loops}
	defer func() {
		if err != nil {
			res.Errors = append(res.Errors, err.Error())
		}
	}()
	ns, err := createNamespace(ctx, b.admin, "bench-churn-")
	if ns != "" {
		defer b.cleanupNamespace(ns)
	}
	if err != nil {
		return res, err
	}
	agent, err := startNode(b.binary, b.agent, b.env, filepath.Join(b.logDir, "churn.log"), true)
	if err != nil {
		return res, err
	}
	defer func() {
		if err := agent.stop(); err != nil {
			b.logf("%v", err)
		}
	}()
	if err := agent.waitReady(ctx, b.admin, b.env.NodeName, time.Minute); err != nil {
		return res, err
	}
	idle, err := agent.idleMemory(ctx)
	if err != nil {
		return res, err
	}
	res.IdleRSS, res.IdleAnon, res.IdleFile = idle.RSS, idle.Anon, idle.File
	tracker, err := trackPods(ctx, b.admin, ns)
	if err != nil {
		return res, err
	}
	defer tracker.close()
	metricsURL := fmt.Sprintf("http://127.0.0.1:%d/metrics", agent.readOnly)
	within := 2*time.Minute + time.Duration(pods)*2*time.Second

	for loop := 1; loop <= loops; loop++ {
		l := churnLoop{Loop: loop}
		batch := make([]*v1.Pod, pods)
		names := make([]string, pods)
		for i := range batch {
			// Names new in every loop: state kept by name shows as growth.
			batch[i] = benchPod(ns, fmt.Sprintf("l%02d-p%02d", loop, i), b.env.NodeName, b.env.BusyboxImage)
			names[i] = batch[i].Name
		}
		start := time.Now()
		if _, err := createPods(ctx, b.admin, batch); err != nil {
			return res, err
		}
		if err := tracker.waitFor(ctx, fmt.Sprintf("loop %d: %d pods Ready", loop, pods), within, func() bool {
			r, _ := tracker.counts()
			return r == loop*pods
		}); err != nil {
			return res, err
		}
		l.AllReady = time.Since(start).Seconds()
		delStart := time.Now()
		if err := deletePods(ctx, b.admin, ns, names); err != nil {
			return res, err
		}
		if err := tracker.waitFor(ctx, fmt.Sprintf("loop %d: %d pods DELETED", loop, pods), within, func() bool {
			_, d := tracker.counts()
			return d == loop*pods
		}); err != nil {
			return res, err
		}
		l.GoneAPI = time.Since(delStart).Seconds()
		if err := sleep(ctx, churnSettle); err != nil {
			return res, err
		}
		m, err := procMemory(agent.pid())
		if err != nil {
			return res, err
		}
		l.RSS, l.RSSAnon = m.RSS, m.Anon
		l.Goroutines, l.Actors, l.HeapInuse = -1, -1, -1
		if mm, err := scrapeMetrics(ctx, metricsURL); err != nil {
			b.logf("churn loop %d: %v", loop, err)
		} else {
			l.Goroutines, l.Actors, l.HeapInuse = lookup(mm, "go_goroutines"), lookup(mm, "actorlet_actors"), lookup(mm, "go_memstats_heap_inuse_bytes")
		}
		if l.Left, err = countRuntime(ctx, b.rt, ns); err != nil {
			return res, err
		}
		res.Loops = append(res.Loops, l)
		b.logf("churn loop %2d: ready %.2fs, gone %.2fs, RSS %.1f MiB, goroutines %.0f, actors %.0f, left %d sandboxes %d containers",
			loop, l.AllReady, l.GoneAPI, toMiB(l.RSS), l.Goroutines, l.Actors, l.Left.Sandboxes, l.Left.Containers)
	}
	res.Left, err = countRuntime(ctx, b.rt, ns)
	return res, err
}

func lookup(m map[string]float64, name string) float64 {
	if v, ok := m[name]; ok {
		return v
	}
	return -1
}

// scrapeMetrics reads a Prometheus text exposition into the sum of each
// metric's series by name.
func scrapeMetrics(ctx context.Context, url string) (map[string]float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	m, err := parseMetrics(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("scrape %s: %w", url, err)
	}
	return m, nil
}

// parseMetrics sums the samples of each metric name of a Prometheus text
// exposition ("name{labels} value [timestamp]"); comments are skipped.
func parseMetrics(r io.Reader) (map[string]float64, error) {
	out := map[string]float64{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name, rest := line, ""
		if i := strings.IndexAny(line, "{ "); i >= 0 {
			name, rest = line[:i], line[i:]
		}
		if strings.HasPrefix(rest, "{") {
			// Label values may hold spaces and '}', but never an
			// unescaped '"' before the closing brace.
			end := labelsEnd(rest)
			if end < 0 {
				return nil, fmt.Errorf("unterminated labels in %q", line)
			}
			rest = rest[end+1:]
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			return nil, fmt.Errorf("no value in %q", line)
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			return nil, fmt.Errorf("value of %q: %w", line, err)
		}
		out[name] += v
	}
	return out, sc.Err()
}

// labelsEnd is the index of the '}' closing the label set that s starts
// with, skipping quoted values; -1 if there is none.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}
	return -1
}

// churnTable prints RSS and the other figures after each loop.
func churnTable(c *churnResult) string {
	header := []string{"loop", "all Ready s", "all gone (API) s", "RSS MiB", "anon RSS MiB", "heap in use MiB", "goroutines", "actors", "left sandboxes", "left containers"}
	var cells [][]string
	metric := func(x float64, scale float64, prec int) string {
		if x < 0 {
			return "-"
		}
		return num(x/scale, prec)
	}
	for _, l := range c.Loops {
		cells = append(cells, []string{fmt.Sprint(l.Loop), sec(l.AllReady), sec(l.GoneAPI), num(toMiB(l.RSS), 1), num(toMiB(l.RSSAnon), 1),
			metric(l.HeapInuse, mib, 1), metric(l.Goroutines, 1, 0), metric(l.Actors, 1, 0),
			fmt.Sprint(l.Left.Sandboxes), fmt.Sprint(l.Left.Containers)})
	}
	return fmt.Sprintf("Churn: %d pods created and deleted %d times through the API, one actorlet (idle RSS %.1f MiB: %.1f anonymous, %.1f file-backed).\n\n%s\nLeft in the runtime at the end: %d sandboxes, %d containers.\n",
		c.PodCount, c.LoopCount, toMiB(c.IdleRSS), toMiB(c.IdleAnon), toMiB(c.IdleFile), markdownTable(header, cells), c.Left.Sandboxes, c.Left.Containers)
}
