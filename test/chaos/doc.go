// Package chaos is issue #22's fault suite: faults a node meets in
// production, injected on purpose against the environment's real
// containerd and kube-apiserver, with the figures that show nothing was
// lost (docs/reliability.md).
//
// Each scenario is a test (scenario_*_test.go) that runs one node agent,
// injects its faults, and records its figures and targets on a Scenario
// (Begin). `go test` (the README's test command) runs the short variant of
// every scenario: a few iterations each. `make chaos` runs the full suite
// (the -chaos.full flag) and writes the report, a table and results.json,
// to results/chaos/AGENT/; `make chaos KUBELET=upstream` runs the same
// scenarios against the upstream kubelet (CHAOS_KUBELET names the binary),
// whose missed targets are recorded, not failed.
//
// The fault tools are their own packages, tested on their own:
// test/faults/criproxy between the agent and containerd, and
// test/faults/apiproxy between the agent and kube-apiserver.
package chaos
