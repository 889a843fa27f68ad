# The two commands of the README: `make run` starts the scheduler on its embedded default
# (embedded etcd + embedded SQLite, sample jobs); `make test` runs the whole test suite.

GO       ?= go
CONFIG   ?= configs/scheduler.yaml
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/scheduler

.PHONY: all build run test lint vet fmt-check race bench fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/scheduler

# run: apply the migrations (idempotent), then start the daemon. With the sample configuration
# that is the embedded default: etcd and SQLite in ./data.
run: build
	$(BIN) migrate --config $(CONFIG)
	$(BIN) run --config $(CONFIG)

# test: formatting, vet, then every package under the race detector, starting its own real
# etcd and PostgreSQL servers.
test: fmt-check vet race

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet ./...

race:
	$(GO) test -race -count=1 -timeout 25m ./...

lint: fmt-check vet
	@command -v staticcheck >/dev/null && staticcheck ./... || echo "staticcheck not installed; skipped"

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoadConfig -fuzztime 30s ./cmd/scheduler
	$(GO) test -run '^$$' -fuzz FuzzParseSchedule -fuzztime 30s ./internal/jobs

clean:
	rm -rf bin
