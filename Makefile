# The two commands of the README: `make run` starts the scheduler on its embedded default
# (embedded etcd + embedded SQLite, sample jobs); `make test` runs the whole test suite.

GO       ?= go
CONFIG   ?= configs/scheduler.yaml
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT   ?= $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN      := bin/scheduler

.PHONY: all build run test soak lint vet fmt-check race bench bench-failover bench-election bench-fire \
	bench-runner bench-fence bench-pgbench bench-catchup bench-prune fuzz clean

all: build

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/scheduler

# run: apply the migrations (idempotent), then start the daemon. With the sample configuration
# that is the embedded default: etcd and SQLite in ./data.
run: build
	$(BIN) migrate --config $(CONFIG)
	@echo "Starting one replica of $(CONFIG) in the foreground (Ctrl-C stops it). It serves HTTP on the"
	@echo "config's http.addr (the sample's: http://127.0.0.1:8080/status, /table, /metrics, /readyz)."
	@echo "In another terminal, try:"
	@echo "  $(BIN) status --config $(CONFIG)"
	@echo "  $(BIN) history heartbeat --config $(CONFIG)"
	@echo "  $(BIN) trigger heartbeat --config $(CONFIG)"
	@echo "  $(BIN) next invoices -n 3 --config $(CONFIG)"
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

# soak: the nemesis of the end-to-end suite (TestNemesis) for an hour per election backend (etcd,
# postgres, zookeeper, redis), about four and a half hours in all; `make test` runs it for under
# three minutes. Replay a run with its printed seed: NEMESIS_FLAGS='-nemesis.seed=N'.
SOAK_DURATION ?= 1h
SOAK_BACKEND  ?= all
soak:
	$(GO) test -count=1 -timeout 6h -run '^TestNemesis$$' -v ./test/e2e/ \
		-args -nemesis.duration=$(SOAK_DURATION) -nemesis.backend=$(SOAK_BACKEND) $(NEMESIS_FLAGS)

lint: fmt-check vet
	@command -v staticcheck >/dev/null && staticcheck ./... || echo "staticcheck not installed; skipped"

# bench: the figures of BENCHMARKS.md, one target per section (about an hour in all, most of it
# in bench-fire). Each starts its own etcd and PostgreSQL; run them on an otherwise idle machine.
bench: bench-failover bench-election bench-fire bench-runner bench-fence bench-pgbench bench-catchup bench-prune

bench-failover:
	$(GO) test -run '^$$' -bench Failover -benchtime 20x -timeout 30m ./bench/failover/

bench-election:
	$(GO) test -run '^$$' -bench Campaigner -benchtime 10x -timeout 30m ./internal/election/

bench-fire:
	$(GO) test -run '^$$' -bench Fire -benchtime 1x -count 2 -timeout 90m ./bench/fire/

bench-runner:
	$(GO) test -run '^$$' -bench Runner_Herd -benchtime 20x -count 3 ./internal/jobs/

bench-fence:
	$(GO) test -run '^$$' -bench . -benchtime 3s -timeout 30m ./internal/fence/

# bench-pgbench: the README's script pattern under pgbench, fenced and plain, like for like
# (bench/pgbench/*.sql); 3 s per variant and client count, ten rounds, about 13 minutes.
bench-pgbench:
	$(GO) test -run '^$$' -bench Pgbench -benchtime 1x -timeout 30m ./bench/pgbench/

bench-catchup:
	$(GO) test -run '^$$' -bench Catchup -benchtime 1x -count 5 -timeout 30m ./bench/catchup/

bench-prune:
	$(GO) test -run '^$$' -bench PruneBesideHerd -benchtime 1x -timeout 30m ./bench/fire/

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzLoad -fuzztime 30s ./cmd/scheduler/internal/config
	$(GO) test -run '^$$' -fuzz FuzzParseSchedule -fuzztime 30s ./internal/jobs

clean:
	rm -rf bin
