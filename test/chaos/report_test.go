package chaos

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteReportReplacesTheAgentsLastRun checks that a run's report goes
// to DIR/AGENT/ under fixed names, so that the docs can link the latest.
func TestWriteReportReplacesTheAgentsLastRun(t *testing.T) {
	saved, name := report.scenarios, Agent.Name
	t.Cleanup(func() { report.scenarios, Agent.Name = saved, name })
	dir := t.TempDir()
	for _, tc := range []struct{ agent, scenario string }{
		{"actorlet", "first"}, {"actorlet", "second"}, {"upstream", "third"},
	} {
		report.scenarios, Agent.Name = []*Scenario{{Name: tc.scenario, Title: "a scenario", Passed: true}}, tc.agent
		if err := writeReport(io.Discard, dir); err != nil {
			t.Fatal(err)
		}
		for _, file := range []string{"report.txt", "results.json"} {
			raw, err := os.ReadFile(filepath.Join(dir, tc.agent, file))
			if err != nil || !strings.Contains(string(raw), tc.scenario) {
				t.Fatalf("%s of %s: %v\n%s", file, tc.scenario, err, raw)
			}
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Fatalf("%d entries in %s, want actorlet and upstream", len(entries), dir)
	}
}
