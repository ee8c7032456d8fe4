#!/usr/bin/env bash
# Prints the address make e2e's node registers as its InternalIP and serves
# its kubelet API on. It must not be loopback or link-local: the apiserver
# refuses to proxy nodes/<n>/proxy/... to such addresses ("address not
# allowed"), and kubectl get --raw /api/v1/nodes/<n>/proxy/stats/summary,
# metrics-server and the exec/logs paths all reach the node at its
# InternalIP. In order:
#   1. $E2E_NODE_IP when set;
#   2. the source address of the default route (as hack/conformance picks it);
#   3. on a machine without a default route, $E2E_NODE_FALLBACK_IP (default
#      203.0.113.77, TEST-NET-3, never routed) as a /32 on a dummy interface
#      $E2E_NODE_IFACE (default lse2eip0), or on lo where the kernel has no
#      dummy driver. What it added is written to $E2E_DIR/node-ip.added
#      ("<dev> <address>") and stop.sh removes it.
# E2E_NODE_IP_FALLBACK=1 skips step 2 (to exercise step 3 on a machine that
# has a default route).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"

if [[ -n ${E2E_NODE_IP:-} ]]; then
  echo "$E2E_NODE_IP"; exit 0
fi
if [[ -z ${E2E_NODE_IP_FALLBACK:-} ]]; then
  src=$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')
  if [[ -n $src && $src != 127.* && $src != 169.254.* ]]; then
    log "node IP $src: the default route's source address"
    echo "$src"; exit 0
  fi
fi

ip_addr="${E2E_NODE_FALLBACK_IP:-203.0.113.77}"
iface="${E2E_NODE_IFACE:-lse2eip0}"
if ip -4 -o addr show 2>/dev/null | awk '{print $4}' | grep -qxF "$ip_addr/32"; then
  log "node IP $ip_addr: already on this host"
  echo "$ip_addr"; exit 0
fi
mkdir -p "$E2E_DIR"
if ip link add "$iface" type dummy 2>/dev/null; then
  ip link set "$iface" up
  dev=$iface
else
  dev=lo # no dummy driver (e.g. a sandboxed kernel): a /32 on lo serves as well
fi
ip addr add "$ip_addr/32" dev "$dev"
echo "$dev $ip_addr" > "$E2E_DIR/node-ip.added"
log "node IP $ip_addr: no default route; added $ip_addr/32 on $dev (stop.sh removes it)"
echo "$ip_addr"
