package chaos

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/actorlet/actorlet/test/agent"
)

var (
	fullFlag    = flag.Bool("chaos.full", false, "run the full suite (make chaos) instead of the short variant")
	resultsFlag = flag.String("chaos.results", "", "write the report (report.txt, results.json) to DIR/AGENT/, replacing the last run's")
)

// Agent is the node agent under test, set by TestMain.
var Agent struct {
	// Binary is the agent's executable.
	Binary string
	// Name is "actorlet", "upstream" (the upstream kubelet) or the
	// binary's base name.
	Name string
	// Upstream is true when Binary is not this checkout's actorlet: its
	// missed targets are recorded and logged, not failed.
	Upstream bool
}

// SetAgent records the agent under test: binary, and whether it is another
// kubelet than this checkout's actorlet.
func SetAgent(binary string, upstream bool) {
	Agent.Binary, Agent.Upstream, Agent.Name = binary, upstream, "actorlet"
	if upstream {
		Agent.Name = filepath.Base(binary)
		if Agent.Name == "kubelet" {
			Agent.Name = "upstream"
		}
	}
}

// Full reports whether the full suite runs (make chaos), rather than the
// short variant that the README's test command runs.
func Full() bool { return *fullFlag }

// Pick returns full in the full suite and short otherwise: a scenario's
// iterations, pod counts and durations.
func Pick[T any](short, full T) T {
	if Full() {
		return full
	}
	return short
}

// Mode is "full" or "short".
func Mode() string { return Pick("short", "full") }

// NewNode prepares the environment's node running the agent under test,
// joined to the API server and reachable by it (agent.NewAPIPods), with
// opts; with the upstream kubelet it adds what that needs on this machine
// (agent.UpstreamKubeletConfig). Up starts it.
func NewNode(t *testing.T, opts ...agent.NodeOption) *agent.APIPods {
	t.Helper()
	if Agent.Upstream {
		opts = append([]agent.NodeOption{agent.WithConfig(agent.UpstreamKubeletConfig)}, opts...)
	}
	return agent.NewAPIPods(t, Agent.Binary, opts...)
}

// Main is TestMain's body: it builds actorlet, or takes the kubelet that
// CHAOS_KUBELET names, runs the scenarios, writes the report and exits.
func Main(m *testing.M) {
	flag.Parse()
	code := 0
	if k := os.Getenv("CHAOS_KUBELET"); k != "" {
		SetAgent(k, true)
		code = m.Run()
	} else {
		binary, cleanup, err := agent.Build()
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		SetAgent(binary, false)
		code = m.Run()
		cleanup()
	}
	if err := writeReport(os.Stdout, *resultsFlag); err != nil {
		os.Stderr.WriteString("chaos report: " + err.Error() + "\n")
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
