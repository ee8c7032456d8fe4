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
repo="$(cd "$here/../.." && pwd)"
e2e="$repo/hack/e2e"
# Distinct from `make e2e`'s scratch dir, bridge and subnet.
export E2E_DIR="${E2E_DIR:-/tmp/lockstep-conformance}"
export E2E_NODE="${E2E_NODE:-conformance-node}"
export E2E_BRIDGE="${E2E_BRIDGE:-lscnf0}"
export E2E_SUBNET="${E2E_SUBNET:-10.88.79.0/24}"
source "$e2e/lib.sh"
keep_logs="${E2E_LOGS:-/tmp/lockstep-conformance-logs-$(date -u +%Y%m%dT%H%M%S)}"
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

timings=()
phase_start=$SECONDS
phase() { # NAME: ends the current phase, starts NAME
  [[ -n ${cur:-} ]] && timings+=("$(printf '%-24s %5d s' "$cur" $((SECONDS - phase_start)))")
  cur=$1; phase_start=$SECONDS
  log "=== $1"
}
finish() {
  local rc=$?
  set +e
  phase teardown
  for p in kube-scheduler kube-controller-manager; do
    [[ -f $PID_DIR/$p ]] && { kill -KILL "$(cat "$PID_DIR/$p")" 2>/dev/null; rm -f "$PID_DIR/$p"; }
  done
  "$e2e/stop.sh" 9>&-
  timings+=("$(printf '%-24s %5d s' teardown $((SECONDS - phase_start)))")
  mkdir -p "$keep_logs" && cp -a "$LOG_DIR"/. "$keep_logs"/ 2>/dev/null
  rm -rf "$E2E_DIR" /tmp/test-kuberc*
  echo; echo "phase timings:"; printf '  %s\n' "${timings[@]}"
  echo "logs (containerd, etcd, kube-apiserver, controller manager, scheduler, lockstep, e2e.test, junit): $keep_logs"
  [[ -f $keep_logs/table.txt ]] && cat "$keep_logs/table.txt"
  echo "conformance run: $([[ $rc == 0 ]] && echo "all applicable specs passed" || echo "FAIL (exit $rc)")"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

set -e
phase "install packages"
"$e2e/install-containerd.sh"
# netcat-openbsd for the agnhost image (build-images.sh): the networking
# specs run `nc -u`, which Debian's busybox nc lacks.
dpkg -s netcat-openbsd >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq netcat-openbsd
phase "build lockstep"
mkdir -p "/tmp/lockstep-conformance-build"
(cd "$repo" && nice -n 19 go build -o /tmp/lockstep-conformance-build/lockstep ./cmd/lockstep)
phase "build control plane"
export CONTROL_PLANE_BIN="$(nice -n 19 "$e2e/build-control-plane.sh")"
phase "build suite"
export CONFORMANCE_BIN="$("$here/build.sh")"
if [[ -n ${E2E_LOCK:-} ]]; then
  phase "wait for $E2E_LOCK"
  exec 9>"$E2E_LOCK"
  flock 9
fi

phase "start containerd"
"$e2e/stop.sh" # a previous run killed hard may have left things behind
rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR" "$E2E_DIR/bin"
cp /tmp/lockstep-conformance-build/lockstep "$E2E_DIR/bin/lockstep"
# Nothing started below may hold the lock's descriptor: it is closed for them.
"$e2e/start-containerd.sh" 9>&-
"$here/build-images.sh" 9>&-

phase "start control plane"
pki="$E2E_DIR/pki"; mkdir -p "$pki"
# The cluster CA signs the apiserver's client certificate for the kubelet API;
# lockstep trusts it with --client-ca-file.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=lockstep-conformance-ca" \
  -keyout "$pki/ca.key" -out "$pki/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=kube-apiserver-kubelet-client" \
  -keyout "$pki/kubelet-client.key" -out "$pki/kubelet-client.csr" 2>/dev/null
openssl x509 -req -in "$pki/kubelet-client.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
  -days 2 -out "$pki/kubelet-client.crt" 2>/dev/null
export E2E_DISABLE_ADMISSION=""
export E2E_APISERVER_ARGS="--client-ca-file $pki/ca.crt --kubelet-client-certificate $pki/kubelet-client.crt --kubelet-client-key $pki/kubelet-client.key --kubelet-preferred-address-types InternalIP,Hostname"
"$e2e/start-control-plane.sh" 9>&-
kc="$E2E_DIR/admin.kubeconfig"
d="$E2E_DIR/apiserver"
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
cat > "$E2E_DIR/lockstep.args" <<ARGS
node
--kubeconfig=$E2E_DIR/node.kubeconfig
--container-runtime-endpoint=unix://$CONTAINERD_SOCK
--pod-manifest-path=$E2E_DIR/manifests
--hostname-override=$E2E_NODE
--node-ip=$node_ip
--root-dir=$E2E_DIR/lockstep
--pod-logs-dir=$E2E_DIR/pods
--container-logs-dir=$E2E_DIR/containers
--address=$node_ip
--port=10250
--read-only-port=0
--client-ca-file=$pki/ca.crt
--authorization-mode=Webhook
--v=${E2E_LOCKSTEP_V:-2}
ARGS
"$e2e/start-lockstep.sh" 9>&-
api() { # PATH: GET from the apiserver as admin
  curl -sf --cacert "$d/serving.crt" -H "Authorization: Bearer $(cat "$E2E_DIR/admin.token")" \
    "$(awk '/server:/ {print $2}' "$kc")$1"
}
for _ in $(seq 120); do
  [[ $(api "/api/v1/nodes/$E2E_NODE" | jq -r '.status.conditions[]? | select(.type=="Ready") | .status') == True ]] \
    && api /api/v1/namespaces/default/serviceaccounts/default >/dev/null && break
  sleep 1
done
log "node: $(api "/api/v1/nodes/$E2E_NODE" | jq -c '{addresses: .status.addresses, daemonEndpoints: .status.daemonEndpoints, ready: [.status.conditions[]? | select(.type=="Ready") | .status]}')"

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
    suite "$report/shard-$i" "$LOG_DIR/e2e.test-$i.log" "${rxs[$i]}" & pids+=($!)
  done
  log "${#rxs[@]} e2e.test processes: ${pids[*]}"
  for p in "${pids[@]}"; do wait "$p" || rc=$?; done
else
  suite "$report" "$LOG_DIR/e2e.test.log" "$focus" || rc=$?
fi
python3 "$here/table.py" --junit "$report" --focus "$focus" --skip "$skip" \
  --not-applicable "$na_file" --wall "$((SECONDS - suite_start))" >"$LOG_DIR/table.txt" || rc=1
exit "$rc"
