#!/usr/bin/env bash
# Installs what the image pull tests need, from Debian packages (skipped
# when already installed): docker-registry (distribution 2.8, the local
# registry), apache2-utils (htpasswd, its basic-auth users) and skopeo (to
# push the OCI archives build-images.sh makes). The package's own service is
# not used: if its install started one, it is stopped again.
set -euo pipefail
need=()
for p in docker-registry apache2-utils skopeo; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
  if [[ " ${need[*]} " == *" docker-registry "* && -x /etc/init.d/docker-registry ]]; then
    /etc/init.d/docker-registry status >/dev/null 2>&1 && /etc/init.d/docker-registry stop >/dev/null 2>&1 || true
  fi
fi
