# Bindery — every command a person runs is a target here.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/bindery-nas/bindery/internal/version.Version=$(VERSION)
BIN := bin
VAR := var

.PHONY: chaos-asan all deps test-deps docker-base docker-base-background build test test-postgres vet fmt-check lint run install docker bench bench-smoke chaos fuzz clean

all: build

# System packages: libvips, 7zip, b3sum, … and, for the tests that need them,
# chromium (dashboard), systemd (unit verification), docker-compose (config),
# debootstrap (base images), QEMU, busybox and a kernel (the clock-skew
# test's virtual machines).
deps:
	@./scripts/deps.sh

test-deps:
	@./scripts/deps.sh chromium systemd compose docker vm

# The base images the container tests build on (no registry is needed):
# debian:bookworm-slim, golang:1.26-bookworm and a systemd host, made with
# debootstrap and docker import, cached per machine. Needs root and Docker.
docker-base:
	./deploy/testdata/mkbase.sh

# make test starts docker-base in the background, so the images are built
# while vet and the other packages run; the deploy tests wait for it (the
# script holds a lock per image) and build whatever it failed to.
# It runs first, beside the package installs, in two chains: golang, the
# longest (a warm build of the tree) and what every compose test needs,
# beside debian, then postgres (built on debian), then the systemd host.
docker-base-background:
	@if [ "$$(id -u)" = 0 ] && docker info >/dev/null 2>&1; then \
	  ./scripts/deps.sh --only docker && mkdir -p $(VAR) && \
	  echo "docker-base: building in the background, log in $(VAR)/mkbase.log" && \
	  { nohup sh -c 'b=./deploy/testdata/mkbase.sh; $$b golang & $$b debian postgres systemd; wait' \
	    >$(VAR)/mkbase.log 2>&1 & } \
	fi

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/controld ./cmd/controld
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/workerd ./cmd/workerd

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: deps
	$(GO) vet ./...
	$(GO) vet -tags bindery_testexec ./cmd/workerd

# The README's test command; .ci/run calls exactly this.
# go test starts the two longest packages first (the crash harness and the
# container tests, about seven minutes each), so that neither starts last
# and holds the run open alone; two packages run at a time (three starved
# the daemons these packages start). go vet, bench-smoke and
# test-postgres run beside go test at a lower priority: they assert nothing
# about time, while the deploy tests wait for the base images that the
# background build (docker-base-background) makes. The timeout is a guard,
# not the budget.
TEST_FIRST := ./internal/chaos ./deploy
test: docker-base-background deps test-deps fmt-check
	@mkdir -p $(VAR); nice -n 10 $(MAKE) --no-print-directory vet >$(VAR)/vet.log 2>&1 & vet=$$!; \
	nice -n 19 $(MAKE) --no-print-directory bench-smoke >$(VAR)/bench-smoke.log 2>&1 & bench=$$!; \
	nice -n 19 $(MAKE) --no-print-directory test-postgres >$(VAR)/test-postgres.log 2>&1 & pg=$$!; \
	$(GO) test -race -timeout 30m $(TEST_FIRST) ./...; rc=$$?; \
	wait $$vet; vrc=$$?; echo "--- make vet (log in $(VAR)/vet.log)"; cat $(VAR)/vet.log; \
	wait $$pg; prc=$$?; echo "--- make test-postgres (log in $(VAR)/test-postgres.log)"; cat $(VAR)/test-postgres.log; \
	wait $$bench; brc=$$?; echo "--- make bench-smoke (log in $(VAR)/bench-smoke.log)"; cat $(VAR)/bench-smoke.log; \
	[ $$rc -eq 0 ] && [ $$vrc -eq 0 ] && [ $$prc -eq 0 ] && [ $$brc -eq 0 ]

# The suites that run on both engines, on PostgreSQL (a private server
# each test binary starts; see internal/pgtest). The store and the engine,
# whose Go code differs by engine (pgx, LISTEN, the clock), run under the
# race detector; the others' Go code is the same on both engines and runs
# under it on SQLite in the main run, so here they check the SQL only, at
# a fraction of the CPU. make test runs them at nice 19 beside the main
# run, where a suite can wait for the CPU most of the run (the API's took
# 20 minutes in one such run, 7 alone): the timeout guards against a hang,
# as the main run's does, and is not the budget.
POSTGRES_RACE_SUITES := ./internal/store ./internal/store/reading ./internal/store/feed ./internal/store/hashes ./internal/store/scanning ./internal/store/duplicates ./internal/store/thumbnails ./internal/store/queue ./internal/store/catalog ./internal/store/leases ./internal/engine
POSTGRES_SUITES := ./internal/store/pgadmin ./internal/api ./internal/trash ./internal/scan ./internal/hashing ./internal/thumbs ./cmd/workerd
test-postgres: deps
	BINDERY_TEST_DB=postgres $(GO) test -race -timeout 30m $(POSTGRES_RACE_SUITES); rc=$$?; \
	BINDERY_TEST_DB=postgres $(GO) test -timeout 30m $(POSTGRES_SUITES) && exit $$rc

# The performance report: every workload beside the tool users compare it
# with, measured in the same run, written to docs/PERFORMANCE.md.
BENCH_SCALE ?= full
bench: deps
	$(GO) run ./cmd/benchd -scale $(BENCH_SCALE) -write docs/PERFORMANCE.md

# "Does it run" check of the bench driver at the small scale, each workload
# at one size (no timing assertion); part of make test.
bench-smoke: deps
	$(GO) run ./cmd/benchd -scale small -one-size

FUZZTIME ?= 5m
# Every fuzz target for FUZZTIME each (go test -fuzz takes one target a run).
fuzz:
	for t in FuzzOpenZip FuzzOpenRar FuzzOpen7z; do \
	  $(GO) test ./internal/archive -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; done
	$(GO) test ./internal/archive/ppmd8 -run '^$$' -fuzz '^FuzzPPMd8$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/comicinfo -run '^$$' -fuzz '^FuzzComicInfo$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/natsort -run '^$$' -fuzz '^FuzzNatsortLess$$' -fuzztime $(FUZZTIME)
	$(GO) test ./internal/pagesig -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime $(FUZZTIME)
	for t in FuzzDecodeJobCursor FuzzDecodeDuplicateGroupCursor FuzzDecodeIDCursor; do \
	  $(GO) test ./internal/api/internal/httpx -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; done
	$(GO) test ./protocol -run '^$$' -fuzz '^FuzzParseGroupKey$$' -fuzztime $(FUZZTIME)
	for t in FuzzValidate FuzzNormalize; do \
	  $(GO) test ./internal/settings -run '^$$' -fuzz "^$$t$$" -fuzztime $(FUZZTIME) || exit 1; done

# The crash/fault harness at full size (a smoke run is part of make test).
# The full chaos run, then the delete state machine's property test at
# 2,000 cases (make test runs 100 on SQLite and 30 on PostgreSQL).
chaos:
	$(GO) run ./cmd/chaos -files 5000 -kills 50 -controld-kills 4
	$(GO) test ./internal/trash -run '^TestDeleteStateMachine$$' -count 1 -rapid.checks 2000

# The crash harness's smoke with the test and both daemons built with
# AddressSanitizer (Go, SQLite, liblzma and our C instrumented; libvips is
# not, but its double frees are caught): a memory error names its stack
# instead of corrupting the heap for a later crash.
chaos-asan:
	GOFLAGS=-asan ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 G_SLICE=always-malloc \
		$(GO) test ./internal/chaos -run '^TestChaosSmoke$$' -count 1 -v -timeout 30m

# Build, start both daemons on ./var and index LIBRARY= (or a sample).
run: build
	$(GO) build -o $(BIN)/bindery-sample ./cmd/bindery-sample
	LIBRARY="$(LIBRARY)" ./scripts/run.sh

lint: fmt-check vet

# Lay out binaries, user, dirs and systemd units (DESTDIR/PREFIX aware).
install: build
	./deploy/install.sh

docker:
	docker build -f deploy/Dockerfile --build-arg VERSION=$(VERSION) -t bindery:$(VERSION) .

clean:
	rm -rf $(BIN) $(VAR)
