#!/usr/bin/env bash
# Tears down everything the e2e scripts started under $E2E_DIR and leaves
# nothing behind: processes (by PID), containerd tasks, mounts under the
# scratch dir, pod network namespaces, the CNI bridge and iptables chains,
# CNI result files, container cgroup dirs, the kubepods hierarchy and the
# node address node-ip.sh added (no default route). Keeps $E2E_DIR/logs.
# Safe to run repeatedly and after partial starts; never fails.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
[[ -d "$E2E_DIR" ]] || exit 0

# stop_pid NAME [SIGNAL]: SIGNAL (default TERM), wait up to 10 s, then
# SIGKILL the process in pids/NAME.
stop_pid() {
  local f="$PID_DIR/$1" sig="${2:-TERM}" pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -"$sig" "$pid" 2>/dev/null
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "$1 (pid $pid) ignored TERM; killing"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; }
  fi
  rm -f "$f"
}

stop_pid metrics-server
for p in "$PID_DIR"/lockstep*; do [[ -f $p ]] && stop_pid "$(basename "$p")"; done
# The control plane's state is thrown away: no need for a graceful stop.
stop_pid kube-apiserver KILL
stop_pid etcd KILL
stop_pid registry

cgroups=() netns=() ids=()
ctr_() { ctr -a "$CONTAINERD_SOCK" -n k8s.io "$@"; }
if [[ -S $CONTAINERD_SOCK ]] && ctr_ version >/dev/null 2>&1; then
  for id in $(ctr_ containers ls -q 2>/dev/null); do
    ids+=("$id")
    info=$(ctr_ containers info "$id" 2>/dev/null) || continue
    cg=$(jq -r '.Spec.linux.cgroupsPath // empty' <<<"$info")
    [[ -n $cg ]] && cgroups+=("$cg")
    ns=$(jq -r '.Spec.linux.namespaces[] | select(.type=="network") | .path // empty' <<<"$info")
    [[ $ns == /var/run/netns/* || $ns == /run/netns/* ]] && netns+=("$ns")
    ctr_ tasks kill -s SIGKILL "$id" >/dev/null 2>&1
  done
  sleep 0.5
  for id in $(ctr_ containers ls -q 2>/dev/null); do
    ctr_ tasks rm -f "$id" >/dev/null 2>&1
    ctr_ containers rm "$id" >/dev/null 2>&1
  done
fi
stop_pid containerd
# containerd-shim processes of our containerd (their -address is our socket).
for pid in $(pgrep -f "containerd-shim.*-address $CONTAINERD_SOCK" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done

# Mounts under the scratch dir (lockstep's root directory, a bind mount of
# itself, among them), deepest first.
unmount_under "$E2E_DIR"
for ns in "${netns[@]}"; do umount "$ns" 2>/dev/null; rm -f "$ns"; done

# CNI: bridge, NAT chains tagged with our network name, cached results.
ip link del "$E2E_BRIDGE" 2>/dev/null
iptables -t nat -S POSTROUTING 2>/dev/null | grep -F 'name: \"lockstep-e2e\"' | while read -r rule; do
  eval "iptables -t nat ${rule/-A /-D }" 2>/dev/null
done
iptables -t nat -S 2>/dev/null | awk '/^-N CNI-/ {print $2}' | while read -r chain; do
  if iptables -t nat -S "$chain" 2>/dev/null | grep -qF 'name: \"lockstep-e2e\"'; then
    iptables -t nat -F "$chain" 2>/dev/null; iptables -t nat -X "$chain" 2>/dev/null
  fi
done
rm -f /var/lib/cni/results/lockstep-e2e-* 2>/dev/null
for id in "${ids[@]}"; do rm -f /var/lib/cni/results/cni-loopback-"$id"-lo; done
rmdir /var/lib/cni/results /var/lib/cni 2>/dev/null

# Container cgroup dirs in every v1 hierarchy, then empty parents (rmdir only
# removes empty dirs, so a parent still used by someone else stays).
for cg in "${cgroups[@]}"; do
  for h in /sys/fs/cgroup/*/; do
    d="${h%/}/${cg#/}"
    [[ -d $d ]] && rmdir "$d" 2>/dev/null
    parent=$(dirname "$d")
    while [[ $parent != "${h%/}" && $parent == "${h%/}"/* ]]; do rmdir "$parent" 2>/dev/null || break; parent=$(dirname "$parent"); done
  done
done

# containerd's default cgroup parent, when empty (a busy one, e.g. of another
# containerd on this host, is left alone: rmdir fails on a non-empty dir).
for h in /sys/fs/cgroup/*/; do [[ -d ${h}k8s.io ]] && rmdir "${h}k8s.io" 2>/dev/null; done

# The kubepods hierarchy lockstep made under the cgroup root "/" (pod and
# QoS cgroups), deepest first; rmdir leaves any cgroup still in use.
for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
  [[ -d ${h}kubepods ]] && find "${h}kubepods" -depth -type d -exec rmdir {} + 2>/dev/null
done

# The node address node-ip.sh added on a machine without a default route.
if [[ -f $E2E_DIR/node-ip.added ]]; then
  read -r dev addr < "$E2E_DIR/node-ip.added"
  if [[ $dev == lo ]]; then ip addr del "$addr/32" dev lo 2>/dev/null; else ip link del "$dev" 2>/dev/null; fi
  rm -f "$E2E_DIR/node-ip.added"
fi

find "$E2E_DIR" -mindepth 1 -maxdepth 1 ! -name logs -exec rm -rf {} + 2>/dev/null
log "torn down; logs kept in $LOG_DIR"
exit 0
