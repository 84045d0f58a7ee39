# incident-replay. `make demo` runs the scorecard on the embedded catalogue (no Docker);
# `make test` runs vet and every test, the Ginkgo suites included. Both first run
# scripts/deps.sh, which installs what they need (as root on Debian) or names it.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -eu -o pipefail -c

export TESTCONTAINERS_RYUK_DISABLED := true
export TESTCONTAINERS_HOST_OVERRIDE := 127.0.0.1

GO        ?= go
BIN       := $(CURDIR)/bin
REPORTS   := $(CURDIR)/reports
SPEED     ?= 0
FUZZTIME  ?= 2m
UNIT_PKGS  = $(shell $(GO) list ./... | grep -v /e2e)

# go-nvml is the one package whose C compiles warn (its cgo code calls deprecated NVML
# functions); scripts/cc-nvml.sh silences that warning for it alone. Only where a C compiler
# exists: a CC that resolves turns cgo on.
# A sub-make inherits both variables: it must not take the wrapper for the real compiler.
ifeq ($(origin NVML_REAL_CC),undefined)
CGO_CC := $(if $(filter environment command line,$(origin CC)),$(CC),gcc)
ifneq ($(shell command -v $(firstword $(CGO_CC)) 2>/dev/null),)
export NVML_REAL_CC := $(CGO_CC)
export CC := $(CURDIR)/scripts/cc-nvml.sh
endif
endif

.PHONY: all build test vet unit e2e demo lint bench fuzz image gpu-acceptance clean

all: build

build:
	@mkdir -p $(BIN)
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags='-s -w' -o $(BIN)/fakesglang ./cmd/fakesglang
	$(GO) build -o $(BIN)/llmwait ./cmd/llmwait
	$(GO) build -o $(BIN)/incident-replay ./cmd/incident-replay

vet:
	$(GO) vet ./...

unit:
	$(GO) test -race -count=1 $(UNIT_PKGS)

# Ginkgo suites, run by the ginkgo CLI pinned in go.mod (`go tool ginkgo`) on E2E_PROCS
# processes; Serial specs (verdicts on a compressed wall clock) run alone at the end. LABELS
# splits the suite across CI jobs, e.g. LABELS=container and LABELS='!container'. gpu specs
# report themselves skipped without NVML.
E2E_PROCS ?= 2
LABELS    ?=
e2e: build
	@mkdir -p $(REPORTS)
	$(GO) tool ginkgo --procs=$(E2E_PROCS) --timeout=40m $(if $(LABELS),--label-filter='$(LABELS)') \
	  --junit-report=e2e-junit.xml --output-dir=$(REPORTS) ./e2e

# deps.sh runs first and alone: what it installs (a C compiler) changes how the rest builds.
test:
	@bash scripts/deps.sh test
	@$(MAKE) --no-print-directory vet unit e2e

demo:
	@bash scripts/deps.sh demo
	@$(MAKE) --no-print-directory build
	@mkdir -p $(REPORTS)
	$(BIN)/incident-replay score --speed $(SPEED) --markdown $(REPORTS)/scorecard.md --junit $(REPORTS)/scorecard-junit.xml --report $(REPORTS)/report

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

bench:
	$(GO) test -run '^$$' -bench . -benchmem $(UNIT_PKGS)
	bash bench/replay.sh
	bash bench/parse.sh
	bash bench/http.sh
	bash bench/detection.sh

# Each fuzz target runs FUZZTIME; corpora live in the packages' testdata/fuzz.
fuzz:
	@$(GO) list -f '{{.ImportPath}} {{.Dir}}' $(UNIT_PKGS) | while read -r pkg dir; do \
	  for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$dir/*_test.go 2>/dev/null | sed 's/func //'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg; \
	  done; done

# Builds the FROM scratch fakesglang image from this tree (tagged by content and checkout) and prints the tag.
image:
	$(GO) run ./bench/image

# Real GPU host only (docs/gpu-lab.md): needs NVML, cgo and SGLANG_LAUNCH; skips with the reason otherwise.
gpu-acceptance:
	CGO_ENABLED=1 $(GO) test -count=1 -timeout 3h ./e2e/ -ginkgo.label-filter=gpu -ginkgo.v

# Only this checkout's fakesglang images (labelled host:path) and the containers made from
# them: another checkout's suite may be starting a container from its own at any moment.
clean:
	rm -rf $(BIN) $(REPORTS)
	-imgs=$$(docker images -q --filter label=org.incident-replay.tree=$$(hostname):$(CURDIR) | sort -u); \
	for img in $$imgs; do docker ps -aq --filter ancestor=$$img | xargs -r docker rm -f; done; \
	if [ -n "$$imgs" ]; then docker rmi -f $$imgs; fi
