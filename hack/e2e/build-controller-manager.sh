#!/usr/bin/env bash
# Builds kube-controller-manager (v1.37.2) from the conformance tools module
# (hack/conformance/tools, which builds it for make conformance; the e2e
# tools module's go.sum lacks some of its modules, and changing that module
# would change the control plane's cache key) and caches it under
# $LOCKSTEP_E2E_CACHE/kcm-<sha256 of that go.mod+go.sum+this script>/.
# e2e/simsweep_test.go runs its job controller alone, so that the Indexed
# Job of examples/sim-sweep-job.yaml gets its pods. Prints the binary's path.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache_root="${LOCKSTEP_E2E_CACHE:-$HOME/.cache/lockstep-e2e}"
tools="$here/../conformance/tools"
hash="$(cat "$tools/go.mod" "$tools/go.sum" "$0" | sha256sum | cut -c1-16)"
out="$cache_root/kcm-$hash"
if [[ -x "$out/kube-controller-manager" ]]; then
  echo "kube-controller-manager cached in $out" >&2
  echo "$out/kube-controller-manager"
  exit 0
fi
mkdir -p "$out"
start=$SECONDS
cd "$tools"
export GOFLAGS="-mod=readonly -buildvcs=false" GOWORK=off
v=k8s.io/component-base/version
ldflags="-s -w -X $v.gitVersion=v1.37.2 -X $v.gitMajor=1 -X $v.gitMinor=37 -X $v.gitTreeState=clean"
go build -trimpath -ldflags="$ldflags" -o "$out/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager >&2
mv "$out/kube-controller-manager.tmp" "$out/kube-controller-manager"
echo "kube-controller-manager built in $((SECONDS - start)) s" >&2
echo "$out/kube-controller-manager"
