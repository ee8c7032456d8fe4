#!/usr/bin/env bash
# Starts containerd with its own config, root, state and socket under
# $E2E_DIR/containerd, a bridge CNI network, and imports locally built busybox
# and pause images into namespace k8s.io.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
cd_dir="$E2E_DIR/containerd"
mkdir -p "$cd_dir"/{root,state,runc,cni/conf,cni/cache,certs.d} "$LOG_DIR" "$PID_DIR"
cat > "$cd_dir/cni/conf/10-lockstep-e2e.conflist" <<JSON
{
  "cniVersion": "0.4.0",
  "name": "lockstep-e2e",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$E2E_BRIDGE",
      "isGateway": true,
      "ipMasq": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "$E2E_SUBNET"}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": "$cd_dir/cni/ipam"
      }
    }
  ]
}
JSON
cat > "$cd_dir/config.toml" <<TOML
version = 2
root = "$cd_dir/root"
state = "$cd_dir/state"
[grpc]
  address = "$CONTAINERD_SOCK"
[ttrpc]
  address = "$cd_dir/containerd.sock.ttrpc"
[debug]
  address = "$cd_dir/debug.sock"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "docker.io/library/pause:e2e"
  restrict_oom_score_adj = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    snapshotter = "overlayfs"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = "$cd_dir/runc"
    # A second runc handler for the RuntimeClass e2e test (runtimeClassName).
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-alt]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc-alt.options]
        SystemdCgroup = false
        Root = "$cd_dir/runc"
  # Registry hosts (hosts.toml per host:port); start-registry.sh adds the
  # e2e registry, reached over plain HTTP.
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = "$cd_dir/certs.d"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "$cd_dir/cni/conf"
TOML
# CNI results cache defaults to /var/lib/cni; keep it in the scratch dir.
if [[ -f "$PID_DIR/containerd" ]] && kill -0 "$(cat "$PID_DIR/containerd")" 2>/dev/null; then
  log "containerd already running (pid $(cat "$PID_DIR/containerd"))"
else
  containerd --config "$cd_dir/config.toml" >>"$LOG_DIR/containerd.log" 2>&1 &
  echo $! > "$PID_DIR/containerd"
  for _ in $(seq 100); do [[ -S "$CONTAINERD_SOCK" ]] && break; sleep 0.1; done
  [[ -S "$CONTAINERD_SOCK" ]] || { log "containerd did not start; see $LOG_DIR/containerd.log"; exit 1; }
  log "containerd pid $(cat "$PID_DIR/containerd") on $CONTAINERD_SOCK"
fi
"$here/build-images.sh"
