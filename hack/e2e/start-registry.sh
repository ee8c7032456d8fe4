#!/usr/bin/env bash
# Starts a private registry for the image pull tests: Debian's
# docker-registry (distribution 2.8) on a free loopback port over plain
# HTTP, with htpasswd (bcrypt) basic auth, its storage under
# $E2E_DIR/registry; pushes the busybox-private OCI layout build-images.sh made
# as <addr>/private/busybox:e2e with skopeo; and tells containerd (whose
# config_path is $E2E_DIR/containerd/certs.d) to reach it over HTTP.
# Writes registry/addr, registry/user and registry/password for the tests.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
reg="$E2E_DIR/registry"
mkdir -p "$reg/data" "$LOG_DIR" "$PID_DIR"
user=e2e-puller
password="pw-$(od -An -N8 -tx8 /dev/urandom | tr -d ' ')"
htpasswd -Bbn "$user" "$password" > "$reg/htpasswd" 2>/dev/null
port=$(free_port)
addr="127.0.0.1:$port"
cat > "$reg/config.yml" <<YAML
version: 0.1
log: {level: warn}
storage:
  filesystem: {rootdirectory: $reg/data}
http:
  addr: $addr
auth:
  htpasswd: {realm: lockstep-e2e, path: $reg/htpasswd}
YAML
docker-registry serve "$reg/config.yml" >>"$LOG_DIR/registry.log" 2>&1 &
echo $! > "$PID_DIR/registry"
for _ in $(seq 100); do
  [[ $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/") == 401 ]] && break
  sleep 0.1
done
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://$addr/v2/") == 401 ]] ||
  { log "registry did not start (or does not ask for credentials); see $LOG_DIR/registry.log"; exit 1; }
skopeo copy --quiet --dest-tls-verify=false --dest-creds "$user:$password" \
  "oci:$E2E_DIR/images/busybox-private/layout:e2e" "docker://$addr/private/busybox:e2e" >&2
mkdir -p "$E2E_DIR/containerd/certs.d/$addr"
cat > "$E2E_DIR/containerd/certs.d/$addr/hosts.toml" <<TOML
server = "http://$addr"
[host."http://$addr"]
  capabilities = ["pull", "resolve"]
TOML
echo "$addr" > "$reg/addr"; echo "$user" > "$reg/user"; echo "$password" > "$reg/password"
log "registry pid $(cat "$PID_DIR/registry") on http://$addr (basic auth), holding $addr/private/busybox:e2e"
