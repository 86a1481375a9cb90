package main

import (
	"fmt"
	"math"
	"strings"
)

// target is one of issue #8's targets, checked against this invocation's
// figures.
type target struct {
	Target string `json:"target"`
	// Value is what was measured, Limit what the target allows.
	Value string `json:"value"`
	Limit string `json:"limit"`
	// Status is "met", "missed by …" or "not measured".
	Status string `json:"status"`
	Met    bool   `json:"met"`
}

// latencySlack is the allowance over the floor's all-running, by N.
var latencySlack = map[int]float64{10: 0.25, 30: 0.4, 60: 0.6}

const (
	maxCPUPerPod      = 0.02 // CPU-s per pod, start and delete together
	maxPeakAnon110    = 55   // MiB of RssAnon at N = 110
	maxIdleAnon       = 30   // MiB of RssAnon
	maxGoneOverFloor  = 1.0  // s over the floor's all-removed
	maxChurnRSSGrowth = 0.10 // loop 20 against loop 2
)

// atMost checks value ≤ limit; NaN on either side is "not measured".
func atMost(name string, value, limit float64, unit string, prec int) target {
	t := target{Target: name, Value: withUnit(value, prec, unit), Limit: "≤ " + withUnit(limit, prec, unit)}
	switch {
	case math.IsNaN(value) || math.IsNaN(limit):
		t.Status = "not measured"
	case value <= limit:
		t.Status, t.Met = "met", true
	default:
		t.Status = fmt.Sprintf("missed by %s%s", num(value-limit, prec), unit)
	}
	return t
}

// checkTargets compares the medians of each N, and the churn, with the
// issue's targets. Ns the invocation did not run are left out.
func checkTargets(sizes []sizeResult, churn *churnResult) []target {
	var out []target
	medians := map[int]row{}
	for _, r := range tableRows(sizes) {
		if r.Label == "median" {
			medians[r.N] = r
		}
	}
	for _, n := range []int{10, 30, 60} {
		if m, ok := medians[n]; ok {
			out = append(out, atMost(fmt.Sprintf("N=%d: actorlet p99 ≤ floor all-running + %.2fs", n, latencySlack[n]),
				m.P99, m.FloorAllRunning+latencySlack[n], "s", 2))
		}
	}
	for _, s := range sizes {
		m := medians[s.N]
		out = append(out, atMost(fmt.Sprintf("N=%d: actorlet CPU per pod (start and delete)", s.N), m.CPUPerPod, maxCPUPerPod, " CPU-s", 3))
	}
	if m, ok := medians[110]; ok {
		out = append(out, atMost("N=110: actorlet peak RssAnon", m.PeakAnon, maxPeakAnon110, " MiB", 1))
	}
	idle := math.NaN()
	for _, m := range medians {
		if !math.IsNaN(m.IdleAnon) && (math.IsNaN(idle) || m.IdleAnon > idle) {
			idle = m.IdleAnon
		}
	}
	if len(medians) > 0 {
		out = append(out, atMost("idle RssAnon with no pods (largest median over N)", idle, maxIdleAnon, " MiB", 1))
	}
	for _, s := range sizes {
		m := medians[s.N]
		out = append(out, atMost(fmt.Sprintf("N=%d: all gone from the API ≤ floor all-removed + %.1fs", s.N, maxGoneOverFloor),
			m.GoneAPI, m.FloorAllRemoved+maxGoneOverFloor, "s", 2))
	}
	for _, s := range sizes {
		if s.N == 110 && len(s.Actorlet) > 0 {
			out = append(out, allReady(s))
		}
	}
	if churn != nil {
		out = append(out, churnTargets(churn)...)
	}
	return out
}

// allReady checks that every run of N=110 got all its pods Ready.
func allReady(s sizeResult) target {
	least := s.N
	for _, a := range s.Actorlet {
		least = min(least, a.Ready)
	}
	t := target{Target: fmt.Sprintf("N=%d: all pods Ready in every run", s.N),
		Value: fmt.Sprintf("%d (fewest in a run)", least), Limit: fmt.Sprint(s.N)}
	if least == s.N {
		t.Status, t.Met = "met", true
	} else {
		t.Status = fmt.Sprintf("missed by %d pods", s.N-least)
	}
	return t
}

func churnTargets(c *churnResult) []target {
	left := c.Left.Sandboxes + c.Left.Containers
	t := target{Target: "churn: sandboxes and containers left behind", Value: fmt.Sprintf("%d sandboxes, %d containers", c.Left.Sandboxes, c.Left.Containers), Limit: "0"}
	if left == 0 && len(c.Loops) == c.LoopCount {
		t.Status, t.Met = "met", true
	} else if left > 0 {
		t.Status = fmt.Sprintf("missed by %d", left)
	} else {
		t.Status = fmt.Sprintf("not measured (%d of %d loops ran)", len(c.Loops), c.LoopCount)
	}
	out := []target{t}
	growth := math.NaN()
	if len(c.Loops) >= 2 && c.Loops[1].RSSAnon > 0 {
		growth = float64(c.Loops[len(c.Loops)-1].RSSAnon)/float64(c.Loops[1].RSSAnon) - 1
	}
	g := atMost(fmt.Sprintf("churn: RssAnon after loop %d within %.0f%% of loop 2", c.LoopCount, maxChurnRSSGrowth*100), growth*100, maxChurnRSSGrowth*100, "%", 1)
	if len(c.Loops) != c.LoopCount {
		g.Status, g.Met = fmt.Sprintf("not measured (%d of %d loops ran)", len(c.Loops), c.LoopCount), false
	}
	return append(out, g)
}

func withUnit(x float64, prec int, unit string) string {
	if math.IsNaN(x) {
		return "-"
	}
	return num(x, prec) + unit
}

func targetLines(ts []target) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "- %s: %s (target %s) — %s\n", t.Target, t.Value, t.Limit, t.Status)
	}
	return b.String()
}
