#!/usr/bin/env bash
# The body of `make node-conformance`: the upstream kubelet's node suite
# (k8s.io/kubernetes v1.37.2 test/e2e_node, e2e_node.test), its
# [NodeConformance] specs, against `lockstep node` in the environment
# `make conformance` brings up (env.sh: containerd, the suite's images,
# etcd, kube-apiserver, kube-controller-manager, kube-scheduler). lockstep
# runs with the paths and ports the suite assumes of a kubelet: root dir
# /var/lib/kubelet, pod logs in /var/log/pods, container log links in
# /var/log/containers, read-only port 10255, healthz on 127.0.0.1:10248
# (when lockstep has the flags). What the run adds under those paths, mounts
# first, is removed at teardown. Builds what is missing (cached), runs the
# specs in NODE_CONFORMANCE_PARALLEL e2e_node.test processes, prints the
# table and tears everything down whatever happens.
# See hack/conformance/README.md.
# Usage (as root): hack/conformance/node-run.sh   (settings in the environment)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
default_focus='\[NodeConformance\]'
default_skip='\[Serial\]|\[Slow\]|\[Disruptive\]|\[Flaky\]|\[Alpha\]|\[Beta\]|\[Feature:'
focus="${CONFORMANCE_FOCUS:-$default_focus}"
skip="$default_skip${CONFORMANCE_SKIP:+|$CONFORMANCE_SKIP}"
# Specs that cannot pass on these machines: skipped, and counted as not
# applicable (regexp<TAB>reason per line).
na_file="$here/node-not-applicable.txt"
na_skip=$(grep -v '^#' "$na_file" | cut -f1 | paste -sd'|')
suite_skip="$skip${na_skip:+|$na_skip}"
export E2E_LOGS="${E2E_LOGS:-/tmp/lockstep-node-conformance-logs-$(date -u +%Y%m%dT%H%M%S)}"
cnf_name="node conformance run"

# The kubelet's own paths, as the suite assumes them.
lockstep_root_dir=/var/lib/kubelet
lockstep_pod_logs_dir=/var/log/pods
lockstep_container_logs_dir=/var/log/containers
lockstep_read_only_port=10255
# All addresses: the suite reads metrics and stats from localhost:10255;
# the apiserver still reaches the secure port on the node IP.
lockstep_address=0.0.0.0
host_paths=("$lockstep_root_dir" "$lockstep_pod_logs_dir" "$lockstep_container_logs_dir")
# What the host had under host_paths before the run (a path missing, or the
# entries and mounts a present one held): written under the lock by
# host_save, used by host_restore, removed once restored. A run killed
# before its teardown leaves it behind: the next run restores first.
host_state=/tmp/lockstep-node-conformance.host

# under_paths: reads mount points (one a line) and prints those under one of
# host_paths (the path itself included).
under_paths() {
  local m p
  while read -r m; do
    for p in "${host_paths[@]}"; do
      if [[ $m == "$p" || $m == "$p"/* ]]; then echo "$m"; break; fi
    done
  done
}
mounts_now() { awk '{print $2}' /proc/self/mounts | under_paths; }

host_save() {
  [[ -f $host_state ]] && { log "restoring host paths after an earlier run ($host_state)"; host_restore; }
  local p
  {
    for p in "${host_paths[@]}"; do
      if [[ -e $p ]]; then
        printf 'had\t%s\n' "$p"
        find "$p" -mindepth 1 -maxdepth 1 -printf 'entry\t%p\n'
      else
        printf 'new\t%s\n' "$p"
      fi
    done
    mounts_now | sed 's/^/mount\t/'
  } > "$host_state.tmp"
  mv "$host_state.tmp" "$host_state"
}

# remove_path PATH: rm -rf PATH, unless a mount is still at or under it.
remove_path() {
  local m
  while read -r m; do
    if [[ $m == "$1" || $m == "$1"/* ]]; then log "left $1 in place: $m is still mounted"; return 0; fi
  done < <(awk '{print $2}' /proc/self/mounts)
  rm -rf --one-file-system "$1"
}

# host_restore: unmounts what the run mounted under host_paths (deepest
# first, again while stacked mounts remain), then removes the paths the run
# created and the entries it added to paths that were there. Never fails.
host_restore() {
  [[ -f $host_state ]] || return 0
  local p e m new
  for _ in 1 2 3 4 5; do
    mapfile -t new < <(mounts_now | grep -vxF -f <(awk -F'\t' '$1 == "mount" {print $2}' "$host_state") | sort -ru)
    (( ${#new[@]} )) || break
    for m in "${new[@]}"; do umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null; done
  done
  for p in "${host_paths[@]}"; do
    if grep -qxF "$(printf 'new\t%s' "$p")" "$host_state"; then
      [[ -e $p ]] && remove_path "$p"
    elif [[ -d $p ]]; then
      while IFS= read -r -d '' e; do
        grep -qxF "$(printf 'entry\t%s' "$e")" "$host_state" || remove_path "$e"
      done < <(find "$p" -mindepth 1 -maxdepth 1 -print0)
    fi
  done
  rm -f "$host_state"
  return 0
}
# Only a run that saved the host state (it holds the lock) restores it.
cnf_after_stop() { [[ -n ${host_saved:-} ]] && host_restore; return 0; }

# The environment (builds, containerd, control plane, lockstep) and its
# teardown on exit: env.sh, shared with run.sh (make conformance).
source "$here/env.sh"
set -e
cnf_build e2e_node.test kube-controller-manager kube-scheduler agnhost
cnf_lock
cnf_start_cluster
# After cnf_start_cluster's stop.sh (an earlier run's containers are gone),
# before lockstep takes the paths.
host_save; host_saved=1
# Healthz on the kubelet's address and port, when this lockstep has the flags.
lockstep_extra_args=()
if /tmp/lockstep-conformance-build/lockstep node --help 2>&1 | grep -q -- '--healthz-port'; then
  lockstep_extra_args+=(--healthz-port=10248 --healthz-bind-address=127.0.0.1)
else
  log "lockstep has no --healthz-port: nothing listens on 127.0.0.1:10248"
fi
cnf_start_lockstep

phase "node conformance specs"
report="$LOG_DIR/report"; mkdir -p "$report"
log "focus: $focus"
log "skip:  $suite_skip"
suite_start=$SECONDS
suite() { # NAME FOCUS [more e2e_node.test args]: one e2e_node.test run
  local name=$1 rx=$2
  shift 2
  # Its own working directory: the suite makes a kubelet drop-in dir there.
  local wd="$E2E_DIR/node-suite/$name"
  mkdir -p "$wd" "$report/$name"
  (cd "$wd" && "$CONFORMANCE_BIN/e2e_node.test" --start-services=false --stop-services=false \
    --prepull-images=false --host="$api_url" --bearer-token="$(cat "$E2E_DIR/admin.token")" \
    --node-name="$E2E_NODE" --container-runtime-endpoint="unix://$CONTAINERD_SOCK" \
    --image-service-endpoint="unix://$CONTAINERD_SOCK" --dns-domain=cluster.local \
    --report-dir="$report/$name" \
    --ginkgo.focus="$rx" --ginkgo.skip="$suite_skip" \
    --ginkgo.timeout="${CONFORMANCE_TIMEOUT:-24h}" --ginkgo.no-color --ginkgo.v \
    ${CONFORMANCE_ARGS:-} "$@") >"$LOG_DIR/e2e_node.test-$name.log" 2>&1 9>&-
}
rc=0
# e2e_node.test cannot run specs in parallel without the ginkgo CLI: one
# e2e_node.test per shard of the selected specs (a dry run lists them),
# each with its own report; failing specs wait out their timeouts side by side.
suite dry-run "$focus" --ginkgo.dry-run --ginkgo.json-report="$report/dry-run/specs.json"
mapfile -t rxs < <(python3 "$here/shard.py" "$report/dry-run/specs.json" "${NODE_CONFORMANCE_PARALLEL:-12}")
rm -rf "$report/dry-run"
pids=()
for i in "${!rxs[@]}"; do
  suite "shard-$i" "${rxs[$i]}" & pids+=($!); cnf_suite_pids+=($!)
done
log "${#rxs[@]} e2e_node.test processes: ${pids[*]}"
for p in "${pids[@]}"; do wait "$p" || rc=$?; done
python3 "$here/table.py" --title "node conformance" --junit "$report" --focus "$focus" --skip "$skip" \
  --not-applicable "$na_file" --wall "$((SECONDS - suite_start))" >"$LOG_DIR/table.txt" || rc=1
exit "$rc"
