# lockstep: the two commands a newcomer needs are `make run` and `make test`.
GO       ?= go
PKGS     := ./...
BIN      := bin/lockstep
SEED     ?= 1

.PHONY: all build test lint bench sim run e2e clean

all: build

## build: compile the lockstep binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/lockstep

## lint: gofmt, go vet and the determinism lint over node/
lint:
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 ./node/detlint/

## test: lint, then every test with the race detector (includes the
## determinism checks: same seed => same trace hash under GOMAXPROCS 1 and 4)
test: lint
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

## bench: the benchmarks whose figures docs/benchmarks.md records (one core)
bench:
	$(GO) test -run '^$$' -bench 'SchedulerSwitch' -benchtime 2000000x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'VirtualTime' -benchtime 1x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'PodStartThroughput' -benchtime 1x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'Relist' -benchtime 2s -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'FakeCRI' -benchtime 1s -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'Probes' -benchtime 1x -cpu 1 ./bench/

## sim: a seeded simulation of the demo workload (SEED=n to choose the seed)
sim:
	$(GO) run ./cmd/lockstep sim --seed $(SEED)

DEMO_DIR ?= /tmp/lockstep-demo

## run: the node agent, standalone, on the in-process fake runtime, running
## the static pods of examples/manifests; read-only port on 127.0.0.1:10255
run:
	$(GO) run ./cmd/lockstep node --container-runtime-endpoint=fake \
		--pod-manifest-path=$(CURDIR)/examples/manifests \
		--hostname-override=demo-node --address=127.0.0.1 --read-only-port=10255 \
		--root-dir=$(DEMO_DIR) --pod-logs-dir=$(DEMO_DIR)/pods --container-logs-dir=$(DEMO_DIR)/containers

## e2e: lockstep against real containerd + kube-apiserver + etcd (as root;
## see hack/e2e/README.md). E2E_ARGS go to `go test`, e.g. E2E_ARGS='-run TestPod'
e2e:
	hack/e2e/run.sh $(E2E_ARGS)

clean:
	rm -rf bin
