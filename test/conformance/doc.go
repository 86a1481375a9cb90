// Package conformance runs the Kubernetes conformance specs that need a
// node (issue #15) against one node agent: actorlet, or the upstream
// kubelet for a reference run. It starts the agent as the environment's
// only node, runs the e2e suite of k8s.io/kubernetes (built by hack/node-env
// up --with-conformance) through the ginkgo CLI, and turns ginkgo's JSON
// report into a table, spec by spec.
//
// The selection is in specs.txt; smoke.txt is the part that make test runs
// (TestSmoke); storage.txt, the e2e storage testsuites, for which the run
// installs the hostpath CSI driver on the node (hostpath-driver.yaml). cmd/actorlet-conformance is the command behind make
// conformance. See docs/conformance.md.
package conformance
