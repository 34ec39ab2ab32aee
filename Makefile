# htc — make targets. `make demo` and `make test` are the two a new user needs.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
GO ?= go
BIN := bin/htc
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
export GOFLAGS ?= -buildvcs=false

.PHONY: all build test unit race e2e bench lint generate demo demo-offline haproxy clean help

all: build

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-10s %s\n", $$1, $$2}'

build: ## build bin/htc
	$(GO) build -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/htc

haproxy: ## install haproxy with apt-get when it is missing
	@command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || { \
	  echo "installing haproxy with apt-get"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq haproxy >/dev/null; }
	@PATH="$$PATH:/usr/sbin" haproxy -v | sed -n 1p

test: haproxy lint ## everything: lint, unit, integration (real haproxy), CLI and e2e (test/e2e) tests, with -race
	PATH="$$PATH:/usr/sbin" $(GO) test -race -count=1 -timeout 30m ./...

e2e: haproxy ## only the end-to-end suite: kube-apiserver + etcd on 127.0.0.1, the controller, kubectl denials (assets build once, ~5 min)
	PATH="$$PATH:/usr/sbin" $(GO) test -race -count=1 -v -timeout 20m ./test/e2e/

.PHONY: chart-test
chart-test: haproxy ## only the Helm chart: helm lint, golden templates, server dry-run, helm install e2e (helm builds once, ~2 min)
	PATH="$$PATH:/usr/sbin" $(GO) test -race -count=1 -v -timeout 15m ./test/chart/...

bench: haproxy ## benchmarks (benchstat-friendly); BENCH=regexp, COUNT=n
	PATH="$$PATH:/usr/sbin" $(GO) test -run '^$$' -bench '$(or $(BENCH),.)' -benchmem -count $(or $(COUNT),1) -benchtime $(or $(BENCHTIME),3x) -timeout 60m ./...

lint: ## gofmt and go vet
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	  if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

generate: ## regenerate deepcopy and the CRD from pkg/config
	$(GO) tool controller-gen object paths=./pkg/config/... crd:crdVersions=v1 output:crd:dir=./charts/htc/crds

demo: build haproxy ## htc end to end on loopback: test apiserver, controller + webhook, HAProxy, a backend; a request and a denial
	PATH="$$PATH:/usr/sbin" ./hack/demo.sh $(BIN)

demo-offline: build haproxy ## no cluster at all: render the example and show admission decisions with htc check
	PATH="$$PATH:/usr/sbin" ./hack/demo-offline.sh $(BIN)

clean: ## remove build outputs
	rm -rf bin
