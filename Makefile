# ds — see README.md. `make test` is what CI runs (.ci/run).
GO        ?= go
BIN       ?= bin/ds
PKGS      := ./...
FUZZTIME  ?= 30s
FUZZMINIMIZE ?= 5s
# TESTTIMEOUT bounds each test binary of make race/scripts/trials: go
# test's default of 10 min is below what the testscripts take on a loaded
# machine (a hang still fails, later).
TESTTIMEOUT ?= 30m

.PHONY: all build test fmt-check vet race scripts sweeps trials lint bench fuzz demo update tidy-check clean

all: build

## build: bin/ds and, beside it, bin/ds-natsd, the NATS server ds collect
## runs as its child (ds does not link nats-server: issue 23 item 4).
build:
	$(GO) build -o $(BIN) ./cmd/ds
	$(GO) build -o $(dir $(BIN))ds-natsd ./cmd/ds-natsd

## test: formatting, vet, go.mod/go.sum tidy (the main module's and
## scripts/readbench's), then every test (unit, golden, fuzz seed
## corpora, property tests) under the race detector; the testscripts of
## cmd/ds, which run ds as a process a few hundred times, the decoding
## sweeps of pkg/segments and the 50 kill -9 trials of ds ingest without
## it (under it, make race runs 10 trials and skips the sweeps).
## TEST_LINT=lint adds staticcheck after vet (make lint); CI runs make lint
## after make test (.ci/run).
TEST_LINT ?=
test: fmt-check vet tidy-check $(TEST_LINT) race scripts trials

fmt-check:
	@out="$$(gofmt -l . | grep -v '^testdata/' || true)"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 -timeout $(TESTTIMEOUT) $$($(GO) list $(PKGS) | grep -v '/cmd/ds$$')
	$(GO) test -race -count=1 -timeout $(TESTTIMEOUT) -skip '^TestScript$$' ./cmd/ds

## scripts: the end-to-end testscripts (cmd/ds/testdata/script), and the
## decoding sweeps of pkg/segments (every cut, every flipped byte, every
## flipped header bit), in one go test run so that the two packages run
## side by side: both without the race detector, which slows them several
## times and has nothing to find in them (ds runs as a process; the sweeps
## share no goroutines, and skip under it). make sweeps runs the sweeps
## alone.
scripts:
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) -run '^(TestScript|TestTruncationSweep|TestBitFlipSweep|TestFlipEveryHeaderBit|TestFlipLargeHeader)$$' ./cmd/ds ./pkg/segments

sweeps:
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) -run '^(TestTruncationSweep|TestBitFlipSweep|TestFlipEveryHeaderBit|TestFlipLargeHeader)$$' ./pkg/segments

## trials: the 50 seeded kill -9 trials of ds ingest, without the race
## detector (under it, make race runs 10 of them).
trials:
	$(GO) test -count=1 -timeout $(TESTTIMEOUT) -run '^TestStoreKillTrials$$' ./cmd/ds

lint:
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 -checks all,-ST1000,-ST1003 $(PKGS)

## bench: the hot-path benchmarks (see scripts/ for whole-command benchmarks).
bench:
	$(GO) test -run='^$$' -bench=. -benchmem $(PKGS)

## fuzz: run every fuzz target for FUZZTIME each. Each new input is
## minimised for at most FUZZMINIMIZE (go's default, 60s, stalled the
## slower targets for minutes at a time).
fuzz:
	@set -e; for pkg in $$($(GO) list ./pkg/... ./cmd/...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
	    echo "== $$pkg $$f"; $(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) -fuzzminimizetime=$(FUZZMINIMIZE) $$pkg; \
	  done; done

## demo: the main job on an embedded default.
demo: build
	@bash scripts/demo.sh $(BIN)

## update: regenerate golden files, fixtures and testscript outputs; review the diff.
update:
	DS_UPDATE=1 $(GO) test -count=1 $(PKGS)

## tidy-check: go mod tidy changes nothing, in the main module nor in
## scripts/readbench (its own module, which builds against this one:
## its requirements must follow the main module's versions).
tidy-check:
	$(GO) mod tidy && git diff --exit-code go.mod go.sum
	cd scripts/readbench && $(GO) mod tidy && git diff --exit-code go.mod go.sum

clean:
	rm -rf bin
