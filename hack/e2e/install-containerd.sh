#!/usr/bin/env bash
# Installs containerd, runc, the CNI plugins, busybox-static and the tools
# the scripts use (jq, curl) from Debian
# packages (skipped when already installed).
set -euo pipefail
need=()
for p in containerd runc containernetworking-plugins busybox-static iptables openssl python3 jq curl; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}"
fi
