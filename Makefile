# lockstep: the two commands a newcomer needs are `make run` and `make test`.
GO       ?= go
PKGS     := ./...
BIN      := bin/lockstep
SEED     ?= 1

.PHONY: all build test test-race-scenarios test-race-rest test-scenarios lint bench bench-compare sim run run-fakecri e2e bench-real conformance node-conformance diff-kubelet diff-kubelet-real clean regress teeth mutate

all: build

## build: compile the lockstep binary into bin/
build:
	$(GO) build -o $(BIN) ./cmd/lockstep

## lint: no tracked file over 1 MiB (binaries and data stay out of git),
## gofmt, go vet and the determinism lint over node/
lint:
	@big=$$(git ls-files -z 2>/dev/null | xargs -0 -r stat -c '%s %n' 2>/dev/null | awk '$$1 > 1048576 { sub(/^[0-9]+ /, ""); print }'); \
	if [ -n "$$big" ]; then echo "tracked files over 1 MiB (keep binaries and data out of git):"; echo "$$big"; exit 1; fi
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt needed on:"; echo "$$unformatted"; exit 1; fi
	$(GO) vet $(PKGS)
	$(GO) test -count=1 ./node/detlint/

## test: lint, then, two at a time: every package's tests with the race
## detector, where the scenario package runs its determinism checks (same
## seed => same trace hash under GOMAXPROCS 1 and 4) and the first 8 of
## each scenario property's plans (the race detector makes a plan about 4x
## dearer); the scenario package's every test without it (30 plans a
## property); the regressions
test: lint
	@$(MAKE) --no-print-directory -j2 test-race-scenarios test-race-rest test-scenarios $(REGRESS_TAGS) $(TEETH_TAGS)

## test-race-scenarios, test-race-rest: `go test -race` of the scenario
## package's determinism checks and properties, and of every other package
test-race-scenarios:
	$(GO) test -race -count=1 -timeout 15m -run 'Determinis|^TestScenarios$$' ./scenarios/
test-race-rest:
	$(GO) test -race -count=1 -timeout 15m $$($(GO) list $(PKGS) | grep -v '/scenarios$$')

## test-scenarios: every test of the scenario package, each property at
## the CI budget (30 plans, rapid seed 1), without the race detector
test-scenarios:
	$(GO) test -count=1 -timeout 15m ./scenarios/

## regress: the suite catches deliberately broken builds (re-created
## upstream bugs, build tags only; a binary built with one refuses to run a
## node) within budget and shrinks them to <= 10 actions that replay with
## the same trace hash. One tag per upstream bug of the behaviour note:
## 93210 grace skipped, 104648 static pod not restarted, 106734 stuck
## Terminating, 94829 NotReady on a hung status call, 121003 acting on an
## old runtime view, 141473 readiness carried over. Not re-created: 23636
## (the runtime refuses a second container of the same name and attempt)
## and 58711 (three separate guards keep a terminal phase; see
## docs/architecture.md). Not an upstream bug: firstwait, lockstep's own
## earlier crash-loop curve (its first restart waited 10 s; issue 27),
## caught by backoff-respected; prompt, a lost status wake-up, caught by
## status-prompt. `make -j2 regress` runs two at a time.
REGRESS_TAGS := regress_93210 regress_104648 regress_106734 regress_94829 regress_121003 regress_141473 regress_firstwait regress_prompt
regress: $(REGRESS_TAGS)

## teeth: the checker catches deliberately broken builds of the decisions
## it no longer takes from the agent (docs/checker.md): eviction ranking,
## QoS class, the grace period, the sandbox reported ready, declared node
## features, the root directory made a shared mount, static manifests'
## removals and versions, AppArmor admission, the FQDN length limit. Same
## rule as regress (one tag each).
TEETH_TAGS := regress_teeth_rank regress_teeth_qos regress_teeth_grace regress_teeth_sandbox regress_teeth_features regress_teeth_readd regress_teeth_latest regress_teeth_propagation regress_teeth_apparmor regress_teeth_fqdn regress_teeth_probekill regress_teeth_volstatus regress_teeth_memlimit regress_teeth_readiness regress_teeth_prestop regress_teeth_sidecars regress_teeth_superseded regress_teeth_mirrorstatus regress_teeth_terminal regress_teeth_devstream regress_teeth_devadmit
teeth: $(TEETH_TAGS)

# One re-created bug, named by its tag (not .PHONY: phony targets skip
# pattern rules).
regress_%:
	$(GO) test -vet=off -count=1 -tags $@ -run TestRegression ./scenarios/

## bench: the benchmarks whose figures docs/benchmarks.md records (one core)
bench:
	$(GO) test -run '^$$' -bench 'SchedulerSwitch' -benchtime 2000000x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'VirtualTime' -benchtime 1x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'PodStartThroughput' -benchtime 1x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'Relist' -benchtime 2s -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'FakeCRI' -benchtime 1s -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'SimMixed/pods=(10|50)$$' -benchtime 20x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'SimMixed/pods=100$$' -benchtime 5x -cpu 1 ./bench/
	$(GO) test -run '^$$' -bench 'SimMixed/pods=1000$$' -benchtime 1x -cpu 1 -timeout 30m ./bench/
	$(GO) test -run '^$$' -bench 'Probes' -benchtime 1x -cpu 1 ./bench/

## bench-compare: lockstep (on `lockstep fakecri`) against the upstream
## kubelet (kubemark's hollow node) and a trivial ceiling client, one after
## another on one fresh kube-apiserver + etcd (as root; output dir printed;
## see docs/benchmarks.md). BENCH_COMPARE_N="100 1000 2000",
## BENCH_COMPARE_QPS="1000/2000 50/100", BENCH_COMPARE_AGENTS="ceiling
## kubemark lockstep lockstep-relist" select a quicker run
bench-compare:
	hack/bench-compare/run.sh

SIM_SEEDS     ?= 1..100000
SIM_SCENARIOS ?= all
SIM_DURATION  ?= 60m
SIM_PARALLEL  ?= 2

## sim: the nightly-size sweep: every scenario (SIM_SCENARIOS), taking
## turns seed by seed over SIM_SEEDS, each seed's mix of operations
## swarm-drawn, bounded by SIM_DURATION of wall time (no seed starts after
## it); prints the seeds run and failed per scenario. Failures are saved
## unshrunk at once, then shrunk (2 min at most each) in .sim-failures/
## with their replay command (see `lockstep sim sweep --help`)
sim:
	$(GO) build -o bin/lockstep ./cmd/lockstep
	bin/lockstep sim sweep --scenario $(SIM_SCENARIOS) --swarm --seeds $(SIM_SEEDS) \
		--parallel $(SIM_PARALLEL) --duration $(SIM_DURATION) --shrink-time 2m

MUTATE_PKGS   ?= node/backoff node/podutil node/termmsg node/eviction
MUTATE_BUDGET ?= 20m
MUTATE_MAX    ?= 0
MUTATE_MODE   ?= unit+scenarios
MUTATE_CHECKS ?= 3
MUTATE_REPORT ?= /tmp/lockstep-mutation.md

## mutate: mutation testing of node/ packages with the scenario suite as
## the judge (issue 28; hack/mutate, docs/mutation.md). Each mutant is
## judged through `go test -overlay` (the tree is never written): the
## package's unit tests, then TestScenarios, TestFoundBySweeps and the
## package's relevant scenario tests at MUTATE_CHECKS plans per property.
## MUTATE_MODE=scenarios judges by the scenario suite alone, both by each
## judge. At most MUTATE_MAX mutants a package (a seeded sample; 0: all),
## within MUTATE_BUDGET of wall time in all; prints the survivors and the
## score per package, and writes the markdown report to MUTATE_REPORT
mutate:
	nice -n 10 $(GO) run ./hack/mutate -pkgs '$(MUTATE_PKGS)' -budget $(MUTATE_BUDGET) \
		-max $(MUTATE_MAX) -mode $(MUTATE_MODE) -checks $(MUTATE_CHECKS) -report $(MUTATE_REPORT)

DEMO_DIR ?= /tmp/lockstep-demo

## run: the node agent, standalone, on the in-process fake runtime, running
## the static pods of examples/manifests; read-only port on 127.0.0.1:10255
run:
	$(GO) run ./cmd/lockstep node --container-runtime-endpoint=fake \
		--pod-manifest-path=$(CURDIR)/examples/manifests \
		--hostname-override=demo-node --address=127.0.0.1 --read-only-port=10255 \
		--root-dir=$(DEMO_DIR) --pod-logs-dir=$(DEMO_DIR)/pods --container-logs-dir=$(DEMO_DIR)/containers

## run-fakecri: `make run` with the fake runtime in a process of its own
## (`lockstep fakecri` on $(DEMO_DIR)/fakecri.sock, streams over HTTP), so
## crictl can look in, exec and port-forward: see README.md
run-fakecri:
	@mkdir -p $(DEMO_DIR)
	$(GO) build -o $(DEMO_DIR)/lockstep ./cmd/lockstep
	@$(DEMO_DIR)/lockstep fakecri --listen unix://$(DEMO_DIR)/fakecri.sock --pod-network=loopback & pid=$$!; \
	trap 'kill $$pid 2>/dev/null' EXIT INT TERM; \
	for i in $$(seq 50); do [ -S $(DEMO_DIR)/fakecri.sock ] && break; sleep 0.1; done; \
	$(DEMO_DIR)/lockstep node --container-runtime-endpoint=unix://$(DEMO_DIR)/fakecri.sock \
		--pod-manifest-path=$(CURDIR)/examples/manifests \
		--hostname-override=demo-node --address=127.0.0.1 --read-only-port=10255 \
		--root-dir=$(DEMO_DIR) --pod-logs-dir=$(DEMO_DIR)/pods --container-logs-dir=$(DEMO_DIR)/containers

## e2e: lockstep against real containerd + kube-apiserver + etcd (as root;
## see hack/e2e/README.md). E2E_ARGS go to `go test`, e.g. E2E_ARGS='-run TestPod'
e2e:
	hack/e2e/run.sh $(E2E_ARGS)

## bench-real: the e2e 20-pod start/delete figure for lockstep and for the
## upstream kubelet v1.37.2 on the same containerd + apiserver, as ratios (as
## root, under the machine lock: flock /tmp/e2e.lock make bench-real; see
## hack/bench-real/README.md). BENCH_RUNS=3 rounds by default.
bench-real:
	hack/bench-real/run.sh

## conformance: the upstream sig-node conformance specs (k8s.io/kubernetes
## v1.37.2 e2e.test) against lockstep on real containerd, with a whole control
## plane (as root; hours for the default set; see hack/conformance/README.md).
## CONFORMANCE_FOCUS='regexp' runs a subset; E2E_LOCK=/tmp/e2e.lock waits for
## the machine's e2e lock after the builds.
conformance:
	hack/conformance/run.sh

## node-conformance: the upstream kubelet's node suite (k8s.io/kubernetes
## v1.37.2 e2e_node.test, its [NodeConformance] specs) against lockstep in
## make conformance's environment, lockstep on the kubelet's paths and ports
## (/var/lib/kubelet, /var/log/pods, 10255; restored at teardown) (as root;
## about an hour; see hack/conformance/README.md). CONFORMANCE_FOCUS='regexp'
## runs a subset; NODE_CONFORMANCE_PARALLEL=N e2e_node.test processes (12).
node-conformance:
	hack/conformance/node-run.sh

## diff-kubelet: the differential harness: every scenario of
## hack/diff-kubelet/scenarios on the upstream kubelet v1.37.2 and on lockstep
## at once, each its own node on its own fake runtime, one kube-apiserver;
## prints a table of differences, keeps an HTML report (as root, under the
## machine lock: flock /tmp/e2e.lock make diff-kubelet; not in make test).
## DIFF_SCENARIOS='crash-* probe-*' runs a subset; DIFF_LANE=containerd (or
## make diff-kubelet-real) runs the scenarios that need a real runtime on
## containerd, the kubelet then lockstep; see hack/diff-kubelet/README.md
diff-kubelet:
	hack/diff-kubelet/run.sh

diff-kubelet-real:
	DIFF_LANE=containerd hack/diff-kubelet/run.sh

clean:
	rm -rf bin
