# actorlet — see README.md. Every target works from a fresh clone.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
# make run and make run-cluster serve the dashboard, /debug/actors.json,
# pprof and fault injection in plain HTTP here (actorlet's --debug-address):
# loopback only, a port next to the healthz listener's 10248 that upstream
# does not use.
DEBUG_ADDRESS ?= 127.0.0.1:10249
STATICCHECK_VERSION := v0.8.2
# The test environment's container runtime (hack/node-env): 2.4,
# containerd v2.4 and runc v1.5 built from their Go modules, or 1.6,
# Debian's containerd. Every target that brings the environment up takes it:
#   make conformance CONTAINERD=1.6
CONTAINERD ?= 2.4
export ACTORLET_CONTAINERD := $(CONTAINERD)
# make test runs every test on CONTAINERD, then, on containerd 1.6, the
# tests whose behaviour depends on the runtime's version (refusals of what
# 1.6 cannot do, its messages, its missing RuntimeConfig) and the
# environment's smoke test.
RUNTIME16_PKGS := ./test/envsmoke ./cmd/actorlet ./actors/gc ./test/standalone ./test/volumes ./test/admission
RUNTIME16_RUN := ^(TestCRISandboxAndContainer|TestPullFromLocalRegistry|TestCgroupDriverSystemdWithoutSystemd|TestDetectImagesAgainstContainerd|TestSecurityContextRefusals|TestImageVolumes|TestAdmission)$$
# Packages whose tests use the shared environment (they import test/env or
# test/agent, or run actorlet): one package at a time, since two kubelets on one containerd
# kill each other's pods. Every other package is a unit test, run in parallel.
# Both run with -race.
PKG_IMPORTS = $(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./...
INTEGRATION = $$($(PKG_IMPORTS) | awk '/actorlet\/test\/(env|agent)( |$$)/ || $$1 ~ /\/cmd\// {print $$1}')
UNIT = $$($(PKG_IMPORTS) | awk '!(/actorlet\/test\/(env|agent)( |$$)/ || $$1 ~ /\/cmd\//) {print $$1}')

.PHONY: build test csi-sidecars-background unit integration integration-1.6 fuzz lint upstream-flags env-up env-down run run-cluster cluster cluster-down conformance-cluster bench bench-churn bench-static bench-cluster conformance chaos clean

build:
	$(GO) build -o $(BIN)/actorlet ./cmd/actorlet

# The README's test command: brings the real environment up (containerd, CNI,
# registry, etcd, kube-apiserver, kube-controller-manager), then runs every test.
test: env-up csi-sidecars-background unit integration integration-1.6

# The CSI tests' sidecars (hack/csi) take minutes of CPU to build cold:
# built in the background at the lowest priority while the tests run, they
# are ready (or nearly) when test/csi asks for them.
csi-sidecars-background:
	nohup nice -n 19 hack/node-env csi-sidecars >/dev/null 2>&1 &

unit:
	$(GO) test -race -count=1 $(UNIT)

# The integration packages run the actorlet that build made (agent.Build).
integration: build
	ACTORLET_TEST_BINARY=$(BIN)/actorlet $(GO) test -race -count=1 -p 1 -timeout 30m $(INTEGRATION)

integration-1.6: build
	ACTORLET_CONTAINERD=1.6 hack/node-env up --with-apiserver
	ACTORLET_TEST_BINARY=$(BIN)/actorlet ACTORLET_CONTAINERD=1.6 $(GO) test -race -count=1 -p 1 -timeout 15m -run '$(RUNTIME16_RUN)' $(RUNTIME16_PKGS)

# Issue #14: every fuzz target (func FuzzXxx in a _test.go file) for
# FUZZTIME each; go test -fuzz takes one package and one target per run.
# FUZZPARALLEL is the number of fuzzing workers (1 leaves the machine to
# others). FUZZMINIMIZETIME bounds the minimising of each input found (go
# test's default, 60 s, would spend a short run minimising). A failing
# input is written under the package's testdata/fuzz/; once fixed, commit
# it there: the ordinary go test (make test) runs it.
#   make fuzz FUZZTIME=5m FUZZPARALLEL=2
FUZZTIME ?= 30s
FUZZPARALLEL ?= 1
FUZZMINIMIZETIME ?= 5s
fuzz:
	@set -e; grep -r --include='*_test.go' -o '^func Fuzz[A-Za-z0-9_]*' . | grep -v '^./hack/' | sort | \
	while IFS=: read -r file decl; do \
		pkg=$$(dirname "$$file"); target=$${decl#func }; \
		echo "== $$target in $$pkg for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$target\$$" -fuzztime $(FUZZTIME) \
			-fuzzminimizetime $(FUZZMINIMIZETIME) -parallel $(FUZZPARALLEL) "$$pkg" </dev/null; \
	done

# Issue #20: upstream kubelet's flag list, from upstream's own code (the
# k8s.io/kubernetes version in hack/kube/go.mod), that config's flag-set test
# compares actorlet's flags with. Rerun after moving hack/kube to a new
# Kubernetes version; the first build of hack/kube takes a while.
upstream-flags:
	cd hack/kube && GOWORK=off GOFLAGS=-mod=readonly $(GO) run ./kubeletflags \
		$$(GOWORK=off $(GO) list -m -f '{{.Version}}' k8s.io/kubernetes) $(CURDIR)/config/testdata/upstream-kubelet-flags.json

lint:
	$(GO) vet ./...
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(BIN)/staticcheck ./...

# Pod start-up and deletion, CPU and memory of actorlet as the node, beside
# the same pods straight through CRI (docs/performance.md). Results in
# results/bench/pods/ (report.md, results.json; logs/ ignored by git); with
# -binary or -config, an experiment, in results/tmp/bench/. BENCH_FLAGS
# passes flags, e.g.
#   make bench BENCH_FLAGS="-n 10,30 -runs 1"
#   make bench BENCH_FLAGS="-probes -only actorlet -n 110 -runs 1"   # results/bench/probes/
#   make bench BENCH_FLAGS="-binary /tmp/actorlet-before"
bench: env-up
	GO=$(GO) $(GO) run ./cmd/actorlet-bench $(BENCH_FLAGS)

# 20 pods created and deleted 20 times against one actorlet; RSS,
# goroutines and actors after each loop, and what is left in the runtime.
# Results in results/bench/churn/.
bench-churn: env-up
	GO=$(GO) $(GO) run ./cmd/actorlet-bench -churn $(BENCH_FLAGS)

# 30 static pods placed at once: time until all are Running (issue #4).
bench-static: env-up
	$(GO) test -run XXX -bench BenchmarkStaticPods -benchtime 3x ./test/standalone

# 60 pods created through the API at once: startup latency to Ready (issue #5).
bench-cluster: env-up
	$(GO) test -run XXX -bench BenchmarkAPIPodStartup -benchtime 1x -timeout 20m ./test/cluster

env-up:
	hack/node-env up --with-conformance

# The node-facing Kubernetes [Conformance] specs of
# test/conformance/specs.txt against actorlet as the only node, spec by
# spec (docs/conformance.md). Results in results/conformance/AGENT/
# (results.txt, junit.xml, e2e.log; report.json and the agent's log ignored
# by git); a run narrowed by FOCUS or SPECS in results/tmp/conformance/AGENT/.
#   make conformance FOCUS='ConfigMap' PROCS=2
#   make conformance SPECS=my-specs.txt
#   make conformance KUBELET=upstream        # the reference run
#   make conformance KUBELET=/path/to/agent  # any node agent with the kubelet's flags
KUBELET ?= $(BIN)/actorlet
SPECS ?= test/conformance/specs.txt
FOCUS ?=
PROCS ?= 4
# The table's last line is the verdict ("N passed, N failed"): make exits 0
# when the run was made, whatever the specs did, and fails only when it
# could not be made (actorlet-conformance's exit code 2).
conformance: env-up build
	$(GO) build -o $(BIN)/actorlet-conformance ./cmd/actorlet-conformance
	@$(BIN)/actorlet-conformance -kubelet '$(KUBELET)' -specs '$(SPECS)' -focus '$(FOCUS)' -procs $(PROCS); \
		rc=$$?; [ $$rc -le 1 ] || exit $$rc

# A kubeadm cluster on this machine, every node's kubelet actorlet (or
# KUBELET=upstream, or a binary): kubeadm init on the first node, kubeadm
# join on the others, each node a network and mount namespace with its own
# containerd (hack/cluster; docs/testing.md). KUBECONFIG is printed.
#   make cluster                   # two nodes
#   make cluster NODES=1 KUBELET=upstream
#   make cluster-down
NODES ?= 2
cluster: build
	KUBELET='$(if $(filter upstream,$(KUBELET)),upstream,$(abspath $(KUBELET)))' hack/cluster up --nodes $(NODES)

cluster-down:
	hack/cluster down

# The whole [Conformance] suite (as a certification run) on make cluster's
# cluster, whichever kubelet its nodes run, with the images only it needs
# (hack/images/e2e --suite). Results in
# results/conformance-cluster/AGENT/; narrowed by FOCUS, in results/tmp/.
conformance-cluster:
	$(GO) build -o $(BIN)/actorlet-conformance ./cmd/actorlet-conformance
	hack/images/e2e --suite
	@$(BIN)/actorlet-conformance -cluster "$$(hack/cluster kubeconfig)" -kubelet "$$(hack/cluster kubelet)" -focus '$(FOCUS)' -procs $(PROCS); \
		rc=$$?; [ $$rc -le 1 ] || exit $$rc

# The fault suite in full (the README's test command runs its short
# variant), with its report in results/chaos/AGENT/ (report.txt,
# results.json; docs/reliability.md); a run narrowed by CHAOS_RUN in
# results/tmp/chaos/AGENT/.
#   make chaos                         # against actorlet
#   make chaos KUBELET=upstream        # the same scenarios against the upstream kubelet
#   make chaos CHAOS_RUN='TestHungCRI'
# Missed targets fail actorlet's run; the upstream kubelet's are recorded.
CHAOS_RUN ?= .
chaos: env-up
	$(GO) test -c -o $(BIN)/chaos.test ./test/chaos
	@k='$(KUBELET)'; case "$$k" in upstream) k=$$(hack/node-env upstream-kubelet) || exit 2;; $(BIN)/actorlet) k=;; esac; \
		CHAOS_KUBELET="$$k" $(BIN)/chaos.test -test.run '$(CHAOS_RUN)' -test.timeout 4h -test.v -chaos.full \
		-chaos.results $(CURDIR)/results/$(if $(filter .,$(CHAOS_RUN)),,tmp/)chaos

env-down:
	hack/node-env down

# Standalone actorlet on the example static pods, against the environment's
# own containerd (set up first if needed). Every listener is on loopback;
# the dashboard is at http://$(DEBUG_ADDRESS)/debug/actors.
run: build
	hack/node-env up
	@echo "dashboard: http://$(DEBUG_ADDRESS)/debug/actors"
	source <(hack/node-env env) && exec $(BIN)/actorlet \
		--container-runtime-endpoint "$$CONTAINER_RUNTIME_ENDPOINT" \
		--hostname-override "$$ACTORLET_NODE_NAME" \
		--root-dir "$$ACTORLET_STATE_DIR/actorlet-root" \
		--pod-manifest-path $(CURDIR)/examples/static-pods \
		--address 127.0.0.1 \
		--read-only-port 10255 \
		--fail-cgroupv1=false \
		--debug-address $(DEBUG_ADDRESS)

# actorlet as the node of the environment's kube-apiserver and
# kube-controller-manager (set up first if needed), with the node's own
# credentials. In another shell:
#   source <(hack/node-env env); $$KUBECTL --kubeconfig $$ACTORLET_ADMIN_KUBECONFIG get nodes
run-cluster: build
	hack/node-env up --with-apiserver
	@echo "dashboard: http://$(DEBUG_ADDRESS)/debug/actors"
	source <(hack/node-env env) && echo "kubectl: $$KUBECTL --kubeconfig $$ACTORLET_ADMIN_KUBECONFIG get nodes" && exec $(BIN)/actorlet \
		--kubeconfig "$$ACTORLET_NODE_KUBECONFIG" \
		--container-runtime-endpoint "$$CONTAINER_RUNTIME_ENDPOINT" \
		--hostname-override "$$ACTORLET_NODE_NAME" \
		--node-ip 127.0.0.1 \
		--root-dir "$$ACTORLET_STATE_DIR/actorlet-root" \
		--pod-manifest-path $(CURDIR)/examples/static-pods \
		--address 127.0.0.1 \
		--read-only-port 10255 \
		--fail-cgroupv1=false \
		--debug-address $(DEBUG_ADDRESS)

clean:
	rm -rf $(BIN)
