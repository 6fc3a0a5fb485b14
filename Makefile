# Bindery — every command a person runs is a target here.
SHELL := /bin/bash
GO ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X github.com/bindery-nas/bindery/internal/version.Version=$(VERSION)
BIN := bin
VAR := var

.PHONY: all deps build test vet fmt-check lint run bench bench-smoke chaos fuzz clean

all: build

deps:
	@./scripts/deps.sh

build: deps
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/controld ./cmd/controld
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN)/workerd ./cmd/workerd

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

vet: deps
	$(GO) vet ./...

# The README's test command; .ci/run calls exactly this.
test: deps fmt-check vet
	$(GO) test -race -timeout 15m ./...

lint: fmt-check vet

clean:
	rm -rf $(BIN) $(VAR)
