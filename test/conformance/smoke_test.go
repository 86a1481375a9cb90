package conformance

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/actorlet/actorlet/test/agent"
	"github.com/actorlet/actorlet/test/env"
)

// TestSmoke runs the specs of smoke.txt, conformance specs of several
// groups that actorlet passes, against actorlet: make test runs it so that
// the harness of make conformance cannot rot. Artifacts are under
// results/tmp/conformance/smoke/ at the repository's root, which git
// ignores: make test leaves the tree clean.
func TestSmoke(t *testing.T) {
	e := env.Require(t, env.WithConformance())
	specs, err := ReadSpecs("smoke.txt")
	if err != nil {
		t.Fatal(err)
	}
	all, err := ReadSpecs("specs.txt")
	if err != nil {
		t.Fatal(err)
	}
	inSelection := map[string]bool{}
	for _, s := range all {
		inSelection[s] = true
	}
	for _, s := range specs {
		if !inSelection[s] {
			t.Errorf("smoke.txt: %q is not in specs.txt", s)
		}
	}
	binary, cleanup, err := agent.Build()
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	root, err := env.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	art := filepath.Join(root, "results", "tmp", "conformance", "smoke")
	var out strings.Builder
	res, err := Run(context.Background(), e, Options{
		Specs: specs, Procs: 2, Agent: binary, AgentName: "actorlet", Artifacts: art, Out: &out,
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	if c := Count(res.Results); c.Failed > 0 || c.Passed != len(specs) {
		log, _ := os.ReadFile(filepath.Join(art, "actorlet.log"))
		t.Errorf("smoke: %d of %d specs passed (e2e log: %s); actorlet's log ends:\n%s", c.Passed, len(specs),
			filepath.Join(art, "e2e.log"), env.Tail(string(log), 80))
	}
}
