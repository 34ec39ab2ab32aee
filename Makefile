# htc — make targets. `make demo` and `make test` are the two a new user needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := bin/htc
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
# The version ldflags of every htc build (bin/htc, the image, the Dockerfile's):
# `htc version` and the htc_build_info metric report them.
LDFLAGS := -X main.version=$(VERSION) -X main.revision=$(REVISION)
export GOFLAGS ?= -buildvcs=false
# sigs.k8s.io/gateway-api v1.7 needs Go 1.27: the go command fetches this
# toolchain from the module proxy once (about 76 MB) and uses it for every
# build and test the Makefile runs (a machine's own Go ignores go.mod's
# toolchain line, so it is exported here, in .ci/run and in the README).
export GOTOOLCHAIN ?= go1.27.3

# make image: the htc image as an OCI archive (hack/image.sh; see the README).
IMAGE ?= haproxy-template/htc
IMAGE_TAG ?= $(patsubst v%,%,$(VERSION))
IMAGE_ARCHIVE ?= bin/htc-image.oci.tar
# The commit time, so that an unchanged tree builds an identical image.
CREATED ?= $(shell TZ=UTC git log -1 --format=%cd --date=format-local:%Y-%m-%dT%H:%M:%SZ 2>/dev/null || echo 1970-01-01T00:00:00Z)

.PHONY: all build test test-repeat unit race e2e bench bench-scale bench-propagation bench-endpoints fuzz lint generate demo demo-offline haproxy image clean help test-assets cluster-test conformance cluster-demo cluster-up cluster-down

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-12s %s\n", $$1, $$2}'

build: ## build bin/htc
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/htc

image: ## the htc image (HAProxy 3.0 inside) as an OCI archive, bin/htc-image.oci.tar, without a Docker daemon (cached by its inputs)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-s -w $(LDFLAGS)" -o bin/htc-static ./cmd/htc
	@IMAGE=$(IMAGE) TAG=$(IMAGE_TAG) VERSION=$(VERSION) REVISION=$(REVISION) CREATED=$(CREATED) \
	  hack/image.sh bin/htc-static $(IMAGE_ARCHIVE) >/dev/null
	@echo "$(IMAGE):$(IMAGE_TAG) in $(IMAGE_ARCHIVE) ($$(du -h $(IMAGE_ARCHIVE) | cut -f1); haproxy $$(cat $$(hack/haproxy-rootfs.sh | tail -1)/haproxy.version))"

# The HAProxy of the htc image (Debian trixie, HAProxy 3.0 LTS), runnable on this
# machine: hack/haproxy-rootfs.sh builds the image's root filesystem once into
# ~/.cache/htc/rootfs/ and $(HAPROXY_DIR)/haproxy runs its haproxy. Every target
# that runs haproxy puts $(HAPROXY_DIR) first in PATH, so tests check with the
# same binary the image carries. Only when the package mirror is unreachable
# or the machine cannot build it (not root), and nothing is cached, does it
# fall back, loudly, to this machine's haproxy.
HAPROXY_DIR := $(CURDIR)/bin/image-haproxy
WITH_HAPROXY := PATH="$(HAPROXY_DIR):$$PATH:/usr/sbin"

haproxy: ## the image's HAProxy 3.0 for tests: bin/image-haproxy/haproxy (root filesystem cached in ~/.cache/htc)
	@mkdir -p $(HAPROXY_DIR)
	@rc=0; dir=$$(hack/haproxy-rootfs.sh | tail -1) || rc=$$?; \
	if [ $$rc -eq 0 ]; then ln -sfn "$$dir/bin/haproxy" $(HAPROXY_DIR)/haproxy; \
	elif [ $$rc -eq 3 ] || [ $$rc -eq 4 ]; then \
	  echo "########################################################################"; \
	  echo "## FALLBACK: no HAProxy 3.0 from the image (see the message above)."; \
	  echo "## Using this machine's haproxy instead: tests that expect HAProxy 3.0"; \
	  echo "## behaviour MAY FAIL, and no image can be built."; \
	  echo "########################################################################"; \
	  command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || { \
	    echo "installing haproxy with apt-get"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }; \
	  ln -sfn "$$(PATH="$$PATH:/usr/sbin" command -v haproxy)" $(HAPROXY_DIR)/haproxy; \
	else exit $$rc; fi
	@$(HAPROXY_DIR)/haproxy -v | sed -n 1p

# HAPROXY30 names the tests' haproxy when it is 3.0, for the policy's oracle
# tests (tokenizer, keyword inventory, map reader against the real binary).
# (no pipe into grep -q: under pipefail, haproxy -v killed by SIGPIPE once
# grep has its line made this empty, and the tests that need 3.0 skipped).
HAPROXY30 = $$(case "$$($(HAPROXY_DIR)/haproxy -v 2>/dev/null)" in *'version 3.0.'*) echo $(HAPROXY_DIR)/haproxy;; esac)

# test/conformance is a Go module of its own (its go.mod says why), which
# ./... does not reach: make test runs it beside the others, as one more
# package (it waits for the cluster lock like test/cluster).
test: haproxy lint test-assets ## everything: lint, unit, integration (real haproxy), CLI, e2e (test/e2e), cluster (test/cluster) and Gateway API conformance (test/conformance) tests, with -race
	(cd test/conformance && HTC_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) $(GO) test -race -count=1 -timeout 30m ./...) & conf=$$!; \
	rc=0; $(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) HTC_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) $(GO) test -race -count=1 -timeout 30m ./... || rc=$$?; \
	wait $$conf || rc=$$?; exit $$rc
	$(WITH_HAPROXY) $(GO) test -count=1 -run 'HeapIsBounded' ./pkg/haproxy/

# test-assets: what the tests build or install once and cache, before they
# run (so that no test waits for another's build under its timeout): the
# test cluster's apt packages (hack/cluster-deps.sh; root), the Kubernetes
# binaries, helm, the image and the cluster's images.
test-assets: image
	@hack/cluster-deps.sh
	@hack/k8s-assets.sh --cluster >/dev/null
	@hack/helm.sh >/dev/null
	@hack/cluster-images.sh >/dev/null

# test-repeat: COUNT runs of the unit and integration packages in one go test,
# in shuffled order; then COUNT runs in a row of the end-to-end packages that
# start controllers against a test API server (test/e2e, test/attacks), each a
# fresh `go test` as `make test` runs them (the chart e2e is left to make
# test). A failure prints its -test.shuffle seed: `go test -shuffle=SEED`
# repeats the order.
REPEAT = $(or $(COUNT),5)
E2E_PKGS := ./test/e2e/ ./test/attacks/
test-repeat: haproxy lint ## catch flakes: unit and integration packages with -race -count=COUNT -shuffle=on, then the e2e packages COUNT times in a row (COUNT=n, default 5)
	$(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) $(GO) test -race -count=$(REPEAT) -shuffle=on -timeout 60m \
	  $$($(GO) list ./... | grep -v -e '/test/e2e$$' -e '/test/attacks$$' -e '/test/chart/e2e$$')
	for i in $$(seq $(REPEAT)); do \
	  echo "end-to-end run $$i of $(REPEAT)"; \
	  $(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) $(GO) test -race -count=1 -shuffle=on -timeout 30m $(E2E_PKGS) || exit 1; \
	done

e2e: haproxy ## only the end-to-end suite: kube-apiserver + etcd on 127.0.0.1, the controller, kubectl denials (assets build once, ~5 min)
	$(WITH_HAPROXY) $(GO) test -race -count=1 -v -timeout 20m ./test/e2e/

.PHONY: chart-test
chart-test: haproxy ## only the Helm chart: helm lint, golden templates, server dry-run, helm install e2e (helm builds once, ~2 min)
	$(WITH_HAPROXY) $(GO) test -race -count=1 -v -timeout 15m ./test/chart/...

bench: haproxy ## benchmarks (benchstat-friendly); BENCH=regexp, COUNT=n
	$(WITH_HAPROXY) $(GO) test -run '^$$' -bench '$(or $(BENCH),.)' -benchmem -count $(or $(COUNT),1) -benchtime $(or $(BENCHTIME),3x) -timeout 60m ./...

# make bench-scale N=1000|10000 [WORKLOAD=gateway] [RUNS=n] [REQUESTS=n] [PROFILE=dir] [MEMORY_LIMIT=q]: admission
# at scale on a real API server (test/scale; skipped by make test and make bench). Loads N
# Ingresses (WORKLOAD=gateway: HTTPRoutes on one Gateway, under the Gateway
# library; WORKLOAD=gateway-tls: also 1,000 ListenerSets with a TLS
# listener each and a TLSRoute on each), Services and EndpointSlices, runs bin/htc controller as a process
# and measures CREATE/UPDATE latency, 16 concurrent clients, RSS and startup,
# each beside a bare haproxy -c of the published configuration in the same run;
# prints the table and writes it to BENCHMARKS.md (the block of that workload and N).
# PROFILE=dir also profiles the first run's controller (CPU while it writes
# the routes' status, heap at rest when ready and after the runs) and one more controller (heap when ready,
# CPU during CREATEs, then during config UPDATEs) into dir. MEMORY_LIMIT=q runs the controller with --memory-limit q.
# REQUESTS=n sends n sequential admissions of each kind per run (default 20; a p99 of 20 is their slowest).
# Takes minutes (N=10000: about 10 per run).
SCALE_CMD = make bench-scale N=$(or $(N),1000)$(if $(WORKLOAD), WORKLOAD=$(WORKLOAD))$(if $(RUNS), RUNS=$(RUNS))$(if $(REQUESTS), REQUESTS=$(REQUESTS))$(if $(PROFILE), PROFILE=$(PROFILE))$(if $(MEMORY_LIMIT), MEMORY_LIMIT=$(MEMORY_LIMIT))
bench-scale: build haproxy ## admission at scale on a real API server, ratios to haproxy -c, into BENCHMARKS.md (N=1000|10000, WORKLOAD=ingress|ingress-nginx|gateway|gateway-headers|gateway-tls, RUNS=n, REQUESTS=n, PROFILE=dir, MEMORY_LIMIT=q)
	$(WITH_HAPROXY) HTC_SCALE_N=$(or $(N),1000) HTC_SCALE_WORKLOAD=$(or $(WORKLOAD),ingress) HTC_SCALE_RUNS=$(or $(RUNS),1) HTC_SCALE_REQUESTS=$(or $(REQUESTS),20) HTC_SCALE_PROFILE=$(PROFILE) HTC_SCALE_MEMORY_LIMIT=$(MEMORY_LIMIT) \
	  HTC_SCALE_BIN=$(CURDIR)/$(BIN) HTC_SCALE_REPORT=$(CURDIR)/BENCHMARKS.md HTC_SCALE_COMMAND='$(SCALE_CMD)' \
	  $(GO) test -count=1 -v -timeout 4h -run '^TestScale$$' ./test/scale/

# make bench-propagation [WORKLOAD=ingress|gateway] [PRELOAD=n] [N=n] [PROFILE=file] [REPORT=file] [DEBOUNCE=duration] [LOG=file]:
# the field's route-propagation benchmark (gateway-api-bench's probe
# method) against a real API server, the controller and a real HAProxy on
# 127.0.0.1: PRELOAD routes (default 1000) are created first, then N routes
# (default 100) are applied one after another through the webhook, each as
# soon as the previous one answers 200 with its own header through HAProxy
# (polled every 5 ms); prints p50/p90/p99/max from the apply returning to
# that 200, beside the apply (admission) time, and fails if any valid
# apply was refused. LOG=file keeps the controller's debug log with a line per
# probed route. make test runs the same test at 300 routes, no preload.
bench-propagation: haproxy ## route propagation by the probe method (WORKLOAD=ingress|gateway, PRELOAD=n routes present, N=n probed, PROFILE=cpu.pprof, REPORT=file, LOG=file)
	$(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) HTC_PROBE_WORKLOAD=$(or $(WORKLOAD),ingress) HTC_PROBE_PRELOAD=$(or $(PRELOAD),1000) HTC_PROBE_N=$(or $(N),100) \
	  HTC_PROBE_PROFILE=$(PROFILE) HTC_PROBE_REPORT=$(REPORT) HTC_PROBE_DEBOUNCE=$(DEBOUNCE) HTC_PROBE_LOG=$(LOG) \
	  $(GO) test -count=1 -v -timeout 3h -run '^TestSustainedAppliesAreNeverRefused$$' ./test/e2e/

# make bench-endpoints [PRELOAD=n] [SERVICES=n] [N=n] [CHANGES=n] [RELOAD_ONLY=1] [REPORT=file]:
# endpoint propagation and reloads during endpoint churn (issue 32) against a
# real API server, the controller in-process and a real HAProxy on
# loopback. PRELOAD Ingress routes (default 1000) go to SERVICES Services
# (default a tenth of them, at most 100) of two ready endpoints each; each
# endpoint is an HTTP server of the test on its own loopback address. Then
# (a) N times (default 100) one endpoint of an otherwise empty Service is
# added ready or turns ready, timed from the EndpointSlice update
# returning to HAProxy's first answer from it (polled every 5 ms); (b)
# CHANGES endpoint changes (default 1000: adds, readiness flips, removals)
# back to back. Prints the propagation percentiles, the reloads (the
# controller's metric and HAProxy's show proc), HAProxy's workers after
# the churn, the server changes applied at run time and the test
# process's CPU seconds per change, and fails on any reload. RELOAD_ONLY=1
# runs the controller reload-only for comparison (and so fails on its
# reloads, after the report). make test runs it at 50 routes, 6 probes,
# 20 changes.
bench-endpoints: haproxy ## endpoint propagation and reloads during endpoint churn (PRELOAD=n routes, SERVICES=n, N=n probed, CHANGES=n, RELOAD_ONLY=1, REPORT=file)
	$(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) HTC_ENDPOINTS_PRELOAD=$(or $(PRELOAD),1000) HTC_ENDPOINTS_SERVICES=$(SERVICES) \
	  HTC_ENDPOINTS_N=$(or $(N),100) HTC_ENDPOINTS_CHANGES=$(or $(CHANGES),1000) HTC_ENDPOINTS_RELOAD_ONLY=$(RELOAD_ONLY) HTC_ENDPOINTS_REPORT=$(REPORT) \
	  $(GO) test -count=1 -v -timeout 3h -run '^TestEndpointChangesAreServedWithoutReload$$' ./test/e2e/

# make fuzz [FUZZTIME=d]: run every fuzz target for FUZZTIME (default 5m)
# each, one after another; make test runs their seed corpora only. A
# failing input is written to the package's testdata/fuzz/<target>/, where
# it becomes part of the seed corpus: commit it with the fix.
# FUZZ_TARGETS: every fuzz target of the repository (hack/fuzz-targets.sh reads
# them from the source), so that a target added or moved is fuzzed without an edit here.
FUZZ_TARGETS = $(shell hack/fuzz-targets.sh)
fuzz: haproxy ## run every fuzz target for FUZZTIME each (default 5m); make test runs only their seed corpora
	@test -n "$(FUZZ_TARGETS)" || { echo "make fuzz: found no fuzz target (func FuzzX in a _test.go file tracked by git)" >&2; exit 1; }
	@for t in $(FUZZ_TARGETS); do \
	  pkg=$${t%%:*}; name=$${t##*:}; echo "==> $$name ($$pkg, $(or $(FUZZTIME),5m))"; \
	  $(WITH_HAPROXY) HTC_HAPROXY30=$(HAPROXY30) $(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(or $(FUZZTIME),5m) $$pkg || exit 1; \
	done

# STATICCHECK: the staticcheck release make lint runs (go run fetches and
# builds it once, then the build cache has it).
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
lint: ## gofmt, go vet and staticcheck
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...
	cd test/conformance && $(GO) vet ./... && $(GO) run $(STATICCHECK) ./...

generate: ## regenerate deepcopy and the CRD from pkg/config
	$(GO) tool controller-gen object paths=./pkg/config/... crd:crdVersions=v1 output:crd:dir=./charts/htc/crds

cluster-test: test-assets ## only the cluster tests: the image and the chart in a real single-node cluster (test/cluster; root)
	HTC_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) $(GO) test -count=1 -v -timeout 30m ./test/cluster/

# make conformance [RUN=regexp] [FEATURES=a,b]: the upstream Gateway API conformance suite
# (GATEWAY-HTTP and GATEWAY-GRPC) against htc in the test cluster (test/conformance; root);
# writes the suite's report to docs/conformance/ (full runs only; FEATURES
# claims more features to try, and keeps no report). make test runs the
# suite too (test/conformance; skipped with -short), keeping no report.
conformance: test-assets ## the Gateway API conformance suite (GATEWAY-HTTP, GATEWAY-GRPC) in the test cluster, report in docs/conformance/ (RUN=regexp of test names, FEATURES=more to claim; root)
	cd test/conformance && HTC_CONFORMANCE_REPORT=1 HTC_CONFORMANCE_RUN='$(RUN)' HTC_CONFORMANCE_FEATURES='$(FEATURES)' HTC_IMAGE_ARCHIVE=$(CURDIR)/$(IMAGE_ARCHIVE) $(GO) test -count=1 -v -timeout 60m .

cluster-demo: test-assets ## htc as users install it, in a real single-node cluster on this machine (root): helm install, a request through HAProxy, a denial, uninstall
	hack/cluster-demo.sh $(IMAGE_ARCHIVE)

cluster-up: ## start the test cluster (root); prints its kubeconfig (see the README)
	@hack/cluster-up.sh

cluster-down: ## stop the test cluster and remove everything it made
	@hack/cluster-down.sh

demo: build haproxy ## htc end to end on loopback: test apiserver, controller + webhook, HAProxy, a backend; a request and a denial
	$(WITH_HAPROXY) ./hack/demo.sh $(BIN)

demo-offline: build haproxy ## no cluster at all: render the example and show admission decisions with htc check
	$(WITH_HAPROXY) ./hack/demo-offline.sh $(BIN)

clean: ## remove build outputs
	rm -rf bin
