package chaos

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Scenario is one scenario's run: its figures and the targets they are
// held against. Begin makes one; the test's end completes it.
type Scenario struct {
	Name    string   `json:"name"`
	Title   string   `json:"title"`
	Mode    string   `json:"mode"`
	Passed  bool     `json:"passed"`
	Seconds float64  `json:"seconds"`
	Figures []Figure `json:"figures"`
	Targets []Target `json:"targets"`
	Notes   []string `json:"notes,omitempty"`

	t     testing.TB
	start time.Time
	mu    sync.Mutex
}

// Figure is one measured value.
type Figure struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Unit  string  `json:"unit,omitempty"`
}

// Target is a figure held against what the issue allows.
type Target struct {
	Target string `json:"target"`
	Value  string `json:"value"`
	Limit  string `json:"limit"`
	Met    bool   `json:"met"`
}

var report struct {
	mu        sync.Mutex
	scenarios []*Scenario
}

// Begin starts recording the scenario name (a short identifier, as in
// docs/reliability.md) with its title; the test's cleanup completes it.
func Begin(t testing.TB, name, title string) *Scenario {
	s := &Scenario{Name: name, Title: title, Mode: Mode(), t: t, start: time.Now()}
	report.mu.Lock()
	report.scenarios = append(report.scenarios, s)
	report.mu.Unlock()
	t.Cleanup(func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.Seconds = math.Round(time.Since(s.start).Seconds()*10) / 10
		s.Passed = !t.Failed()
	})
	return s
}

// Figure records a measured value; a second one of the same name replaces
// the first.
func (s *Scenario) Figure(name string, value float64, unit string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.Figures {
		if s.Figures[i].Name == name {
			s.Figures[i] = Figure{name, value, unit}
			return
		}
	}
	s.Figures = append(s.Figures, Figure{name, value, unit})
	s.t.Logf("figure: %s = %s", name, withUnit(value, unit))
}

// Note records a line of what the scenario saw, for the report.
func (s *Scenario) Note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	s.mu.Lock()
	s.Notes = append(s.Notes, line)
	s.mu.Unlock()
	s.t.Logf("note: %s", line)
}

// AtMost records the figure and the target value ≤ limit.
func (s *Scenario) AtMost(name string, value, limit float64, unit string) bool {
	return s.target(name, value, unit, "≤ "+withUnit(limit, unit), value <= limit)
}

// AtLeast records the figure and the target value ≥ limit.
func (s *Scenario) AtLeast(name string, value, limit float64, unit string) bool {
	return s.target(name, value, unit, "≥ "+withUnit(limit, unit), value >= limit)
}

// Check records a target that is not a number (e.g. "node stayed Ready"):
// what was seen and whether it holds.
func (s *Scenario) Check(name string, met bool, seen string) bool {
	s.mu.Lock()
	s.Targets = append(s.Targets, Target{Target: name, Value: seen, Limit: "holds", Met: met})
	s.mu.Unlock()
	return s.verdict(name, met, seen)
}

func (s *Scenario) target(name string, value float64, unit, limit string, met bool) bool {
	s.Figure(name, value, unit)
	s.mu.Lock()
	s.Targets = append(s.Targets, Target{Target: name, Value: withUnit(value, unit), Limit: limit, Met: met})
	s.mu.Unlock()
	return s.verdict(name, met, withUnit(value, unit)+", want "+limit)
}

// verdict fails actorlet's test on a missed target; the upstream kubelet's
// is only logged: its figures are the comparison.
func (s *Scenario) verdict(name string, met bool, seen string) bool {
	if met {
		return true
	}
	s.t.Helper()
	if Agent.Upstream {
		s.t.Logf("target missed (recorded): %s: %s", name, seen)
	} else {
		s.t.Errorf("target missed: %s: %s", name, seen)
	}
	return false
}

func withUnit(v float64, unit string) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 10 || v != math.Trunc(v) {
		s = strconv.FormatFloat(math.Round(v*100)/100, 'f', -1, 64)
	}
	if unit == "" {
		return s
	}
	return s + " " + unit
}

// results is what results.json holds.
type results struct {
	Date      string      `json:"date"`
	Commit    string      `json:"commit"`
	Agent     string      `json:"agent"`
	Binary    string      `json:"binary"`
	Mode      string      `json:"mode"`
	CPUs      int         `json:"cpus"`
	GoVersion string      `json:"goVersion"`
	Scenarios []*Scenario `json:"scenarios"`
}

// writeReport prints the table of every scenario run to w and, with dir,
// writes report.txt and results.json to dir/AGENT/, replacing the last
// run's: the latest run of each agent is the one the docs link, and git
// keeps the ones before.
func writeReport(w io.Writer, dir string) error {
	report.mu.Lock()
	defer report.mu.Unlock()
	if len(report.scenarios) == 0 {
		return nil
	}
	r := results{Date: time.Now().UTC().Format(time.RFC3339), Commit: startCommit, Agent: Agent.Name,
		Binary: Agent.Binary, Mode: Mode(), CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), Scenarios: report.scenarios}
	var b strings.Builder
	table(&b, r)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	if dir == "" {
		return nil
	}
	out := filepath.Join(dir, r.Agent)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "report.txt"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(w, "report: %s\n", out)
	return nil
}

// table writes the report: per scenario its figures, then its targets.
func table(b *strings.Builder, r results) {
	fmt.Fprintf(b, "\nchaos: %s (%s), %s suite, commit %s, %s\n", r.Agent, r.Binary, r.Mode, r.Commit, r.Date)
	met, all := 0, 0
	for _, s := range r.Scenarios {
		verdict := "passed"
		if !s.Passed {
			verdict = "FAILED"
		}
		fmt.Fprintf(b, "\n%s: %s (%s, %.0f s)\n", s.Name, s.Title, verdict, s.Seconds)
		for _, f := range s.Figures {
			fmt.Fprintf(b, "  %-58s %s\n", f.Name, withUnit(f.Value, f.Unit))
		}
		for _, t := range s.Targets {
			all++
			mark := "met"
			if t.Met {
				met++
			} else {
				mark = "MISSED"
			}
			fmt.Fprintf(b, "  target %-51s %s (%s): %s\n", t.Target, t.Value, t.Limit, mark)
		}
		for _, n := range s.Notes {
			fmt.Fprintf(b, "  note: %s\n", n)
		}
	}
	fmt.Fprintf(b, "\n%d of %d targets met\n", met, all)
}

// startCommit is the checkout's commit when the suite started, which the
// agent under test was built from: a run takes over an hour, and the
// checkout may move meanwhile.
var startCommit = commit()

// commit is the checkout's commit, with "+dirty" when it has changes.
func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty=+dirty", "--abbrev=12").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}
