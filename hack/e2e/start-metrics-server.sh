#!/usr/bin/env bash
# Starts the upstream metrics-server (build-metrics-server.sh) on a free
# loopback port against the e2e apiserver, and registers it as the
# v1beta1.metrics.k8s.io APIService so that `kubectl top` works. No
# kube-proxy runs, so the APIService's Service is an ExternalName
# "localhost": the aggregator dials ExternalName:<APIService port>. Needs the
# aggregation layer on the apiserver (run.sh passes --requestheader-* and
# --proxy-client-*). metrics-server scrapes lockstep's /metrics/resource
# with the admin token every 10 s, 5 s timeout (InternalIP, the node's daemonEndpoints
# port, self-signed serving certificate: --kubelet-insecure-tls). Writes
# pids/metrics-server; stop.sh stops it.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
bin="${METRICS_SERVER_BIN:-$("$here/build-metrics-server.sh")}"
kubectl="${LOCKSTEP_E2E_KUBECTL:-$("$here/build-kubectl.sh")}"
kc="$E2E_DIR/admin.kubeconfig"
d="$E2E_DIR/metrics-server"
mkdir -p "$d" "$LOG_DIR" "$PID_DIR"
port=$(free_port)
"$bin" --secure-port "$port" --bind-address 127.0.0.1 --cert-dir "$d" \
  --kubeconfig "$kc" --authentication-kubeconfig "$kc" --authorization-kubeconfig "$kc" \
  --kubelet-preferred-address-types InternalIP --kubelet-use-node-status-port --kubelet-insecure-tls \
  --metric-resolution 10s --kubelet-request-timeout 5s --v 2 \
  >>"$LOG_DIR/metrics-server.log" 2>&1 &
echo $! > "$PID_DIR/metrics-server"

"$kubectl" --kubeconfig "$kc" apply -f - >&2 <<YAML
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec: {type: ExternalName, externalName: localhost}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  insecureSkipTLSVerify: true
  service: {name: metrics-server, namespace: kube-system, port: $port}
YAML

for i in $(seq 300); do
  if curl -skf "https://127.0.0.1:$port/readyz" >/dev/null 2>&1 || curl -sk -o /dev/null -w '%{http_code}' "https://127.0.0.1:$port/livez" 2>/dev/null | grep -q '^[24]'; then
    log "metrics-server listening on https://127.0.0.1:$port after $((i / 10)).$((i % 10)) s"
    exit 0
  fi
  kill -0 "$(cat "$PID_DIR/metrics-server")" 2>/dev/null || { log "metrics-server exited; see $LOG_DIR/metrics-server.log"; exit 1; }
  sleep 0.1
done
log "metrics-server not listening after 30 s; see $LOG_DIR/metrics-server.log"
exit 1
