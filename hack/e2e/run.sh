#!/usr/bin/env bash
# The body of `make e2e`: builds lockstep, starts containerd and the control
# plane, runs `lockstep node` as system:node:$E2E_NODE, runs the e2e tests,
# and tears everything down even when something fails. Logs of containerd,
# etcd, kube-apiserver and lockstep stay in a directory printed at the end.
# Usage (as root): hack/e2e/run.sh [extra go test args, e.g. -run TestNode]
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
export E2E_DIR="${E2E_DIR:-/tmp/lockstep-e2e}"
source "$here/lib.sh"
keep_logs="${E2E_LOGS:-/tmp/lockstep-e2e-logs-$(date -u +%Y%m%dT%H%M%S)}"

timings=()
phase_start=$SECONDS
phase() { # NAME: ends the current phase, starts NAME
  [[ -n ${cur:-} ]] && timings+=("$(printf '%-24s %4d s' "$cur" $((SECONDS - phase_start)))")
  cur=$1; phase_start=$SECONDS
  log "=== $1"
}
finish() {
  local rc=$?
  phase teardown
  "$here/stop.sh"
  timings+=("$(printf '%-24s %4d s' teardown $((SECONDS - phase_start)))")
  mkdir -p "$keep_logs" && cp -a "$LOG_DIR"/. "$keep_logs"/ 2>/dev/null
  rm -rf "$E2E_DIR"
  echo; echo "phase timings:"; printf '  %s\n' "${timings[@]}"
  echo "logs (containerd, etcd, kube-apiserver, lockstep): $keep_logs"
  echo "e2e result: $([[ $rc == 0 ]] && echo PASS || echo "FAIL (exit $rc)")"
  exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

set -e
"$here/stop.sh" # a previous run killed hard may have left things behind
rm -rf "$E2E_DIR"; mkdir -p "$LOG_DIR" "$PID_DIR"

phase "install packages"
"$here/install-containerd.sh"
"$here/install-registry.sh"
phase "build lockstep"
(cd "$repo" && go build -o "$E2E_DIR/bin/lockstep" ./cmd/lockstep)
phase "build control plane"
export CONTROL_PLANE_BIN="$("$here/build-control-plane.sh")"
phase "build controller-manager"
export LOCKSTEP_E2E_KCM="$("$here/build-controller-manager.sh")"
phase "build kubectl"
export LOCKSTEP_E2E_KUBECTL="$("$here/build-kubectl.sh")"
phase "build metrics-server"
export METRICS_SERVER_BIN="$("$here/build-metrics-server.sh")"
if [[ -n ${E2E_LOCK:-} ]]; then
  # Another agent on this machine (make conformance, make node-conformance,
  # make diff-kubelet) shares the kubepods cgroups: each would remove the
  # other's pod cgroups as orphans. Wait for the lock after building.
  phase "wait for $E2E_LOCK"
  exec 9>"$E2E_LOCK"
  flock 9
fi
phase "start containerd"
"$here/start-containerd.sh"
phase "start registry"
"$here/start-registry.sh"
phase "start control plane"
# A cluster CA signs the apiserver's client certificate for the kubelet API
# (kubectl logs/exec/attach/port-forward go apiserver → lockstep, which
# trusts the CA with --client-ca-file); the apiserver reaches the node at
# its InternalIP, as in hack/conformance.
# The same CA signs the front proxy's client certificate (the aggregation
# layer, below), which only the name front-proxy-client may use.
pki="$E2E_DIR/pki"
"$here/make-pki.sh" "$pki" lockstep-e2e-ca \
  "kubelet-client:/O=system:masters/CN=kube-apiserver-kubelet-client" \
  "front-proxy-client:/CN=front-proxy-client"
# The apiserver also trusts the CA for client certificates and accepts
# bootstrap tokens: e2e/bootstrap_test.go joins a second node with a
# bootstrap token and signs its CSRs with the CA (no controller manager).
export E2E_APISERVER_ARGS="${E2E_APISERVER_ARGS:-} --kubelet-client-certificate $pki/kubelet-client.crt --kubelet-client-key $pki/kubelet-client.key --kubelet-preferred-address-types InternalIP,Hostname --client-ca-file $pki/ca.crt --enable-bootstrap-token-auth"
# The aggregation layer (metrics-server behind the metrics.k8s.io
# APIService, for kubectl top) with the front proxy's certificate.
E2E_APISERVER_ARGS+=" --requestheader-client-ca-file $pki/ca.crt --requestheader-allowed-names front-proxy-client"
E2E_APISERVER_ARGS+=" --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group --requestheader-extra-headers-prefix X-Remote-Extra-"
E2E_APISERVER_ARGS+=" --proxy-client-cert-file $pki/front-proxy-client.crt --proxy-client-key-file $pki/front-proxy-client.key"
# ServiceAccount admission on (pods get the kube-api-access volume); the
# objects a controller manager would create come from the script below.
E2E_DISABLE_ADMISSION="" "$here/start-control-plane.sh"
"$here/service-account-objects.sh"
phase "start lockstep"
mkdir -p "$E2E_DIR/manifests"
# The node's InternalIP and serving address: not loopback, which the
# apiserver refuses to proxy nodes/<n>/proxy/... to (node-ip.sh).
node_ip=$("$here/node-ip.sh")
port=$(free_port)
# Its own healthz port: the default 127.0.0.1:10248 is make conformance's.
healthz_port=$(free_port)
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
--port=$port
--read-only-port=0
--healthz-port=$healthz_port
--authorization-mode=Webhook
--client-ca-file=$E2E_DIR/pki/ca.crt
--image-gc-high-threshold=100
--pod-infra-container-image=docker.io/library/pause:e2e
--v=${E2E_LOCKSTEP_V:-2}
ARGS
"$here/start-lockstep.sh"
phase "start metrics-server"
"$here/start-metrics-server.sh"
phase "e2e tests"
cd "$repo"
LOCKSTEP_E2E_DIR="$E2E_DIR" LOCKSTEP_E2E_NODE="$E2E_NODE" LOCKSTEP_E2E_PORT="$port" LOCKSTEP_E2E_HEALTHZ_PORT="$healthz_port" LOCKSTEP_E2E_NODE_IP="$node_ip" LOCKSTEP_E2E_KUBECTL="$LOCKSTEP_E2E_KUBECTL" LOCKSTEP_E2E_KCM="$LOCKSTEP_E2E_KCM" \
  go test -tags e2e -count=1 -v -timeout 20m ./e2e/ "$@"
