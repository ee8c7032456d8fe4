#!/usr/bin/env bash
# The body of `make conformance`: the upstream sig-node conformance specs
# (k8s.io/kubernetes v1.37.2 test/e2e) against `lockstep node` on real
# containerd, with etcd, kube-apiserver, kube-controller-manager and
# kube-scheduler around it. Builds what is missing (cached), starts
# everything, runs the specs, prints the table and tears everything down
# whatever happens. See hack/conformance/README.md.
# Usage (as root): hack/conformance/run.sh   (settings in the environment)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
default_focus='\[NodeConformance\]|\[sig-node\].*\[Conformance\]'
default_skip='\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Alpha\]|\[Beta\]|\[Feature:'
# CONFORMANCE_SET picks the part of the sig-node conformance set: default
# (what the default focus leaves after the skips), serial (its [Serial]
# specs, [Slow] ones included, which must run alone: CONFORMANCE_PARALLEL
# is forced to 1) or slow (its [Slow] specs that are not [Serial]: those
# are the serial set's). Go's regexps have
# no lookahead: "a conformance spec that is also [Serial]" is spelled as
# both orders of the two tags.
case "${CONFORMANCE_SET:-default}" in
  default) ;;
  serial|slow)
    tag='\[Serial\]'; [[ $CONFORMANCE_SET == slow ]] && tag='\[Slow\]'
    default_focus="\[NodeConformance\].*$tag|$tag.*\[NodeConformance\]|\[sig-node\].*\[Conformance\].*$tag|\[sig-node\].*$tag.*\[Conformance\]"
    default_skip="${default_skip//"$tag|"/}"
    if [[ $CONFORMANCE_SET == serial ]]; then
      default_skip="${default_skip//'\[Slow\]|'/}"
      export CONFORMANCE_PARALLEL=1
    fi
    ;;
  *) echo "CONFORMANCE_SET=$CONFORMANCE_SET: want default, serial or slow" >&2; exit 2 ;;
esac
focus="${CONFORMANCE_FOCUS:-$default_focus}"
skip="$default_skip${CONFORMANCE_SKIP:+|$CONFORMANCE_SKIP}"
# Specs whose images or infrastructure cannot exist here: skipped, and
# counted as not applicable (regexp<TAB>reason per line).
na_file="$here/not-applicable.txt"
na_skip=$(grep -v '^#' "$na_file" | cut -f1 | paste -sd'|')
suite_skip="$skip${na_skip:+|$na_skip}"

# The environment (builds, containerd, control plane, lockstep) and its
# teardown on exit: env.sh, shared with node-run.sh.
source "$here/env.sh"
set -e
cnf_build
cnf_lock
cnf_start_cluster
cnf_start_lockstep

phase "conformance specs"
report="$LOG_DIR/report"; mkdir -p "$report"
log "focus: $focus"
log "skip:  $suite_skip"
suite_start=$SECONDS
suite() { # REPORT_DIR LOG FOCUS [more e2e.test args]: one e2e.test run
  local dir=$1 out=$2 rx=$3
  shift 3
  mkdir -p "$dir"
  (cd "$E2E_DIR" && "$CONFORMANCE_BIN/e2e.test" --kubeconfig="$kc" --provider=local --num-nodes=1 \
    --minStartupPods=0 --allowed-not-ready-nodes=0 --node-os-distro=debian --disable-log-dump=true \
    --report-dir="$dir" --ginkgo.focus="$rx" --ginkgo.skip="$suite_skip" \
    --ginkgo.timeout="${CONFORMANCE_TIMEOUT:-24h}" --ginkgo.no-color --ginkgo.v \
    ${CONFORMANCE_ARGS:-} "$@") >"$out" 2>&1 9>&-
}
rc=0
shards=${CONFORMANCE_PARALLEL:-1}
if (( shards > 1 )); then
  # e2e.test cannot run specs in parallel without the ginkgo CLI: one
  # e2e.test per shard of the selected specs, each with its own report.
  suite "$report/dry-run" "$LOG_DIR/e2e.test-dry-run.log" "$focus" --ginkgo.dry-run \
    --ginkgo.json-report="$report/dry-run/specs.json"
  mapfile -t rxs < <(python3 "$here/shard.py" "$report/dry-run/specs.json" "$shards")
  rm -rf "$report/dry-run"
  pids=()
  for i in "${!rxs[@]}"; do
    suite "$report/shard-$i" "$LOG_DIR/e2e.test-$i.log" "${rxs[$i]}" & pids+=($!); cnf_suite_pids+=($!)
  done
  log "${#rxs[@]} e2e.test processes: ${pids[*]}"
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
else
  suite "$report" "$LOG_DIR/e2e.test.log" "$focus" || rc=$?
fi
python3 "$here/table.py" --junit "$report" --focus "$focus" --skip "$skip" \
  --not-applicable "$na_file" --wall "$((SECONDS - suite_start))" >"$LOG_DIR/table.txt" || rc=1
exit "$rc"
