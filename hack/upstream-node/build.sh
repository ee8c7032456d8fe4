#!/usr/bin/env bash
# Builds the upstream node agents lockstep is compared with — the kubelet and
# kubemark's hollow node, from k8s.io/kubernetes at the control plane's
# version — from this nested module under `nice -n 19`, and caches them in
# $LOCKSTEP_E2E_CACHE/upstream-node-<sha256 of go.mod+go.sum+this script>/.
# Prints that directory. Usage: build.sh [kubelet|kubemark]... (default both).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_E2E_CACHE:-$HOME/.cache/lockstep-e2e}"
hash="$(cat "$here/go.mod" "$here/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
out="$cache_root/upstream-node-$hash"
want=("$@")
[[ ${#want[@]} -gt 0 ]] || want=(kubelet kubemark)
mkdir -p "$out"
cd "$here"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
for bin in "${want[@]}"; do
  case "$bin" in kubelet|kubemark) ;; *) echo "build.sh: unknown binary $bin (kubelet or kubemark)" >&2; exit 2 ;; esac
  if [[ -x "$out/$bin" ]]; then
    echo "$bin cached in $out" >&2
    continue
  fi
  start=$SECONDS
  nice -n 19 go build -trimpath -ldflags="$ldflags" -o "$out/$bin.tmp" "k8s.io/kubernetes/cmd/$bin" >&2
  mv "$out/$bin.tmp" "$out/$bin"
  echo "$bin built in $((SECONDS - start)) s" >&2
done
echo "$out"
