#!/usr/bin/env bash
# Starts etcd and kube-apiserver (binaries from build-control-plane.sh) under
# $E2E_DIR/apiserver with Node,RBAC authorization, NodeRestriction, and a
# token file holding an admin token and a node token for system:node:$E2E_NODE.
# Writes kubeconfigs: $E2E_DIR/admin.kubeconfig and $E2E_DIR/node.kubeconfig.
# E2E_DISABLE_ADMISSION (default ServiceAccount: no controller manager runs)
# and E2E_APISERVER_ARGS (extra words) let hack/conformance run a full cluster.
# E2E_EXTRA_NODES (space-separated node names, default none) adds a node token
# for each and writes $E2E_DIR/node-<name>.kubeconfig (hack/bench-compare).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
bin="${CONTROL_PLANE_BIN:-$("$here/build-control-plane.sh")}"
d="$E2E_DIR/apiserver"
disable_admission="${E2E_DISABLE_ADMISSION-ServiceAccount}"
mkdir -p "$d/etcd" "$LOG_DIR" "$PID_DIR"
chmod 700 "$d/etcd"

etcd_client=$(free_port); etcd_peer=$(free_port); api_port=$(free_port)
"$bin/etcd" --name e2e --data-dir "$d/etcd" \
  --listen-client-urls "http://127.0.0.1:$etcd_client" --advertise-client-urls "http://127.0.0.1:$etcd_client" \
  --listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
  --initial-cluster "e2e=http://127.0.0.1:$etcd_peer" --unsafe-no-fsync \
  >>"$LOG_DIR/etcd.log" 2>&1 &
echo $! > "$PID_DIR/etcd"

openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
  -keyout "$d/serving.key" -out "$d/serving.crt" 2>/dev/null
admin_token=$(openssl rand -hex 16); node_token=$(openssl rand -hex 16)
printf '%s,admin,admin,system:masters\n%s,system:node:%s,node-%s,system:nodes\n' \
  "$admin_token" "$node_token" "$E2E_NODE" "$E2E_NODE" > "$d/tokens.csv"
declare -A extra_tokens=()
for n in ${E2E_EXTRA_NODES:-}; do
  extra_tokens[$n]=$(openssl rand -hex 16)
  printf '%s,system:node:%s,node-%s,system:nodes\n' "${extra_tokens[$n]}" "$n" "$n" >> "$d/tokens.csv"
done
echo "$admin_token" > "$E2E_DIR/admin.token"

for _ in $(seq 100); do curl -sf "http://127.0.0.1:$etcd_client/health" >/dev/null && break; sleep 0.1; done

"$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$etcd_client" \
  --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
  --tls-cert-file "$d/serving.crt" --tls-private-key-file "$d/serving.key" \
  --token-auth-file "$d/tokens.csv" \
  --authorization-mode Node,RBAC \
  --enable-admission-plugins NodeRestriction \
  ${disable_admission:+--disable-admission-plugins "$disable_admission"} \
  --service-account-key-file "$d/sa.pub" --service-account-signing-key-file "$d/sa.key" \
  --service-account-issuer https://kubernetes.default.svc \
  --service-cluster-ip-range 10.96.0.0/16 \
  --endpoint-reconciler-type none \
  --allow-privileged=true \
  ${E2E_APISERVER_ARGS:-} \
  >>"$LOG_DIR/kube-apiserver.log" 2>&1 &
echo $! > "$PID_DIR/kube-apiserver"

kubeconfig() { # FILE TOKEN
  cat > "$1" <<YAML
apiVersion: v1
kind: Config
clusters:
- name: e2e
  cluster:
    server: https://127.0.0.1:$api_port
    certificate-authority: $d/serving.crt
users:
- name: u
  user:
    token: $2
contexts:
- name: e2e
  context: {cluster: e2e, user: u}
current-context: e2e
YAML
}
kubeconfig "$E2E_DIR/admin.kubeconfig" "$admin_token"
kubeconfig "$E2E_DIR/node.kubeconfig" "$node_token"
for n in "${!extra_tokens[@]}"; do kubeconfig "$E2E_DIR/node-$n.kubeconfig" "${extra_tokens[$n]}"; done

for i in $(seq 600); do
  if curl -sf --cacert "$d/serving.crt" -H "Authorization: Bearer $admin_token" "https://127.0.0.1:$api_port/readyz" >/dev/null; then
    log "kube-apiserver ready on https://127.0.0.1:$api_port after $((i / 10)).$((i % 10)) s (etcd on $etcd_client)"
    exit 0
  fi
  kill -0 "$(cat "$PID_DIR/kube-apiserver")" 2>/dev/null || { log "kube-apiserver exited; see $LOG_DIR/kube-apiserver.log"; exit 1; }
  sleep 0.1
done
log "kube-apiserver not ready after 60 s; see $LOG_DIR/kube-apiserver.log"
exit 1
