#!/usr/bin/env bash
# The body of `make diff-kubelet` (as root, under the machine's e2e lock):
# the upstream kubelet v1.37.2 (k8s.io/kubernetes/cmd/kubelet, built and
# cached by hack/upstream-node/build.sh) and `lockstep node`, each as its own
# node (diff-kubelet, diff-lockstep) on its own fake runtime (cmd/fakecri on
# a unix socket, own state), against ONE kube-apiserver + etcd (hack/e2e's
# scripts). The driver (hack/diff-kubelet/driver) starts the runtimes and the
# agents from the command files written here (printed below), runs every
# scenario of hack/diff-kubelet/scenarios on both nodes at once, and prints
# the table; the HTML report, the recordings and every log are kept.
# Usage:
#   flock /tmp/e2e.lock make diff-kubelet
#   DIFF_SCENARIOS='crash-*' flock /tmp/e2e.lock hack/diff-kubelet/run.sh
#   DIFF_LANE=containerd flock /tmp/e2e.lock make diff-kubelet
# DIFF_LANE=containerd is the second lane: the scenarios that need a real
# runtime (default: $containerd_scenarios below) on containerd (make e2e's
# hack/e2e/start-containerd.sh, its local busybox and pause images), both
# agents on the one containerd, one after the other: the kubelet runs them
# all, is stopped and containerd emptied, then lockstep runs them; the
# recordings are compared as in the fake lane.
# Settings: DIFF_SCENARIOS (glob(s) of scenario names, default all),
# DIFF_PARALLEL (scenarios run at once, default 6), DIFF_NETWORK (0: no
# served pod network, the network scenarios skipped; default on), DIFF_OUT (output dir,
# default /tmp/lockstep-diff-kubelet-<timestamp>), DIFF_KUBELET_V /
# DIFF_LOCKSTEP_V (log levels, 2), DIFF_LOCKSTEP_EVENTS (lockstep's
# --runtime-events, default false: both agents relist every second, as the
# kubelet does with EventedPLEG off, its default; true compares lockstep's
# evented PLEG, candidate C-evented-pleg in docs/fidelity.md), E2E_DIR
# (/tmp/lockstep-diff-kubelet).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
e2e="$repo/hack/e2e"
export E2E_DIR="${E2E_DIR:-/tmp/lockstep-diff-kubelet}"
export E2E_NODE=diff-lockstep
source "$e2e/lib.sh"
out="${DIFF_OUT:-/tmp/lockstep-diff-kubelet-$(date -u +%Y%m%dT%H%M%S)}"
kubelet_node=diff-kubelet
lockstep_node=diff-lockstep
# Each agent's own cgroup root (cgroupfs on cgroup v1): their kubepods trees
# must not meet.
cgroup_roots=(diff-kubelet diff-lockstep)

# The host state the kubelet changes (sysctls, /var/lib/kubelet), put back
# on exit.
source "$repo/hack/upstream-node/host-state.sh"
kubelet_host_save

# stop_pid NAME: TERM the process in pids/NAME, KILL after 20 s.
stop_pid() {
  local f="$PID_DIR/$1" pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  fi
  rm -f "$f"
}

# remove_cgroups: the agents' cgroup roots in every hierarchy, deepest first
# (rmdir removes empty cgroups only).
remove_cgroups() {
  local root h
  for root in "${cgroup_roots[@]}"; do
    for h in /sys/fs/cgroup/*/; do
      if [[ -d $h$root ]]; then find "$h$root" -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
    done
  done
  return 0
}

finish() {
  local rc=$?
  set +e
  log "=== teardown"
  stop_pid driver # its runtimes and agents die with it (Pdeathsig), it stops them first
  "$e2e/stop.sh"
  remove_cgroups
  kubelet_host_restore
  mkdir -p "$out/logs" && cp -a "$LOG_DIR"/. "$out/logs"/ 2>/dev/null
  rm -rf "$E2E_DIR"
  echo "diff-kubelet output (table.md, report.html, recordings, logs): $out"
  echo "diff-kubelet took $((SECONDS - t_start)) s (builds $build_s s)"
  echo "diff-kubelet result: $([[ $rc == 0 ]] && echo OK || echo "FAILED (exit $rc)")"
  exit "$rc"
}
t_start=$SECONDS build_s=0
trap finish EXIT
trap 'exit 130' INT TERM

set -e
[[ $(id -u) == 0 ]] || { echo "diff-kubelet: run as root (like make e2e)" >&2; exit 1; }
"$e2e/stop.sh"
remove_cgroups
rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR" "$E2E_DIR/bin" "$out"

lane=${DIFF_LANE:-fake}
containerd_scenarios='recursive-readonly fsgroup-local-pv etc-hosts resolv-conf downward-api-volume volume-contents security-context logs-previous'
case $lane in
fake) ;;
containerd)
  log "=== containerd lane: install and start containerd (hack/e2e)"
  "$e2e/install-containerd.sh"
  "$e2e/start-containerd.sh"
  # The scenarios name busybox (docker.io/library/busybox:latest): the
  # local image stands in for it (no registry is reachable).
  ctr -a "$CONTAINERD_SOCK" -n k8s.io images tag --force docker.io/library/busybox:e2e docker.io/library/busybox:latest >&2
  ;;
*) echo "diff-kubelet: DIFF_LANE=$lane: want fake or containerd" >&2; exit 1 ;;
esac

log "=== build lockstep, fakecri, the driver; control plane and kubelet (cached)"
(cd "$repo" && go build -o "$E2E_DIR/bin/lockstep" ./cmd/lockstep && go build -o "$E2E_DIR/bin/fakecri" ./cmd/fakecri &&
  go build -o "$E2E_DIR/bin/diff-driver" ./hack/diff-kubelet/driver)
export CONTROL_PLANE_BIN="$("$e2e/build-control-plane.sh")"
kubelet_bin="$("$repo/hack/upstream-node/build.sh" kubelet)/kubelet"
build_s=$((SECONDS - t_start))
log "builds took $build_s s"

log "=== start control plane"
# A CA the apiserver trusts for clients and the agents trust for the
# apiserver's kubelet-client certificate (logs, exec go through the agents'
# secure ports).
pki="$E2E_DIR/pki"
"$e2e/make-pki.sh" "$pki" lockstep-diff-ca
export E2E_APISERVER_ARGS="${E2E_APISERVER_ARGS:-} --kubelet-client-certificate $pki/kubelet-client.crt --kubelet-client-key $pki/kubelet-client.key --kubelet-preferred-address-types InternalIP,Hostname --client-ca-file $pki/ca.crt"
E2E_EXTRA_NODES="$kubelet_node" "$e2e/start-control-plane.sh"
node_ip=$("$e2e/node-ip.sh")

# The cgroup roots must exist (the kubelet refuses a missing --cgroup-root).
for root in "${cgroup_roots[@]}"; do
  for h in /sys/fs/cgroup/*/; do mkdir -p "$h$root" 2>/dev/null || true; done
done

cluster_dns=10.96.0.10
procs="$E2E_DIR/procs"; mkdir -p "$procs"
# cmdfile NAME BINARY ARG...: the command the driver runs for NAME, one word a line.
cmdfile() { local n=$1; shift; printf '%s\n' "$@" > "$procs/$n.cmd"; }
# The fake runtimes: the same images and registry on both (a missing image,
# one that needs the pull secret's credentials); the imagefs mountpoint they
# report must exist (the kubelet asks cAdvisor about it).
# Each serves its sandboxes' scripted HTTP/TCP/gRPC endpoints on a loopback
# range of its own (the kubelet's pods 127.88.x, lockstep's 127.89.x) and
# host-network pods' on the node IP, so both agents' real probers and hook
# handlers reach them (DIFF_NETWORK=0: no pod network, the network
# scenarios skipped).
declare -A pod_net=([kubelet]=127.88.0.0/16 [lockstep]=127.89.0.0/16)
for a in kubelet lockstep; do
  [[ $lane == fake ]] || break
  mkdir -p "$E2E_DIR/$a/imagefs"
  net_args=(--pod-network="${pod_net[$a]}" --host-network-address="$node_ip")
  [[ ${DIFF_NETWORK:-1} == 0 ]] && net_args=()
  cmdfile "fakecri-$a" "$E2E_DIR/bin/fakecri" --listen="unix://$E2E_DIR/$a/fakecri.sock" \
    --imagefs-mountpoint="$E2E_DIR/$a/imagefs" "${net_args[@]}" \
    --fail-pull=registry.example/missing:1 --registry-auth=registry.example/private:1=diff:s3cret
done

kport=$(free_port); lport=$(free_port)
# Each agent's runtime: its own fake runtime, or the one containerd.
declare -A runtime_sock=([kubelet]="$E2E_DIR/kubelet/fakecri.sock" [lockstep]="$E2E_DIR/lockstep/fakecri.sock")
pause_image=registry.k8s.io/pause:3.10
if [[ $lane == containerd ]]; then
  runtime_sock=([kubelet]="$CONTAINERD_SOCK" [lockstep]="$CONTAINERD_SOCK")
  pause_image=docker.io/library/pause:e2e
fi
kdir="$E2E_DIR/kubelet"
mkdir -p "$kdir/manifests" "$kdir/pods" "$E2E_DIR/lockstep/manifests"
# The upstream kubelet: cgroupfs on cgroup v1 without systemd, its own
# cgroup root, image GC off and eviction thresholds near zero (as lockstep's
# below), webhook authn/authz, no read-only or healthz port, no iptables
# utility chains, the static pod dir checked every 5 s.
cat > "$kdir/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: $node_ip
port: $kport
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://${runtime_sock[kubelet]}
imageServiceEndpoint: unix://${runtime_sock[kubelet]}
cgroupDriver: cgroupfs
cgroupRoot: /diff-kubelet
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
makeIPTablesUtilChains: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard:
  memory.available: 1Mi
  nodefs.available: 1%
  nodefs.inodesFree: 1%
  imagefs.available: 1%
  imagefs.inodesFree: 1%
maxPods: 110
serializeImagePulls: true
syncFrequency: 1m
fileCheckFrequency: 5s
nodeStatusUpdateFrequency: 10s
staticPodPath: $kdir/manifests
podLogsDir: $kdir/pods
volumePluginDir: $kdir/volume-plugins
resolvConf: /etc/resolv.conf
clusterDNS: [$cluster_dns]
clusterDomain: cluster.local
YAML
cmdfile kubelet "$kubelet_bin" --config="$kdir/config.yaml" --kubeconfig="$E2E_DIR/node-$kubelet_node.kubeconfig" \
  --hostname-override="$kubelet_node" --node-ip="$node_ip" --root-dir="$kdir/root" --cert-dir="$kdir/pki" \
  --v="${DIFF_KUBELET_V:-2}"
ldir="$E2E_DIR/lockstep"
cmdfile lockstep "$E2E_DIR/bin/lockstep" node --kubeconfig="$E2E_DIR/node.kubeconfig" \
  --container-runtime-endpoint="unix://${runtime_sock[lockstep]}" \
  --hostname-override="$lockstep_node" --node-ip="$node_ip" --address="$node_ip" --port="$lport" --read-only-port=0 --healthz-port=0 \
  --authorization-mode=Webhook --client-ca-file="$pki/ca.crt" \
  --root-dir="$ldir/root" --pod-logs-dir="$ldir/pods" --container-logs-dir="$ldir/containers" \
  --pod-manifest-path="$ldir/manifests" --file-check-frequency=5s \
  --cgroup-driver=cgroupfs --cgroup-root=/diff-lockstep --cgroups-per-qos=true \
  --image-gc-high-threshold=100 --image-gc-low-threshold=99 \
  --eviction-hard='memory.available<1Mi,nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%' \
  --max-pods=110 --serialize-image-pulls=true --sync-frequency=1m --node-status-update-frequency=10s \
  --resolv-conf=/etc/resolv.conf --cluster-dns="$cluster_dns" --cluster-domain=cluster.local \
  --pod-infra-container-image="$pause_image" \
  --runtime-events="${DIFF_LOCKSTEP_EVENTS:-false}" \
  --v="${DIFF_LOCKSTEP_V:-2}"

log "=== the commands the driver runs (kubelet config: $kdir/config.yaml)"
for f in "$procs"/*.cmd; do echo "$(basename "$f" .cmd): $(paste -sd' ' "$f")"; done
cp "$kdir/config.yaml" "$out/kubelet-config.yaml"; cp "$procs"/*.cmd "$out"/

log "=== run the catalogue"
"$E2E_DIR/bin/diff-driver" -dir "$E2E_DIR" -kubeconfig "$E2E_DIR/admin.kubeconfig" \
  -catalogue "$here/scenarios" -parallel "${DIFF_PARALLEL:-6}" \
  -scenarios "${DIFF_SCENARIOS:-$([[ $lane == containerd ]] && echo "$containerd_scenarios" || echo '*')}" \
  -containerd "$([[ $lane == containerd ]] && echo "$CONTAINERD_SOCK")" \
  -out "$out" -logs "$LOG_DIR" -network="$([[ ${DIFF_NETWORK:-1} == 0 ]] && echo false || echo true)" &
echo $! > "$PID_DIR/driver"
wait "$(cat "$PID_DIR/driver")"
