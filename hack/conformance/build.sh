#!/usr/bin/env bash
# Builds what `make conformance` needs beyond the e2e control plane from the
# nested tools module (hack/conformance/tools): the upstream suite e2e.test,
# kube-controller-manager, kube-scheduler and a static agnhost. Every build
# runs under `nice -n 19` (the machine is shared). The binaries are cached in
# $LOCKSTEP_CONFORMANCE_CACHE/<sha256 of tools/go.mod+go.sum+this script>/,
# so a second run reuses them. Prints the directory holding the binaries.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_CONFORMANCE_CACHE:-$HOME/.cache/lockstep-conformance}"
hash="$(cat "$here/tools/go.mod" "$here/tools/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
out="$cache_root/$hash"
bins=(e2e.test kube-controller-manager kube-scheduler agnhost)
cached=1
for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || cached=0; done
if (( cached )); then
  echo "conformance binaries cached in $out" >&2
  echo "$out"
  exit 0
fi
mkdir -p "$out.tmp"
cd "$here/tools"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
build() { # build NAME PACKAGE [extra go build args]
  local name=$1 pkg=$2 start=$SECONDS
  shift 2
  [[ -x "$out.tmp/$name" ]] && return 0
  nice -n 19 go build -trimpath -ldflags="$ldflags" -o "$out.tmp/$name" "$@" "$pkg" >&2
  echo "$name built in $((SECONDS - start)) s" >&2
}
start=$SECONDS
if [[ ! -x "$out.tmp/e2e.test" ]]; then
  nice -n 19 go test -c -vet=off -trimpath -ldflags="$ldflags" -o "$out.tmp/e2e.test" k8s.io/kubernetes/test/e2e >&2
  echo "e2e.test built in $((SECONDS - start)) s" >&2
fi
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler
CGO_ENABLED=0 build agnhost k8s.io/kubernetes/test/images/agnhost
echo "conformance binaries built in $((SECONDS - start)) s" >&2
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
