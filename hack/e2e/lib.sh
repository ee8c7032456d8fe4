# Shared settings of the e2e scripts; sourced, not run.
# E2E_DIR is the scratch directory holding every file, socket, mount and log
# of one e2e run; nothing is written outside it (except the binary cache).
E2E_DIR="${E2E_DIR:-/tmp/lockstep-e2e}"
E2E_NODE="${E2E_NODE:-e2e-node}"
E2E_BRIDGE="${E2E_BRIDGE:-lse2e0}"
E2E_SUBNET="${E2E_SUBNET:-10.88.77.0/24}"
E2E_CGROUP_PARENT="${E2E_CGROUP_PARENT:-}"
CONTAINERD_SOCK="$E2E_DIR/containerd/containerd.sock"
LOG_DIR="$E2E_DIR/logs"
PID_DIR="$E2E_DIR/pids"
log() { printf '[e2e %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2; }
# free_port prints a TCP port nobody listens on right now.
free_port() { python3 - <<'PY' 2>/dev/null || shuf -i 20000-60000 -n1
import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()
PY
}
# unmount_under DIR: unmounts every mount at or below DIR, deepest first
# (an agent's root directory is a bind mount of itself, made shared at start,
# and pods' volumes may hold mounts below it); never fails.
unmount_under() {
  awk -v d="${1%/}/" 'index($2 "/", d) == 1 {print $2}' /proc/self/mounts | sort -r | while read -r m; do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null
  done
  return 0
}
