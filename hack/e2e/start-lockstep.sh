#!/usr/bin/env bash
# (Re)starts `lockstep node` with the arguments in $E2E_DIR/lockstep.args
# (one per line); appends to $E2E_DIR/logs/lockstep.log. The e2e tests call it
# after SIGKILLing lockstep to check a restart disturbs nothing.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
mapfile -t args < "$E2E_DIR/lockstep.args"
echo "--- start $(date -u +%FT%TZ): lockstep ${args[*]}" >> "$LOG_DIR/lockstep.log"
setsid "$E2E_DIR/bin/lockstep" "${args[@]}" >>"$LOG_DIR/lockstep.log" 2>&1 < /dev/null &
echo $! > "$PID_DIR/lockstep"
log "lockstep pid $! (secure port from $E2E_DIR/lockstep.args)"
