# actorlet — see README.md. Every target works from a fresh clone.
SHELL := /bin/bash
GO ?= go
BIN := $(CURDIR)/bin
STATICCHECK_VERSION := v0.8.2
# Packages whose tests run actorlet or touch the shared environment: one
# package at a time, since two kubelets on one containerd kill each other's pods.
INTEGRATION := ./cmd/... ./test/...

.PHONY: build test unit integration lint env-up env-down run clean

build:
	$(GO) build -o $(BIN)/actorlet ./cmd/actorlet

# The README's test command: brings the real environment up (containerd, CNI,
# registry, etcd, kube-apiserver, kube-controller-manager), then runs every test.
test: env-up unit integration

unit:
	$(GO) test -race -count=1 $$($(GO) list ./... | grep -v -e /cmd/ -e /test/)

integration:
	$(GO) test -count=1 -p 1 -timeout 30m $(INTEGRATION)

lint:
	$(GO) vet ./...
	GOBIN=$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)
	$(BIN)/staticcheck ./...

env-up:
	hack/node-env up --with-apiserver

env-down:
	hack/node-env down

# Standalone actorlet on the example static pods, against the environment's
# own containerd (set up first if needed).
run: build
	hack/node-env up
	source <(hack/node-env env) && exec $(BIN)/actorlet \
		--container-runtime-endpoint "$$CONTAINER_RUNTIME_ENDPOINT" \
		--hostname-override "$$ACTORLET_NODE_NAME" \
		--root-dir "$$ACTORLET_STATE_DIR/actorlet-root" \
		--pod-manifest-path $(CURDIR)/examples/static-pods \
		--read-only-port 10255

clean:
	rm -rf $(BIN)
