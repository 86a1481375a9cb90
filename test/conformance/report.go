package conformance

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"
)

// Result is the outcome of one spec.
type Result struct {
	Name string
	// State is ginkgo's: passed, failed, skipped, panicked, timedout,
	// interrupted, aborted; or "not run" for a selected spec that the
	// report does not have (not in this e2e binary, or the suite stopped).
	State   string
	Runtime time.Duration
	// Message is the failure's (or skip's) first line.
	Message string
}

// Passed tells whether the spec passed.
func (r Result) Passed() bool { return r.State == "passed" }

// Failed tells whether the spec counts as failed: anything but passed or
// skipped.
func (r Result) Failed() bool { return r.State != "passed" && r.State != "skipped" }

// ginkgoReport is the part of ginkgo's JSON report (types.Report) read here.
type ginkgoReport struct {
	SpecReports []struct {
		ContainerHierarchyTexts []string
		LeafNodeType            string
		LeafNodeText            string
		State                   string
		RunTime                 time.Duration
		Failure                 struct {
			Message string
		}
	}
}

// ReadReport reads ginkgo's JSON report and returns the results of the
// specs that were selected: those of want when it is not empty, in its
// order; else those that ran or were skipped while running (a spec that
// the focus filtered out is skipped without a message).
func ReadReport(path string, want []string) ([]Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	rs, err := parseReport(f, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return rs, nil
}

func parseReport(r io.Reader, want []string) ([]Result, error) {
	var reports []ginkgoReport
	if err := json.NewDecoder(r).Decode(&reports); err != nil {
		return nil, err
	}
	got := map[string]Result{}
	var order []string
	for _, rep := range reports {
		for _, s := range rep.SpecReports {
			if s.LeafNodeType != "It" {
				continue
			}
			name := strings.Join(append(append([]string{}, s.ContainerHierarchyTexts...), s.LeafNodeText), " ")
			res := Result{Name: name, State: s.State, Runtime: s.RunTime, Message: firstLine(s.Failure.Message)}
			if _, dup := got[name]; !dup {
				order = append(order, name)
			}
			got[name] = res
		}
	}
	var out []Result
	if len(want) > 0 {
		for _, name := range want {
			res, ok := got[name]
			switch {
			case !ok:
				res = Result{Name: name, State: "not run", Message: "not in the report: not a spec of this e2e binary"}
			case res.State == "skipped" && res.Message == "" && res.Runtime == 0:
				res = Result{Name: name, State: "not run", Message: "the focus did not select it, or the suite stopped before it"}
			}
			out = append(out, res)
		}
		return out, nil
	}
	for _, name := range order {
		res := got[name]
		if res.State == "skipped" && res.Message == "" {
			continue
		}
		out = append(out, res)
	}
	return out, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// Counts are the totals of a run.
type Counts struct{ Passed, Failed, Skipped int }

// Count totals results.
func Count(results []Result) Counts {
	var c Counts
	for _, r := range results {
		switch {
		case r.Passed():
			c.Passed++
		case r.Failed():
			c.Failed++
		default:
			c.Skipped++
		}
	}
	return c
}

// WriteTable prints one line a spec (state, seconds, name, and the first
// line of a failure or skip), then the totals; its last line is
// "N passed, N failed".
func WriteTable(w io.Writer, results []Result) {
	sorted := append([]Result(nil), results...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, r := range sorted {
		fmt.Fprintf(w, "%-8s %6.1fs  %s\n", r.State, r.Runtime.Seconds(), r.Name)
		if r.Message != "" && !r.Passed() {
			fmt.Fprintf(w, "%17s%s\n", "", truncate(r.Message, 300))
		}
	}
	c := Count(results)
	if c.Skipped > 0 {
		fmt.Fprintf(w, "%d skipped\n", c.Skipped)
	}
	fmt.Fprintf(w, "%d passed, %d failed\n", c.Passed, c.Failed)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// junitSuites is the JUnit XML that WriteJUnit writes: one suite, one
// testcase a selected spec.
type junitSuites struct {
	XMLName xml.Name   `xml:"testsuites"`
	Suite   junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name    string        `xml:"name,attr"`
	Status  string        `xml:"status,attr"`
	Time    string        `xml:"time,attr"`
	Failure *junitMessage `xml:"failure,omitempty"`
	Skipped *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
}

// WriteJUnit writes results as JUnit XML, the selected specs only: the
// JUnit report ginkgo writes lists every spec of the e2e binary, the
// thousands it skipped included, and is too large to keep beside a run.
func WriteJUnit(w io.Writer, suite string, results []Result, wall time.Duration) error {
	c := Count(results)
	out := junitSuites{Suite: junitSuite{Name: suite, Tests: len(results), Failures: c.Failed, Skipped: c.Skipped,
		Time: seconds(wall)}}
	sorted := append([]Result(nil), results...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for _, r := range sorted {
		tc := junitCase{Name: r.Name, Status: r.State, Time: seconds(r.Runtime)}
		switch {
		case r.Passed():
		case r.Failed():
			tc.Failure = &junitMessage{Message: r.Message, Type: r.State}
		default:
			tc.Skipped = &junitMessage{Message: r.Message}
		}
		out.Suite.Cases = append(out.Suite.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }
