#!/usr/bin/env bash
# The body of `make bench-compare` (as root): against ONE freshly started
# kube-apiserver + etcd (hack/e2e's scripts, scratch dir $BENCH_COMPARE_DIR,
# default /tmp/lockstep-bench-compare, so it never clashes with make e2e), the
# driver bench/compare runs one after another the upstream kubelet as
# kubemark's hollow node, `lockstep node` on `lockstep fakecri` (with and
# without CRI events) and a trivial ceiling client, creates and deletes N
# pods for each, and prints a side-by-side table. Everything is torn down on
# exit. Settings: BENCH_COMPARE_N, BENCH_COMPARE_QPS, BENCH_COMPARE_AGENTS,
# BENCH_COMPARE_RELIST_N, BENCH_COMPARE_IDLE (see bench/compare/main.go) and
# BENCH_COMPARE_OUT (output dir, default /tmp/lockstep-bench-compare-<ts>).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
e2e="$repo/hack/e2e"
export E2E_DIR="${BENCH_COMPARE_DIR:-/tmp/lockstep-bench-compare}"
source "$e2e/lib.sh"
out="${BENCH_COMPARE_OUT:-/tmp/lockstep-bench-compare-$(date -u +%Y%m%dT%H%M%S)}"

# stop_all stops the driver (its agents die with it: Pdeathsig), then etcd
# and kube-apiserver, by PID. No containerd, network or cgroups are used, so
# hack/e2e/stop.sh (which cleans those of make e2e) is not called.
stop_all() {
  local name pid
  for name in driver kube-apiserver etcd; do
    [[ -f $PID_DIR/$name ]] || continue
    pid=$(cat "$PID_DIR/$name")
    if kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null
      for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
    fi
    rm -f "$PID_DIR/$name"
  done
}
# kubemark's hollow kubelet sets up the kubelet's iptables chains on the
# host (KUBE-FIREWALL, which drops non-loopback traffic to 127/8, jumped to
# from INPUT and OUTPUT; KUBE-KUBELET-CANARY; KUBE-IPTABLES-HINT). Those it
# added are removed at teardown; chains that were there before are kept.
kube_chains=(filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT)
had_chains=()
for tc in "${kube_chains[@]}"; do
  for ipt in iptables ip6tables; do
    command -v "$ipt" >/dev/null && "$ipt" -t "${tc%%:*}" -S "${tc#*:}" >/dev/null 2>&1 && had_chains+=("$ipt:$tc")
  done
done
remove_kube_chains() {
  local ipt tc t c
  for tc in "${kube_chains[@]}"; do
    t=${tc%%:*} c=${tc#*:}
    for ipt in iptables ip6tables; do
      command -v "$ipt" >/dev/null || continue
      [[ " ${had_chains[*]} " == *" $ipt:$tc "* ]] && continue
      "$ipt" -t "$t" -S "$c" >/dev/null 2>&1 || continue
      for chain in INPUT OUTPUT FORWARD PREROUTING POSTROUTING; do
        while "$ipt" -t "$t" -D "$chain" -j "$c" 2>/dev/null; do :; done
      done
      "$ipt" -t "$t" -F "$c" 2>/dev/null && "$ipt" -t "$t" -X "$c" 2>/dev/null
    done
  done
}
finish() {
  local rc=$?
  log "=== teardown"
  stop_all
  remove_kube_chains
  mkdir -p "$out/logs" && cp -a "$LOG_DIR"/. "$out/logs"/ 2>/dev/null
  unmount_under "$E2E_DIR" # lockstep's root directory is a bind mount of itself
  rm -rf "$E2E_DIR"
  echo "bench-compare output (table.md, bench-compare.svg, results.json, logs): $out"
  echo "bench-compare result: $([[ $rc == 0 ]] && echo OK || echo "FAILED (exit $rc)")"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

set -e
[[ $(id -u) == 0 ]] || { echo "bench-compare: run as root (like make e2e)" >&2; exit 1; }
stop_all # a run killed hard may have left things behind
unmount_under "$E2E_DIR"
rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR" "$out"

log "=== build lockstep and the driver"
(cd "$repo" && go build -o "$E2E_DIR/bin/lockstep" ./cmd/lockstep && go build -o "$E2E_DIR/bin/fakecri" ./cmd/fakecri &&
  go build -o "$E2E_DIR/bin/bench-compare" ./bench/compare)
log "=== build control plane and kubemark (cached)"
export CONTROL_PLANE_BIN="$("$e2e/build-control-plane.sh")"
upstream="$("$repo/hack/upstream-node/build.sh" kubemark)"
log "=== start control plane"
E2E_NODE=bc-unused E2E_EXTRA_NODES="bc-ceiling bc-kubemark bc-lockstep bc-lockstep-relist" "$e2e/start-control-plane.sh"
log "=== machine: $(nproc) cores; $(uptime)"
log "=== run"
"$E2E_DIR/bin/bench-compare" -dir "$E2E_DIR" -lockstep "$E2E_DIR/bin/lockstep" -fakecri "$E2E_DIR/bin/fakecri" -kubemark "$upstream/kubemark" -out "$out" &
echo $! > "$PID_DIR/driver"
wait "$(cat "$PID_DIR/driver")"
