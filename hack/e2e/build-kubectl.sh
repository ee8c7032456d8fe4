#!/usr/bin/env bash
# Builds upstream kubectl (k8s.io/kubernetes/cmd/kubectl, the version the
# control plane is built from) from its own nested module (hack/e2e/kubectl)
# under `nice -n 19`, and caches it in
# $LOCKSTEP_E2E_CACHE/kubectl-<sha256 of kubectl/go.mod+go.sum+this script>/,
# a cache key of its own so the control plane's stays as it is. Prints the
# path of the binary.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_E2E_CACHE:-$HOME/.cache/lockstep-e2e}"
hash="$(cat "$here/kubectl/go.mod" "$here/kubectl/go.sum" "$here/build-kubectl.sh" | sha256sum | cut -c1-16)"
out="$cache_root/kubectl-$hash"
if [[ -x "$out/kubectl" ]]; then
  echo "kubectl cached in $out" >&2
  echo "$out/kubectl"
  exit 0
fi
mkdir -p "$out.tmp"
start=$SECONDS
cd "$here/kubectl"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
nice -n 19 go build -trimpath -ldflags="$ldflags" -o "$out.tmp/kubectl" k8s.io/kubernetes/cmd/kubectl >&2
echo "kubectl built in $((SECONDS - start)) s" >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/kubectl"
