# ibsm — build, run the shipped example, test.
# `make run` and `make test` are the two commands the README promises work on
# a fresh machine; .ci/run calls `make test`.

GO      ?= go
BIN     := bin
PLUGINS := $(notdir $(wildcard plugins/[a-z]*))
EXAMPLE ?= conf/examples/ft2-648.hcl

.PHONY: all build plugins run test unit hygiene deps sdk-isolation sdk-vet sdk-test sdk-example fuzz bench bench-opensm experiments experiments-lids experiments-vls experiments-ftcompare experiments-growth experiments-race14 experiments-rrgphase experiments-linkdown experiments-deadpush clean

all: build

# One go build for ibsm and every plugin: the toolchain compiles packages
# in parallel and links once per binary (19 sequential builds took minutes on
# a fresh machine).
build:
	@mkdir -p $(BIN)/.stage
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "-X main.commit=$$(git rev-parse --short HEAD 2>/dev/null)" \
		-o $(BIN)/.stage/ ./host/cmd/ibsm $(addprefix ./plugins/,$(filter-out lib,$(PLUGINS)))
	@mv $(BIN)/.stage/ibsm $(BIN)/ibsm
	@for p in $(filter-out lib,$(PLUGINS)); do mv $(BIN)/.stage/$$p $(BIN)/ibsm-plugin-$$p; done
	@rmdir $(BIN)/.stage
	cd sdk && $(GO) build ./...

plugins: build

# The main job: ibsm on the embedded simulated fabric (2-level fat tree of
# 36-port switches, 648 CAs), brought up once.
run: build
	$(BIN)/ibsm run --once --config $(EXAMPLE)

# Everything the tests need, then every test: the main module's, then the
# SDK module's and the example plugin's (go test ./... in the main module
# skips nested modules).
test: hygiene deps sdk-isolation build sdk-vet sdk-example
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 30m ./...
	$(MAKE) sdk-test

# The hygiene gate (integration/hygiene/gate.sh): gofmt -l, go mod tidy -diff
# and staticcheck over the three modules (main, sdk, the example plugin), and
# deadcode: nothing unreachable unless integration/hygiene/deadcode-allow.txt
# says why. The tools are pinned here and run with `go run module@version`
# from the Go module proxy; the build cache keeps them after the first run.
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
DEADCODE    := golang.org/x/tools/cmd/deadcode@v0.52.0
# HYGIENE_SKIP: an extended regexp of paths whose findings do not fail the
# gate, for work in flight only; keep it empty on main.
HYGIENE_SKIP :=
hygiene:
	GO='$(GO)' STATICCHECK='$(STATICCHECK)' DEADCODE='$(DEADCODE)' SKIP_PATHS='$(HYGIENE_SKIP)' sh integration/hygiene/gate.sh

# The SDK is its own module (sdk/go.mod): vet and test it from inside.
sdk-vet:
	cd sdk && $(GO) vet ./...

sdk-test:
	cd sdk && $(GO) test -count=1 -timeout 10m ./...

# The example plugin is its own module (sdk/examples/minimal-engine) built
# against the SDK alone: build it there, run its conformance test there.
# integration/sdk_example_test.go brings a fabric up with the binary.
EXAMPLE_PLUGIN := sdk/examples/minimal-engine
sdk-example:
	@mkdir -p $(BIN)
	cd $(EXAMPLE_PLUGIN) && $(GO) vet ./... && CGO_ENABLED=0 $(GO) build -trimpath -o $(CURDIR)/$(BIN)/ibsm-example-minimal-engine . && $(GO) test -count=1 ./...

# The fast loop: every test but the end-to-end scenarios in integration/,
# in -short mode: tests that build plugin binaries or work at full scale
# (the largest fabrics, files and group counts) skip themselves; make test
# runs them all, without -short. Both modules' packages (the sdk's through
# the main module's replace). integration/unit.sh keeps the test binaries
# in $(BIN)/unit (about 1 GB) and relinks only those whose code changed:
# go test relinked all 72 on every run, four fifths of a run's CPU. The
# longest packages start first, 8 binaries at a time, each with
# -parallel 8. UNIT_ARGS passes flags on, e.g. UNIT_ARGS=-test.run=Election.
unit:
	GO='$(GO)' UNIT_BIN='$(BIN)/unit' sh integration/unit.sh

deps:
	@./integration/setup.sh

# sdk/ is what vendors build against: it must not pull in the host. It is
# its own module, so list its packages (tests included) from inside it; the
# only ibsm module it may need is itself.
sdk-isolation:
	@deps=$$(cd sdk && $(GO) list -deps -test ./... && $(GO) list -m all) || { echo "sdk: go list failed: the sdk module must build on its own (no host imports)"; exit 1; }; \
	leaks=$$(echo "$$deps" | grep -E '^github.com/ibsm/' | grep -Ev '^github.com/ibsm/ibsm/sdk([/._ ]|$$)'); \
	if [ -n "$$leaks" ]; then echo "sdk/ depends on the host module:"; echo "$$leaks"; exit 1; fi; \
	echo "sdk isolation ok"

# Short fuzzing pass over every decoder (go test -fuzz runs one target at a time).
# The sdk module's decoders are fuzzed from inside it.
fuzz:
	@for mod in . sdk; do \
		for pkg in $$(cd $$mod && $(GO) list ./...); do \
			for f in $$(cd $$mod && $(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
				echo "fuzz $$pkg $$f"; (cd $$mod && $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime 15s $$pkg) || exit 1; \
			done; \
		done; \
	done

# Benchmarks (not tests): bring-up of the 3-level fat tree of 36-port switches.
bench: build
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 60m ./integration/

# The race against OpenSM 3.3.23 on ibsim (not a test): every fat tree, both
# SMs on fresh ibsim instances, Markdown table on stdout. RACE_FLAGS adds
# flags, e.g. RACE_FLAGS='-topos ft2-36 -runs 1'.
bench-opensm: deps
	$(GO) run ./integration/race $(RACE_FLAGS)

# The papers' experiments (not tests; CPU-heavy: about 11 and 13 minutes on
# 2 vCPUs), and the fat-tree engines compared through the host (needs the
# plugins built; FTCOMPARE_FLAGS as in BENCHMARKS.md). The programs, their
# READMEs and results live in integration/experiments/.
FTCOMPARE_FLAGS ?= --trees ft2-648
experiments: experiments-lids experiments-vls

experiments-lids:
	$(GO) run ./integration/experiments/lidtables -out integration/experiments/lidtables/RESULTS.md

experiments-vls:
	$(GO) run ./integration/experiments/vlfigs -sizes 64,256 -degrees 4-12 -seeds 100 -out integration/experiments/vlfigs/RESULTS.md

experiments-ftcompare: build
	$(GO) run ./integration/experiments/ftcompare --plugins $(BIN) $(FTCOMPARE_FLAGS)

# Bring-up as a growth curve on full 3-level fat trees (ft3-24 .. ft3-56) with
# OpenSM beside it; GROWTH_FLAGS as in BENCHMARKS.md. The PNG needs
# python3-matplotlib.
GROWTH_FLAGS ?= -radix 24,36,48,56 -runs 3 -opensm 24,36 -ibsim 24,36
GROWTH_OUT ?= /tmp/ibsm-growth
experiments-growth: build
	$(GO) run ./integration/experiments/growth -bin $(BIN) -out $(GROWTH_OUT) $(GROWTH_FLAGS)
	/usr/bin/python3 integration/experiments/growth/plot.py $(GROWTH_OUT)/results.json integration/experiments/growth/growth.png

# Issue 14's table: ibsm next to OpenSM 3.3.23 on ibsim, same run, every
# acceptance fabric (about 1.5 h on 2 vCPUs, most of it OpenSM on the
# 10,000-CA graph); RACE14_FLAGS as in its README, e.g. '-fabrics hyperx -runs 1'.
RACE14_FLAGS ?= -runs 3
experiments-race14: build
	$(GO) run ./integration/experiments/race14 -bin $(BIN) $(RACE14_FLAGS)

# Issue 14's sssp + acro row: the host's routing phase over seeded random
# 12-regular graphs (512 switches); RRGPHASE_FLAGS as in its README.
RRGPHASE_FLAGS ?= -seeds 1-10 -runs 3
experiments-rrgphase: build
	$(GO) run ./integration/experiments/rrgphase -bin $(BIN) $(RRGPHASE_FLAGS)

# Issue 16's "one link down -> reprogrammed": a cable down and up again on
# full 3-level fat trees, timed through the sweep loop; LINKDOWN_FLAGS as in
# its README, e.g. '-radix 24,36,56 -runs 3'.
experiments-linkdown: build
	$(GO) run ./integration/experiments/linkdown -bin $(BIN) $(LINKDOWN_FLAGS)

# A cable that dies as a bring-up's tables go out: how long the sweep takes
# to fail, and the sweep after it; DEADPUSH_FLAGS as in its README.
experiments-deadpush: build
	$(GO) run ./integration/experiments/deadpush -bin $(BIN) $(DEADPUSH_FLAGS)

clean:
	rm -rf $(BIN)

# The Debian package (dist/ibsm_<version>_<arch>.deb), built with nfpm as a
# Go module: see host/cmd/ibsm-deb.
.PHONY: deb
deb: build
	$(GO) run ./host/cmd/ibsm-deb --bin $(BIN) --out dist
