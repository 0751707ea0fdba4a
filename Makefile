# Flotilla build. The two commands a newcomer needs: `make run` and `make test`.
SHELL := /usr/bin/env bash
BIN   := $(CURDIR)/bin
GO    ?= go
export FLOTILLA_BIN_DIR := $(BIN)

CONTROLPLANE := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager
CONTROLLER_GEN := $(BIN)/controller-gen

.PHONY: all build generate verify-generate controlplane test run clean

all: build

## build: the flotilla binary in bin/
build:
	$(GO) build -o $(BIN)/flotilla ./cmd/flotilla

## controlplane: etcd, kube-apiserver and kube-controller-manager built from source (tools/controlplane) into bin/.
## Rebuilt only when missing or when the pinned versions in tools/controlplane/go.mod change.
controlplane: $(CONTROLPLANE)

$(BIN)/etcd: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -o $@ go.etcd.io/etcd/server/v3
$(BIN)/kube-apiserver: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -o $@ k8s.io/kubernetes/cmd/kube-apiserver
$(BIN)/kube-controller-manager: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -o $@ k8s.io/kubernetes/cmd/kube-controller-manager

$(CONTROLLER_GEN): tools/codegen/go.mod tools/codegen/go.sum
	cd tools/codegen && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: deepcopy functions and CRD manifests from core/apis
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./core/apis/...
	$(CONTROLLER_GEN) crd paths=./core/apis/... output:crd:artifacts:config=core/crds/bases

## test: every unit, Rego and API-server-backed suite
test: $(CONTROLPLANE) $(CONTROLLER_GEN)
	$(GO) test -count=1 -timeout 40m ./...

## run: a local hub and two managed clusters (Ctrl-C stops them all)
run: build $(CONTROLPLANE)
	$(BIN)/flotilla dev --managed-clusters 2

clean:
	rm -rf $(BIN)
