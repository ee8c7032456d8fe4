#!/usr/bin/env bash
# The body of `make bench-real`: the e2e suite's 20-pod start/delete figure
# (e2e.TestPodStartAndDeleteFigures) measured against lockstep and against
# the upstream kubelet v1.37.2 on the SAME containerd, kube-apiserver and
# etcd, one agent at a time, alternating, BENCH_RUNS rounds; then a table of
# both agents' figures and their ratios. Reuses hack/e2e's start scripts
# with its own scratch dir; tears everything down even when a step fails.
# Usage (as root, under the machine's e2e lock):
#   flock /tmp/e2e.lock make bench-real
# Settings: BENCH_RUNS (3), BENCH_AGENTS ("lockstep kubelet"),
# BENCH_KUBELET_NODE (bench-kubelet), BENCH_KUBELET_NODE_IP (this host's
# address towards the default route), BENCH_CLUSTER_DNS (10.96.0.10), BENCH_SETTLE (10 s idle after an agent
# is Ready, before its run), E2E_DIR (/tmp/lockstep-bench-real),
# BENCH_LOGS (/tmp/lockstep-bench-real-logs-<timestamp>).
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
e2e="$repo/hack/e2e"
export E2E_DIR="${E2E_DIR:-/tmp/lockstep-bench-real}"
source "$e2e/lib.sh"
runs="${BENCH_RUNS:-3}"
agents="${BENCH_AGENTS:-lockstep kubelet}"
kubelet_node="${BENCH_KUBELET_NODE:-bench-kubelet}"
settle="${BENCH_SETTLE:-10}"
keep_logs="${BENCH_LOGS:-/tmp/lockstep-bench-real-logs-$(date -u +%Y%m%dT%H%M%S)}"
results="$keep_logs/results.jsonl"
mkdir -p "$keep_logs"

# The host state the kubelet changes, put back on exit.
source "$repo/hack/upstream-node/host-state.sh"
kubelet_host_save

# stop_agent NAME: TERM the agent in pids/NAME, KILL after 20 s.
stop_agent() {
  local f="$PID_DIR/$1" pid
  [[ -f $f ]] || return 0
  pid=$(cat "$f")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && { log "$1 (pid $pid) ignored TERM; killing"; kill -KILL "$pid" 2>/dev/null; sleep 0.2; }
  fi
  rm -f "$f"
}

finish() {
  local rc=$?
  log "=== teardown"
  stop_agent kubelet
  "$e2e/stop.sh"
  kubelet_host_restore
  cp -a "$LOG_DIR"/. "$keep_logs"/ 2>/dev/null
  rm -rf "$E2E_DIR"
  if [[ -s $results ]]; then
    echo
    python3 "$here/report.py" "$results" || rc=1
  fi
  echo "logs (containerd, etcd, kube-apiserver, lockstep, kubelet, go test) and results.jsonl: $keep_logs"
  echo "bench-real result: $([[ $rc == 0 ]] && echo PASS || echo "FAIL (exit $rc)")"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

set -e
"$e2e/stop.sh"
rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR" "$E2E_DIR/bin"

log "=== install and build"
"$e2e/install-containerd.sh"
(cd "$repo" && go build -o "$E2E_DIR/bin/lockstep" ./cmd/lockstep)
(cd "$repo" && go test -c -tags e2e -o "$E2E_DIR/bin/e2e.test" ./e2e/)
export CONTROL_PLANE_BIN="$("$e2e/build-control-plane.sh")"
kubelet_bin="$("$repo/hack/upstream-node/build.sh" kubelet)/kubelet"

log "=== start containerd and control plane"
"$e2e/start-containerd.sh"
# As hack/e2e/run.sh: a CA the agents trust for the apiserver's client
# certificate; the apiserver trusts it too, so it also signs the kubelet's
# own client certificate (system:node:<name> in system:nodes).
pki="$E2E_DIR/pki"; mkdir -p "$pki"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=lockstep-e2e-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
cert() { # NAME SUBJECT
  openssl req -newkey rsa:2048 -nodes -subj "$2" -keyout "$pki/$1.key" -out "$pki/$1.csr" 2>/dev/null
  openssl x509 -req -in "$pki/$1.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -days 2 -out "$pki/$1.crt" 2>/dev/null
}
cert kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
cert node-kubelet "/O=system:nodes/CN=system:node:$kubelet_node"
export E2E_APISERVER_ARGS="${E2E_APISERVER_ARGS:-} --kubelet-client-certificate $pki/kubelet-client.crt --kubelet-client-key $pki/kubelet-client.key --kubelet-preferred-address-types InternalIP,Hostname --client-ca-file $pki/ca.crt"
E2E_DISABLE_ADMISSION="" "$e2e/start-control-plane.sh"
"$e2e/service-account-objects.sh"
server=$(awk '/server:/ {print $2; exit}' "$E2E_DIR/admin.kubeconfig")
admin_tok=$(cat "$E2E_DIR/admin.token")
api() { curl -sf --cacert "$E2E_DIR/apiserver/serving.crt" -H "Authorization: Bearer $admin_tok" "$server$1"; }

# Both agents get a cluster DNS address (in the service range; nothing
# answers there, the sleeper pods never resolve) as on a real cluster:
# without one the kubelet sends a MissingClusterDNS warning event for every
# pod (and its node) and lockstep sends none, which would skew the counts.
cluster_dns=${BENCH_CLUSTER_DNS:-10.96.0.10}

# lockstep as hack/e2e/run.sh starts it (no static pods here), plus the
# cluster DNS.
mkdir -p "$E2E_DIR/manifests"
lockstep_port=$(free_port)
cat > "$E2E_DIR/lockstep.args" <<ARGS
node
--kubeconfig=$E2E_DIR/node.kubeconfig
--container-runtime-endpoint=unix://$CONTAINERD_SOCK
--pod-manifest-path=$E2E_DIR/manifests
--hostname-override=$E2E_NODE
--node-ip=127.0.0.1
--root-dir=$E2E_DIR/lockstep
--pod-logs-dir=$E2E_DIR/pods
--container-logs-dir=$E2E_DIR/containers
--address=127.0.0.1
--port=$lockstep_port
--read-only-port=0
--healthz-port=0
--authorization-mode=Webhook
--client-ca-file=$E2E_DIR/pki/ca.crt
--image-gc-high-threshold=100
--pod-infra-container-image=docker.io/library/pause:e2e
--cluster-dns=$cluster_dns
--cluster-domain=cluster.local
--v=${E2E_LOCKSTEP_V:-2}
ARGS

# The upstream kubelet: the same containerd socket (whose CNI bridge and
# sandbox image pause:e2e it uses), cgroupfs on cgroup v1 without systemd,
# image GC off and eviction thresholds near zero (this machine's disk is
# shared and often near the default 85 %/10 %), webhook authentication
# and authorization as lockstep's, no read-only or healthz port, and no
# iptables utility chains (KUBE-FIREWALL etc.: nothing here needs them and
# they would outlive the run on the host).
kubelet_port=$(free_port)
# The kubelet refuses a loopback node IP ("nodeIP can't be loopback address":
# no addresses in its node status, an error on every status update); it gets
# this host's source address towards the default route (its API still
# listens on 127.0.0.1 only).
kubelet_ip=${BENCH_KUBELET_NODE_IP:-$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") {print $(i + 1); exit}}')}
kubelet_ip=${kubelet_ip:-127.0.0.1}
kdir="$E2E_DIR/kubelet"
mkdir -p "$kdir" "$E2E_DIR/kubelet-pods"
cat > "$E2E_DIR/kubelet.kubeconfig" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: $server
    certificate-authority: $E2E_DIR/apiserver/serving.crt
users:
- name: u
  user:
    client-certificate: $pki/node-kubelet.crt
    client-key: $pki/node-kubelet.key
contexts:
- name: e2e
  context: {cluster: e2e, user: u}
current-context: e2e
YAML
cat > "$E2E_DIR/kubelet-config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: 127.0.0.1
port: $kubelet_port
readOnlyPort: 0
healthzPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://$CONTAINERD_SOCK
imageServiceEndpoint: unix://$CONTAINERD_SOCK
cgroupDriver: cgroupfs
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
podLogsDir: $E2E_DIR/kubelet-pods
volumePluginDir: $kdir/volume-plugins
resolvConf: /etc/resolv.conf
clusterDNS: [$cluster_dns]
clusterDomain: cluster.local
YAML

start_agent() { # NAME: starts it, waits until it has written Ready after its start, then settles
  local name=$1 node since
  since=$(date -u +%FT%TZ)
  case $name in
    lockstep) node=$E2E_NODE; "$e2e/start-lockstep.sh" ;;
    kubelet)
      node=$kubelet_node
      echo "--- start $since: kubelet" >> "$LOG_DIR/kubelet.log"
      setsid "$kubelet_bin" --config="$E2E_DIR/kubelet-config.yaml" --kubeconfig="$E2E_DIR/kubelet.kubeconfig" \
        --hostname-override="$kubelet_node" --node-ip="$kubelet_ip" --root-dir="$kdir" --cert-dir="$kdir/pki" \
        --v="${BENCH_KUBELET_V:-2}" >>"$LOG_DIR/kubelet.log" 2>&1 < /dev/null &
      echo $! > "$PID_DIR/kubelet"
      log "kubelet pid $! on 127.0.0.1:$kubelet_port as node $kubelet_node (node IP $kubelet_ip)" ;;
    *) log "unknown agent $name (lockstep or kubelet)"; exit 2 ;;
  esac
  # No node lifecycle controller runs, so a node's Ready condition is stale
  # after its agent stops: wait for a heartbeat written after this start.
  for i in $(seq 1200); do
    beat=$(api "/api/v1/nodes/$node" 2>/dev/null | jq -r '.status.conditions[]? | select(.type=="Ready" and .status=="True") | .lastHeartbeatTime' || true)
    if [[ -n $beat && ! $beat < $since ]]; then
      log "$name: node $node Ready (heartbeat $beat) after $((i / 10)).$((i % 10)) s; settling ${settle} s"
      sleep "$settle"
      return 0
    fi
    kill -0 "$(cat "$PID_DIR/$name")" 2>/dev/null || { log "$name exited; see $LOG_DIR/$name.log:"; tail -20 "$LOG_DIR/$name.log" >&2; exit 1; }
    sleep 0.1
  done
  log "$name: node $node not Ready 120 s after start; see $LOG_DIR/$name.log"; exit 1
}

uptime | sed 's/^/machine load before the runs:/' | tee "$keep_logs/uptime-before.txt"
for round in $(seq "$runs"); do
  for agent in $agents; do
    log "=== round $round/$runs: $agent"
    start_agent "$agent"
    case $agent in lockstep) node=$E2E_NODE port=$lockstep_port ;; kubelet) node=$kubelet_node port=$kubelet_port ;; esac
    (cd "$repo/e2e" && LOCKSTEP_E2E_DIR="$E2E_DIR" LOCKSTEP_E2E_NODE="$node" LOCKSTEP_E2E_PORT="$port" \
      LOCKSTEP_E2E_AGENT="$agent" LOCKSTEP_E2E_RESULTS="$results" \
      "$E2E_DIR/bin/e2e.test" -test.run '^TestPodStartAndDeleteFigures$' -test.count 1 -test.v -test.timeout 15m) \
      2>&1 | tee -a "$keep_logs/go-test.log"
    stop_agent "$agent"
  done
done
uptime | sed 's/^/machine load after the runs:/' | tee "$keep_logs/uptime-after.txt"
