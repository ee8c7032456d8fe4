#!/usr/bin/env bash
# Builds what `make conformance` and `make node-conformance` need beyond the
# e2e control plane from the nested tools module (hack/conformance/tools):
# the upstream suites e2e.test and e2e_node.test, kube-controller-manager,
# kube-scheduler and a static agnhost. Every build runs under `nice -n 19`
# (the machine is shared). The binaries are cached in
# $LOCKSTEP_CONFORMANCE_CACHE/<sha256 of tools/go.mod+go.sum+this script>/,
# so a second run reuses them; each is built on its own the first time it is
# asked for. Prints the directory holding the binaries.
# Usage: build.sh [BINARY...]   (default: e2e.test kube-controller-manager
#                                kube-scheduler agnhost, what make conformance runs)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_CONFORMANCE_CACHE:-$HOME/.cache/lockstep-conformance}"
hash="$(cat "$here/tools/go.mod" "$here/tools/go.sum" "$here/build.sh" | sha256sum | cut -c1-16)"
out="$cache_root/$hash"
bins=("$@")
(( ${#bins[@]} )) || bins=(e2e.test kube-controller-manager kube-scheduler agnhost)
missing=()
for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || missing+=("$b"); done
if (( ${#missing[@]} == 0 )); then
  echo "conformance binaries cached in $out" >&2
  echo "$out"
  exit 0
fi
mkdir -p "$out"
cd "$here/tools"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
start=$SECONDS
for name in "${missing[@]}"; do
  t=$SECONDS tmp="$out/.$name.tmp"
  case $name in
    e2e.test) nice -n 19 go test -c -vet=off -trimpath -ldflags="$ldflags" -o "$tmp" k8s.io/kubernetes/test/e2e >&2 ;;
    e2e_node.test) nice -n 19 go test -c -vet=off -trimpath -ldflags="$ldflags" -o "$tmp" k8s.io/kubernetes/test/e2e_node >&2 ;;
    kube-controller-manager|kube-scheduler)
      nice -n 19 go build -trimpath -ldflags="$ldflags" -o "$tmp" "k8s.io/kubernetes/cmd/$name" >&2 ;;
    agnhost) CGO_ENABLED=0 nice -n 19 go build -trimpath -ldflags="$ldflags" -o "$tmp" k8s.io/kubernetes/test/images/agnhost >&2 ;;
    *) echo "build.sh: unknown binary $name" >&2; exit 2 ;;
  esac
  mv "$tmp" "$out/$name"
  echo "$name built in $((SECONDS - t)) s" >&2
done
echo "conformance binaries built in $((SECONDS - start)) s" >&2
echo "$out"
