# The environment `make conformance` (run.sh) and `make node-conformance`
# (node-run.sh) run their suites in, brought up and torn down the same way
# for both; sourced, not run. After sourcing:
#   cnf_build BINARY...     install the packages; build lockstep, the control
#                           plane and build.sh's BINARY... (CONFORMANCE_BIN)
#   cnf_lock                wait for $E2E_LOCK (when set)
#   cnf_start_cluster       containerd, the suite's images, a cluster CA, etcd,
#                           kube-apiserver, kube-controller-manager, kube-scheduler
#   cnf_start_lockstep      `lockstep node` (settings below), waits until Ready
#   cnf_api PATH            GET PATH from the apiserver as admin
# The EXIT trap (cnf_finish) tears everything down whatever happens: the
# scheduler, the controller manager, hack/e2e/stop.sh, then the caller's
# cnf_after_stop when it defines one; keeps the logs in $keep_logs, prints
# the phase timings and $keep_logs/table.txt.
# The caller may set before sourcing: cnf_name (what the last line calls the
# run). Before cnf_start_lockstep: lockstep_root_dir, lockstep_pod_logs_dir,
# lockstep_container_logs_dir, lockstep_address (default: the node IP),
# lockstep_read_only_port (default 0) and lockstep_extra_args (an array).
# Set by the functions: CONFORMANCE_BIN, kc (admin kubeconfig), d (the
# apiserver's dir: serving.crt, admin.token is $E2E_DIR/admin.token), pki,
# node_ip, api_url.
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
e2e="$repo/hack/e2e"
# Distinct from `make e2e`'s scratch dir, bridge and subnet.
export E2E_DIR="${E2E_DIR:-/tmp/lockstep-conformance}"
export E2E_NODE="${E2E_NODE:-conformance-node}"
export E2E_BRIDGE="${E2E_BRIDGE:-lscnf0}"
export E2E_SUBNET="${E2E_SUBNET:-10.88.79.0/24}"
source "$e2e/lib.sh"
keep_logs="${E2E_LOGS:-/tmp/lockstep-conformance-logs-$(date -u +%Y%m%dT%H%M%S)}"
cnf_name="${cnf_name:-conformance run}"

timings=()
phase_start=$SECONDS
phase() { # NAME: ends the current phase, starts NAME
  [[ -n ${cur:-} ]] && timings+=("$(printf '%-24s %5d s' "$cur" $((SECONDS - phase_start)))")
  cur=$1; phase_start=$SECONDS
  log "=== $1"
}
cnf_suite_pids=() # the suite's background processes (shards), killed at teardown
cnf_finish() {
  local rc=$?
  set +e
  phase teardown
  # A run that never got to start anything (a failed build, interrupted
  # while waiting for the lock) leaves $E2E_DIR alone: another run may own it.
  if [[ -n ${cnf_started:-} ]]; then
    # The suite's processes first (shards run in the background: an
    # interrupted run must not leave them driving a cluster being torn down).
    for p in "${cnf_suite_pids[@]}"; do
      pkill -KILL -P "$p" 2>/dev/null; kill -KILL "$p" 2>/dev/null
    done
    for p in kube-scheduler kube-controller-manager; do
      [[ -f $PID_DIR/$p ]] && { kill -KILL "$(cat "$PID_DIR/$p")" 2>/dev/null; rm -f "$PID_DIR/$p"; }
    done
    "$e2e/stop.sh" 9>&-
    declare -F cnf_after_stop >/dev/null && cnf_after_stop
    mkdir -p "$keep_logs" && cp -a "$LOG_DIR"/. "$keep_logs"/ 2>/dev/null
    rm -rf "$E2E_DIR" /tmp/test-kuberc*
  fi
  timings+=("$(printf '%-24s %5d s' teardown $((SECONDS - phase_start)))")
  echo; echo "phase timings:"; printf '  %s\n' "${timings[@]}"
  echo "logs (containerd, etcd, kube-apiserver, controller manager, scheduler, lockstep, suite, junit): $keep_logs"
  [[ -f $keep_logs/table.txt ]] && cat "$keep_logs/table.txt"
  echo "$cnf_name: $([[ $rc == 0 ]] && echo "all applicable specs passed" || echo "FAIL (exit $rc)")"
  exit "$rc"
}
trap cnf_finish EXIT
trap 'exit 130' INT TERM

cnf_build() { # BINARY...: what build.sh builds for the suite
  phase "install packages"
  "$e2e/install-containerd.sh"
  # netcat-openbsd for the agnhost image (build-images.sh): the networking
  # specs run `nc -u`, which Debian's busybox nc lacks.
  dpkg -s netcat-openbsd >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq netcat-openbsd
  phase "build lockstep"
  mkdir -p "/tmp/lockstep-conformance-build"
  (cd "$repo" && nice -n 19 go build -o /tmp/lockstep-conformance-build/lockstep ./cmd/lockstep)
  phase "build control plane"
  CONTROL_PLANE_BIN="$(nice -n 19 "$e2e/build-control-plane.sh")"
  export CONTROL_PLANE_BIN
  phase "build suite"
  CONFORMANCE_BIN="$("$here/build.sh" "$@")"
  # The images' busybox (cached), built here rather than under the lock
  # by build-images.sh; a failure is build-images.sh's to report.
  nice -n 19 "$here/build-busybox.sh" >/dev/null || true
  export CONFORMANCE_BIN
}

cnf_lock() {
  [[ -n ${E2E_LOCK:-} ]] || return 0
  phase "wait for $E2E_LOCK"
  exec 9>"$E2E_LOCK"
  flock 9
}

cnf_start_cluster() {
  phase "start containerd"
  cnf_started=1
  "$e2e/stop.sh" # a previous run killed hard may have left things behind
  rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR" "$E2E_DIR/bin"
  cp /tmp/lockstep-conformance-build/lockstep "$E2E_DIR/bin/lockstep"
  # Nothing started below may hold the lock's descriptor: it is closed for them.
  "$e2e/start-containerd.sh" 9>&-
  "$here/build-images.sh" 9>&-

  phase "start control plane"
  pki="$E2E_DIR/pki"
  # The cluster CA signs the apiserver's client certificate for the kubelet API;
  # lockstep trusts it with --client-ca-file.
  "$e2e/make-pki.sh" "$pki" lockstep-conformance-ca
  export E2E_DISABLE_ADMISSION=""
  export E2E_APISERVER_ARGS="--client-ca-file $pki/ca.crt --kubelet-client-certificate $pki/kubelet-client.crt --kubelet-client-key $pki/kubelet-client.key --kubelet-preferred-address-types InternalIP,Hostname"
  "$e2e/start-control-plane.sh" 9>&-
  kc="$E2E_DIR/admin.kubeconfig"
  d="$E2E_DIR/apiserver"
  api_url="$(awk '/server:/ {print $2}' "$kc")"
  "$CONFORMANCE_BIN/kube-controller-manager" --kubeconfig "$kc" --leader-elect=false \
    --authentication-skip-lookup --authorization-always-allow-paths=/healthz \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$(free_port)" \
    --service-account-private-key-file "$d/sa.key" --root-ca-file "$d/serving.crt" \
    --service-cluster-ip-range 10.96.0.0/16 \
    >>"$LOG_DIR/kube-controller-manager.log" 2>&1 9>&- &
  echo $! > "$PID_DIR/kube-controller-manager"
  "$CONFORMANCE_BIN/kube-scheduler" --kubeconfig "$kc" --leader-elect=false \
    --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
    --bind-address 127.0.0.1 --secure-port "$(free_port)" \
    >>"$LOG_DIR/kube-scheduler.log" 2>&1 9>&- &
  echo $! > "$PID_DIR/kube-scheduler"
}

cnf_api() { # PATH: GET from the apiserver as admin
  curl -sf --cacert "$d/serving.crt" -H "Authorization: Bearer $(cat "$E2E_DIR/admin.token")" "$api_url$1"
}

cnf_start_lockstep() {
  phase "start lockstep"
  mkdir -p "$E2E_DIR/manifests"
  # The node's address must not be loopback: the apiserver refuses to proxy
  # (nodes/proxy, used by the suite to list the node's pods) to loopback
  # addresses. hack/e2e/node-ip.sh picks it: $CONFORMANCE_NODE_IP when set,
  # else the default route's source address, else (no default route) a /32 of
  # its own on a dummy interface or lo that stop.sh removes — another address
  # and interface than make e2e's, so the two never collide.
  node_ip="$(E2E_NODE_IP="${CONFORMANCE_NODE_IP:-}" E2E_NODE_FALLBACK_IP="${CONFORMANCE_NODE_FALLBACK_IP:-203.0.113.78}" \
    E2E_NODE_IFACE=lscnfip0 "$e2e/node-ip.sh" 9>&-)"
  {
    cat <<ARGS
node
--kubeconfig=$E2E_DIR/node.kubeconfig
--container-runtime-endpoint=unix://$CONTAINERD_SOCK
--pod-manifest-path=$E2E_DIR/manifests
--hostname-override=$E2E_NODE
--node-ip=$node_ip
--root-dir=${lockstep_root_dir:-$E2E_DIR/lockstep}
--pod-logs-dir=${lockstep_pod_logs_dir:-$E2E_DIR/pods}
--container-logs-dir=${lockstep_container_logs_dir:-$E2E_DIR/containers}
--address=${lockstep_address:-$node_ip}
--port=10250
--read-only-port=${lockstep_read_only_port:-0}
--client-ca-file=$pki/ca.crt
--authorization-mode=Webhook
--v=${E2E_LOCKSTEP_V:-2}
ARGS
    [[ -n ${lockstep_extra_args+x} ]] && printf '%s\n' "${lockstep_extra_args[@]}"
  } > "$E2E_DIR/lockstep.args"
  "$e2e/start-lockstep.sh" 9>&-
  for _ in $(seq 120); do
    [[ $(cnf_api "/api/v1/nodes/$E2E_NODE" | jq -r '.status.conditions[]? | select(.type=="Ready") | .status') == True ]] \
      && cnf_api /api/v1/namespaces/default/serviceaccounts/default >/dev/null && break
    sleep 1
  done
  log "node: $(cnf_api "/api/v1/nodes/$E2E_NODE" | jq -c '{addresses: .status.addresses, daemonEndpoints: .status.daemonEndpoints, ready: [.status.conditions[]? | select(.type=="Ready") | .status]}')"
}
