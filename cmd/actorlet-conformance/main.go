// Command actorlet-conformance runs the node-facing Kubernetes conformance
// specs against a node agent and prints them spec by spec (issue #15; make
// conformance). It needs the environment with the conformance suite
// (hack/node-env up --with-conformance) and runs as root.
//
//	actorlet-conformance -kubelet bin/actorlet                # the selection, test/conformance/specs.txt
//	actorlet-conformance -kubelet upstream                    # the same against the upstream kubelet
//	actorlet-conformance -kubelet bin/actorlet -focus 'Pods'  # the specs of the selection that match
//	actorlet-conformance -kubelet bin/actorlet -specs my.txt  # the specs named in a file
//	actorlet-conformance -kubelet bin/actorlet -specs test/conformance/storage.txt # storage testsuites, CSI driver installed
//	actorlet-conformance -cluster ADMIN.conf -kubelet actorlet # the whole [Conformance] suite on make cluster's cluster
//
// It writes its results to results/conformance/AGENT/ at the repository's
// root (results.txt, junit.xml and e2e.log are kept in git; ginkgo's full
// report.json and the agent's log are not), or with -focus or another
// -specs file, a narrowed run, to results/tmp/conformance/AGENT/; a
// -cluster run to results/conformance-cluster/AGENT/ (or under tmp/); a
// run of test/conformance/storage.txt, the e2e storage testsuites against
// the hostpath CSI driver that the run installs on the node, to
// results/conformance-storage/AGENT/ (or under tmp/); of
// test/conformance/dra.txt, the e2e DRA specs with their test driver, to
// results/conformance-dra/AGENT/.
//
// It exits 0 when every spec passed, 1 when some failed, 2 when the run
// could not be made.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/actorlet/actorlet/test/conformance"
	"github.com/actorlet/actorlet/test/env"
)

func main() {
	specsFile := flag.String("specs", "test/conformance/specs.txt", "file of spec names, one a line (# comments)")
	focus := flag.String("focus", "", "regular expression: run only the specs of -specs whose name it matches")
	procs := flag.Int("procs", 4, "parallel ginkgo processes ([Serial] specs always run alone)")
	kubelet := flag.String("kubelet", "bin/actorlet", `node agent binary, or "upstream" for the upstream kubelet v1.37.2 built by hack/node-env`)
	artifacts := flag.String("artifacts", "", "directory for results.txt, junit.xml, e2e.log, report.json and the agent's log, emptied first (default results/conformance/AGENT, or results/tmp/conformance/AGENT for a narrowed run)")
	cluster := flag.String("cluster", "", "admin kubeconfig of a running cluster (make cluster): run the whole [Conformance] suite there, with no agent started; -kubelet then only names the run")
	flag.Parse()
	if flag.NArg() > 0 {
		fail(2, "unexpected arguments: %s", strings.Join(flag.Args(), " "))
	}
	specs, err := conformance.ReadSpecs(*specsFile)
	if err != nil {
		fail(2, "-specs: %v", err)
	}
	e, err := env.Load(env.WithConformance())
	if err != nil {
		fail(2, "environment: %v", err)
	}
	agent, name := *kubelet, filepath.Base(*kubelet)
	if *cluster != "" {
		if _, err := os.Stat(*cluster); err != nil {
			fail(2, "-cluster: %v (is a cluster up? make cluster)", err)
		}
		if *artifacts == "" {
			if *artifacts, err = resultsDir(filepath.Join("conformance-cluster", name), *focus != ""); err != nil {
				fail(2, "%v", err)
			}
		}
	} else if agent == "upstream" {
		out, err := exec.Command(e.Script, "upstream-kubelet").Output()
		if err != nil {
			fail(2, "building the upstream kubelet: %v", err)
		}
		agent, name = strings.TrimSpace(string(out)), "upstream"
	} else if agent, err = filepath.Abs(agent); err != nil {
		fail(2, "-kubelet: %v", err)
	}
	if *cluster == "" {
		if _, err := os.Stat(agent); err != nil {
			fail(2, "-kubelet: %v", err)
		}
		if *artifacts == "" {
			kind, narrowed := selection(*specsFile, *focus)
			if *artifacts, err = resultsDir(filepath.Join(kind, name), narrowed); err != nil {
				fail(2, "%v", err)
			}
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out, err := conformance.Run(ctx, e, conformance.Options{
		Specs: specs, Focus: *focus, Procs: *procs,
		Agent: agent, AgentName: name, Artifacts: *artifacts, Out: os.Stdout, Cluster: *cluster,
	})
	if err != nil {
		fail(2, "%v", err)
	}
	if conformance.Count(out.Results).Failed > 0 {
		stop()
		os.Exit(1)
	}
}

// resultsDir is where a run writes by default: results/KIND/AGENT, kept in
// git and linked by docs/conformance.md, for a full run; under
// results/tmp/, which git ignores, for a narrowed one.
func resultsDir(kindAgent string, narrowed bool) (string, error) {
	root, err := env.RepoRoot()
	if err != nil {
		return "", err
	}
	if narrowed {
		return filepath.Join(root, "results", "tmp", kindAgent), nil
	}
	return filepath.Join(root, "results", kindAgent), nil
}

// selections are the spec files of test/conformance whose whole runs are
// kept, by the results directory they go to.
var selections = map[string]string{
	"specs.txt":   "conformance",
	"storage.txt": "conformance-storage",
	"dra.txt":     "conformance-dra",
}

// selection is the kind of a run on the environment's node, which names
// its results directory, and whether it runs less than a whole selection.
func selection(specsFile, focus string) (kind string, narrowed bool) {
	root, err := env.RepoRoot()
	if err != nil {
		return "conformance", true
	}
	specs, err := filepath.Abs(specsFile)
	if err != nil {
		return "conformance", true
	}
	for file, kind := range selections {
		if specs == filepath.Join(root, "test", "conformance", file) {
			return kind, focus != ""
		}
	}
	return "conformance", true
}

func fail(code int, format string, args ...any) {
	fmt.Fprintf(os.Stderr, "actorlet-conformance: "+format+"\n", args...)
	os.Exit(code)
}
