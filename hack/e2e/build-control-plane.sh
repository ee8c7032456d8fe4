#!/usr/bin/env bash
# Builds kube-apiserver and etcd from the nested tools module (hack/e2e/tools)
# and caches them under $LOCKSTEP_E2E_CACHE/<sha256 of tools/go.sum>/, so a
# second run reuses the binaries. Prints the directory holding the binaries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_E2E_CACHE:-$HOME/.cache/lockstep-e2e}"
hash="$(cat "$here/tools/go.mod" "$here/tools/go.sum" | sha256sum | cut -c1-16)"
out="$cache_root/$hash"
if [[ -x "$out/kube-apiserver" && -x "$out/etcd" ]]; then
  echo "control plane binaries cached in $out" >&2
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"
start=$SECONDS
cd "$here/tools"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
go build -trimpath -ldflags='-s -w' -o "$out.tmp/etcd" go.etcd.io/etcd/server/v3 >&2
echo "etcd built in $((SECONDS - start)) s" >&2
go build -trimpath -ldflags='-s -w' -o "$out.tmp/kube-apiserver" k8s.io/kubernetes/cmd/kube-apiserver >&2
echo "etcd + kube-apiserver built in $((SECONDS - start)) s" >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
