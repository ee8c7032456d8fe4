#!/usr/bin/env bash
# Builds upstream metrics-server (sigs.k8s.io/metrics-server v0.8.0) from
# its own nested module (hack/e2e/metrics-server) under `nice -n 19`, and
# caches it in $LOCKSTEP_E2E_CACHE/metrics-server-<sha256 of
# metrics-server/go.mod+go.sum+this script>/. Prints the path of the binary.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_E2E_CACHE:-$HOME/.cache/lockstep-e2e}"
hash="$(cat "$here/metrics-server/go.mod" "$here/metrics-server/go.sum" "$here/build-metrics-server.sh" | sha256sum | cut -c1-16)"
out="$cache_root/metrics-server-$hash"
if [[ -x "$out/metrics-server" ]]; then
  echo "metrics-server cached in $out" >&2
  echo "$out/metrics-server"
  exit 0
fi
mkdir -p "$out.tmp"
start=$SECONDS
cd "$here/metrics-server"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
nice -n 19 go build -trimpath -ldflags="-s -w" -o "$out.tmp/metrics-server" sigs.k8s.io/metrics-server/cmd/metrics-server >&2
echo "metrics-server built in $((SECONDS - start)) s" >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/metrics-server"
