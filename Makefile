# Flotilla build. The two commands a newcomer needs: `make run` and `make test`.
SHELL := /usr/bin/env bash
BIN   := $(CURDIR)/bin
GO    ?= go
export FLOTILLA_BIN_DIR := $(BIN)

KWOK := $(BIN)/kwok
CONTROLPLANE := $(BIN)/etcd $(BIN)/kube-apiserver $(BIN)/kube-controller-manager $(BIN)/kube-scheduler $(KWOK)
CONTROLLER_GEN := $(BIN)/controller-gen

.PHONY: all build generate chart-crds verify-generate controlplane kwok test test-argocd run clean

all: build

## build: the flotilla binary in bin/
build:
	$(GO) build -o $(BIN)/flotilla ./cmd/flotilla

## image: the container image $(IMAGE) from the Dockerfile (a static binary on distroless,
## hub or klusterlet by subcommand), built with the first of $(CONTAINER_TOOLS) whose engine
## works; it fails, naming the tools tried, when none does
IMAGE ?= ghcr.io/flotilla-dev/flotilla:0.1.0
CONTAINER_TOOLS ?= docker podman buildah
.PHONY: image
image:
	@tool=; tried=; \
	for t in $(CONTAINER_TOOLS); do \
		if ! command -v $$t >/dev/null 2>&1; then tried="$$tried\n  $$t: not installed"; continue; fi; \
		if $$t info >/dev/null 2>&1; then tool=$$t; break; fi; \
		tried="$$tried\n  $$t: installed, but '$$t info' fails (no running engine)"; \
	done; \
	if [ -z "$$tool" ]; then \
		printf 'make image: no working container engine to build %s; tried:%b\n' "$(IMAGE)" "$$tried" >&2; \
		printf "Start the docker daemon, or install podman or buildah (or set CONTAINER_TOOLS).\n" >&2; \
		exit 1; \
	fi; \
	echo "building $(IMAGE) with $$tool"; \
	if [ "$$tool" = buildah ]; then buildah bud -f Dockerfile -t $(IMAGE) .; \
	else $$tool build -f Dockerfile -t $(IMAGE) .; fi

## controlplane: etcd, kube-apiserver, kube-controller-manager and kube-scheduler built from source
## (tools/controlplane) into bin/, and kwok (tools/kwok) for the managed clusters' simulated Nodes.
## Rebuilt only when missing or when the pinned versions in tools/controlplane/go.mod or
## tools/kwok/go.mod change.
controlplane: $(CONTROLPLANE)

# Stamp the pinned versions into the binaries (a plain `go build` reports v0.0.0-master), so
# the version the klusterlet reports for a local cluster is the real one.
K8S_VERSION  := $(shell awk '$$1=="k8s.io/kubernetes"{print $$2}' tools/controlplane/go.mod)
K8S_LDFLAGS  := -X k8s.io/component-base/version.gitVersion=$(K8S_VERSION) \
	-X k8s.io/component-base/version.gitMajor=$(word 1,$(subst ., ,$(K8S_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitMinor=$(word 2,$(subst ., ,$(K8S_VERSION:v%=%))) \
	-X k8s.io/component-base/version.gitTreeState=clean \
	-X k8s.io/client-go/pkg/version.gitVersion=$(K8S_VERSION)

$(BIN)/etcd: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -o $@ go.etcd.io/etcd/server/v3
$(BIN)/kube-apiserver: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-apiserver
$(BIN)/kube-controller-manager: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-controller-manager
$(BIN)/kube-scheduler: tools/controlplane/go.mod tools/controlplane/go.sum
	cd tools/controlplane && $(GO) build -ldflags '$(K8S_LDFLAGS)' -o $@ k8s.io/kubernetes/cmd/kube-scheduler

## kwok: KWOK's controller (simulated Nodes and the lifecycle of their Pods on managed clusters)
## built from source (tools/kwok, its own module so its dependencies never move the control
## plane's) into bin/. Its release version is compiled into the module, no ldflags needed.
kwok: $(KWOK)

$(KWOK): tools/kwok/go.mod tools/kwok/go.sum
	cd tools/kwok && $(GO) build -o $@ sigs.k8s.io/kwok/cmd/kwok

$(CONTROLLER_GEN): tools/codegen/go.mod tools/codegen/go.sum
	cd tools/codegen && $(GO) build -o $@ sigs.k8s.io/controller-tools/cmd/controller-gen

## generate: deepcopy functions and CRD manifests from core/apis, and the charts' CRD copies
generate: $(CONTROLLER_GEN)
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./core/apis/...
	$(CONTROLLER_GEN) crd paths=./core/apis/... output:crd:artifacts:config=core/crds/bases
	$(MAKE) --no-print-directory chart-crds

# The CRDs a managed cluster serves (core/environment ManagedClusterCRDs), by file name.
KLUSTERLET_CRDS := cluster.open-cluster-management.io_clusterclaims.yaml \
	work.open-cluster-management.io_appliedmanifestworks.yaml \
	operator.open-cluster-management.io_klusterlets.yaml \
	flotilla.dev_wasmplugins.yaml

## chart-crds: copy core/crds/bases into the charts' crds/ (the hub chart gets all of them, the
## klusterlet chart the managed cluster's); core/install's tests fail when a copy is stale
chart-crds:
	rm -f charts/flotilla-hub/crds/*.yaml charts/flotilla-klusterlet/crds/*.yaml
	mkdir -p charts/flotilla-hub/crds charts/flotilla-klusterlet/crds
	cp core/crds/bases/*.yaml charts/flotilla-hub/crds/
	cp $(addprefix core/crds/bases/,$(KLUSTERLET_CRDS)) charts/flotilla-klusterlet/crds/

## verify-generate: fail when deepcopy or CRD files (and the charts' CRD copies) differ from what
## make generate makes now
verify-generate: $(CONTROLLER_GEN)
	$(GO) test -count=1 -run TestGeneratedFilesAreCurrent ./core/crds/
	$(GO) test -count=1 -run TestChartCRDsAreCurrent ./core/install/

## chromium: Debian's Chromium for the dashboard's browser tests and benchmark (core/environment/browser
## drives it with chromedp); installed with apt-get when no Chromium is on the machine (or $$FLOTILLA_CHROMIUM)
.PHONY: chromium
chromium:
	@if [ -n "$$FLOTILLA_CHROMIUM" ] || command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
		exit 0; \
	fi; \
	echo "installing Debian's chromium package (the dashboard's browser tests drive it)"; \
	$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq --no-install-recommends chromium

## dashboard-screenshots: the dashboard's browser suite (e2e/dashboard), writing a PNG of each
## view to docs/dashboard (the README's images)
.PHONY: dashboard-screenshots
dashboard-screenshots: $(CONTROLPLANE) chromium
	FLOTILLA_SCREENSHOTS_DIR=$(CURDIR)/docs/dashboard $(GO) test -count=1 -timeout 30m ./e2e/dashboard/

## test: every unit and API-server-backed suite (the dashboard's in a real Chromium: make chromium)
test: $(CONTROLPLANE) $(CONTROLLER_GEN) plugins-examples chromium
	$(GO) test -count=1 -timeout 40m ./...
	$(MAKE) test-argocd

## test-argocd: Argo CD's ApplicationSet generator against a hub (e2e/argocd, its own module;
## Argo CD v3.6 needs Go 1.27, which GOTOOLCHAIN=auto fetches through the module proxy)
test-argocd: $(CONTROLPLANE)
	cd e2e/argocd && GOTOOLCHAIN=auto $(GO) test -count=1 -timeout 20m ./...

## run: a local hub and two managed clusters (Ctrl-C stops them all)
run: build $(CONTROLPLANE)
	$(BIN)/flotilla dev --managed-clusters 2

clean:
	rm -rf $(BIN)

# ---- Wasm plugins (sdk/, plugins/) ----
.PHONY: plugins plugins-go plugins-examples wasi-toolchain bench-wasm

C_HEADROOM := plugins/examples/c-headroom
C_CLUSTER_LABEL := plugins/examples/c-cluster-label
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

## plugins: our Go plugins into plugins/dist/<name>.wasm.zst (+ manifest.json, committed and
## embedded by the hub) and the C examples (a prioritizer and a transformer; their tests under `make test` load them)
plugins: plugins-go plugins-examples

plugins-go:
	$(GO) run ./plugins/cmd/build-plugins -root . -out plugins/dist

plugins-examples: $(C_HEADROOM)/build/headroom.wasm $(C_CLUSTER_LABEL)/build/cluster-label.wasm

$(C_HEADROOM)/build/headroom.wasm: $(C_HEADROOM)/src/headroom.c | wasi-toolchain
	mkdir -p $(@D)
	clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Werror -Wl,--strip-all -o $@ $<

$(C_CLUSTER_LABEL)/build/cluster-label.wasm: $(C_CLUSTER_LABEL)/src/cluster_label.c | wasi-toolchain
	mkdir -p $(@D)
	clang --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Werror -Wl,--strip-all -o $@ $<

## wasi-toolchain: Debian's clang, lld and wasi-libc, installed only when missing
wasi-toolchain:
	@if ! command -v clang >/dev/null || ! command -v wasm-ld >/dev/null || [ ! -e /usr/lib/wasm32-wasi/libc.a ]; then \
		echo "installing clang, lld and wasi-libc"; \
		$(SUDO) apt-get update -qq && \
		$(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang lld wasi-libc libclang-rt-dev-wasm32; \
	fi

## bench-wasm: Wasm host benchmarks (compile, cache, instance, empty call) and a 5,000-cluster
## prioritizer call next to native Go; the last line is the wasm/native summary
bench-wasm:
	$(GO) build -o $(BIN)/benchline ./core/wasm/wasmbench/benchline
	@set -o pipefail; { \
		$(GO) test -run '^$$' -bench 'Compile|Load|Instance|EmptyCall' -benchmem ./core/wasm/wasmbench/ && \
		$(GO) test -run '^$$' -bench 'Prioritizer5000' -benchmem -count 7 ./core/wasm/wasmbench/ ; \
	} | $(BIN)/benchline

.PHONY: bench-registration
## bench-registration: 100 in-process klusterlets (one managed API server, each with its own
## cluster name and agent namespace) join one hub; the last line is
## `registration-100 seconds=<time until all are Joined and Available>`
bench-registration: $(CONTROLPLANE)
	$(GO) run ./e2e/registration/bench -clusters 100

.PHONY: bench-admission
## bench-admission: the execute-as decision of the hub's policy webhook (hub/webhook serving
## hub/admission with the embedded policies, SubjectAccessReviews cached) on a real hub API
## server, 2,000 AdmissionReviews POSTed one at a time over HTTPS after 200 to warm up, next to
## a baseline making one SubjectAccessReview per request as OCM's webhook does; the last line is
## `admission-execute-as p50_us=… p99_us=… sar_baseline_p50_us=…`
bench-admission: $(CONTROLPLANE)
	$(GO) run ./e2e/admission/bench -requests 2000 -warmup 200

.PHONY: bench-proxy
## bench-proxy: requests and watches through the hub's cluster-gateway (hub kube-apiserver,
## aggregator, hub, cluster-proxy tunnel) to one managed API server, in-process hub and
## klusterlet: 500 sequential GETs after 50 to warm up, the same direct with the gateway's
## token, then 1,000 concurrent watches (opened 50 at a time) and one ConfigMap; the last line is
## `proxy-get p50_ms=… p99_ms=… direct_p50_ms=… streams_1000_ok=<watches that saw it within 30 s>`
bench-proxy: $(CONTROLPLANE)
	$(GO) run ./e2e/gateway/bench -requests 500 -warmup 50 -watches 1000 -opening 50

.PHONY: bench-placement
## bench-placement: one scheduling pass over 5,000 clusters with the four Wasm built-ins and a
## third-party Wasm prioritizer next to native Go (`placement-pass-5000 ratio=…`), then 1,000
## and 10,000 Placements (numberOfClusters 10; AddOn score, ResourceAllocatableCPU and Balance)
## over 1,000 simulated clusters, the hub its own process, each timed against the same writes
## without a hub (the floor); last line `placement p1000x1000_s=… p10000x1000_s=… hub_rss_mib=…
## floor_p1000x1000_s=… floor_p10000x1000_s=… ratio_p1000x1000=… ratio_p10000x1000=… floor_ratio=…`.
bench-placement: build $(CONTROLPLANE)
	$(GO) build -o $(BIN)/benchline ./core/wasm/wasmbench/benchline
	@set -o pipefail; $(GO) test -run '^$$' -bench 'SchedulePass5000' -benchmem -count 5 ./hub/placement/scheduler/ | \
		$(BIN)/benchline -bench BenchmarkSchedulePass5000 -label placement-pass-5000
	$(GO) run ./e2e/placement/bench -flotilla $(BIN)/flotilla

.PHONY: bench-rollout
## bench-rollout: one ManifestWorkReplicaSet with an All rollout to 1,000 simulated clusters (the
## hub as its own process, a fake agent reporting each work Applied); last line
## `mwrs-1000 rollout_s=… reconcile_p50_ms=…`
bench-rollout: build $(CONTROLPLANE)
	$(GO) run ./e2e/mwrs/bench -flotilla $(BIN)/flotilla

.PHONY: bench-overrides
## bench-overrides: per-cluster overrides of a ManifestWorkReplicaSet on 1,000 simulated clusters
## (5 rules: registry by region, replicas from a claim, a label, env by JSON patch, the
## transform-sidecar Wasm plugin): the median of 7 in-process renders of all clusters, and the
## rollout of an image tag change through the hub as its own process; last line
## `overrides-1000 render_ms_p50=… rollout_s=…` (OVERRIDES_ARGS='-clusters 20' for a smoke run)
bench-overrides: build $(CONTROLPLANE)
	$(GO) run ./e2e/mwrs/overridebench -flotilla $(BIN)/flotilla $(OVERRIDES_ARGS)

.PHONY: bench-addons
## bench-addons: a template add-on (an AddOnTemplate with a ServiceAccount and a Deployment, an
## AddOnDeploymentConfig as default config) installed by a Placements strategy on 100 simulated
## clusters (the hub as its own process, a fake agent reporting each work Applied and Available
## with its Deployment's feedback), then upgraded by a change of the AddOnDeploymentConfig (All
## rollout); last line `addons-100 install_s=… upgrade_s=…`
bench-addons: build $(CONTROLPLANE)
	$(GO) run ./e2e/addon/bench -flotilla $(BIN)/flotilla

.PHONY: bench-fleet bench-fleet-curve
## bench-fleet: 5,000 simulated clusters (klusterlet/sim: the klusterlet's own agents, the
## managed side in memory) against a hub process on this machine: join, 5 minutes steady, 100
## Placements and 5 minutes of score churn, a ManifestWorkReplicaSet to all beside 10 works per
## cluster, a template add-on on all; last line `fleet-5000 join_s=… … addon_all_s=…`.
## FLEET_ARGS passes flags (-clusters, -works-per-cluster, -steady, -churn, ...)
bench-fleet: build $(CONTROLPLANE)
	$(GO) run ./e2e/fleet/bench -flotilla $(BIN)/flotilla $(FLEET_ARGS)

## bench-fleet-curve: one hub sees the fleet grow through 500, 1,000, 2,000 and 5,000 clusters
## (2 minutes steady at each, bench-fleet's phases at 5,000); prints each figure per 1,000
## clusters and writes docs/fleet-curve.svg (once the steady phases are measured)
bench-fleet-curve: build $(CONTROLPLANE)
	$(GO) run ./e2e/fleet/bench -flotilla $(BIN)/flotilla -sizes 500,1000,2000,5000 -plot docs/fleet-curve.svg $(FLEET_ARGS)

.PHONY: bench-work
## bench-work: one klusterlet (its own process) applies 100 ManifestWorks created one after
## another, then 1,000 at once; it prints the hub writes to ManifestWorks per work, and the last
## line is `work-apply p50_ms=… p99_ms=… fanout_1000_s=… agent_rss_mib=…`
bench-work: build $(CONTROLPLANE)
	$(GO) run ./e2e/work/bench -flotilla $(BIN)/flotilla

.PHONY: bench-dashboard
## bench-dashboard: the dashboard in headless Chromium on 5,000 simulated clusters (plain
## ManagedClusters with status and leases on a hub API server, no hub needed; the dashboard
## server in-process): the page's fleet-first-paint mark, median of 3 fresh loads, and the time
## from a cluster's status patch to the page's #fleet-summary showing it, median of 10; last
## line `dashboard-5000 first_paint_ms=… update_ms=…` (BENCH_DASHBOARD_ARGS='-clusters 200' for
## a smoke run)
bench-dashboard: $(CONTROLPLANE) chromium
	$(GO) run ./e2e/dashboard/bench $(BENCH_DASHBOARD_ARGS)
