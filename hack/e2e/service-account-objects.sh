#!/usr/bin/env bash
# Creates what a controller manager would for namespace default once the
# ServiceAccount admission plugin is on: the `default` ServiceAccount and
# the `kube-root-ca.crt` configMap (the apiserver's serving CA), so pods get
# and can mount the kube-api-access volume. Idempotent (409 is fine).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
server=$(awk '/server:/ {print $2; exit}' "$E2E_DIR/admin.kubeconfig")
ca="$E2E_DIR/apiserver/serving.crt"
tok=$(cat "$E2E_DIR/admin.token")
post() { # PATH JSON
  local code
  code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$ca" -H "Authorization: Bearer $tok" \
    -H 'Content-Type: application/json' -X POST --data-binary "$2" "$server$1")
  [[ $code == 201 || $code == 409 ]] || { log "POST $1: HTTP $code"; exit 1; }
}
post /api/v1/namespaces/default/serviceaccounts '{"metadata":{"name":"default"}}'
post /api/v1/namespaces/default/configmaps \
  "$(jq -n --rawfile crt "$ca" '{metadata:{name:"kube-root-ca.crt"},data:{"ca.crt":$crt}}')"
log "service account default/default and configMap default/kube-root-ca.crt in place"
