#!/usr/bin/env bash
# Builds two OCI images from Debian's busybox-static (no registry is
# reachable) and imports them into containerd's k8s.io namespace:
#   docker.io/library/busybox:e2e  - busybox with relative applet links
#   docker.io/library/pause:e2e    - the sandbox image: sh that exits on TERM
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/lib.sh"
work="$E2E_DIR/images"
rm -rf "$work" && mkdir -p "$work"

# build_image NAME ENTRYPOINT_JSON CMD_JSON [noimport]
build_image() {
  local name=$1 entry=$2 cmd=$3 import=${4:-import} d="$work/$1"
  mkdir -p "$d/rootfs/bin" "$d/rootfs/tmp" "$d/rootfs/etc" "$d/layout/blobs/sha256"
  cp /bin/busybox "$d/rootfs/bin/busybox"
  for a in $(/bin/busybox --list); do
    [[ $a == busybox ]] || ln -sf busybox "$d/rootfs/bin/$a"
  done
  chmod 1777 "$d/rootfs/tmp"
  echo 'root:x:0:0:root:/root:/bin/sh' > "$d/rootfs/etc/passwd"
  echo 'root:x:0:' > "$d/rootfs/etc/group"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$d/rootfs" -cf "$d/layer.tar" .
  local ldig lsize cdig csize mdig msize
  ldig=$(sha256sum "$d/layer.tar" | cut -d' ' -f1); lsize=$(stat -c %s "$d/layer.tar")
  mv "$d/layer.tar" "$d/layout/blobs/sha256/$ldig"
  printf '{"architecture":"amd64","os":"linux","config":{"Env":["PATH=/bin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$entry" "$cmd" "$ldig" > "$d/config.json"
  cdig=$(sha256sum "$d/config.json" | cut -d' ' -f1); csize=$(stat -c %s "$d/config.json")
  mv "$d/config.json" "$d/layout/blobs/sha256/$cdig"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cdig" "$csize" "$ldig" "$lsize" > "$d/manifest.json"
  mdig=$(sha256sum "$d/manifest.json" | cut -d' ' -f1); msize=$(stat -c %s "$d/manifest.json")
  mv "$d/manifest.json" "$d/layout/blobs/sha256/$mdig"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"docker.io/library/%s:e2e","org.opencontainers.image.ref.name":"e2e"}}]}' \
    "$mdig" "$msize" "$name" > "$d/layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$d/layout/oci-layout"
  tar -C "$d/layout" -cf "$d/$name.tar" .
  if [[ $import == import ]]; then
    ctr -a "$CONTAINERD_SOCK" -n k8s.io images import --no-unpack=false "$d/$name.tar" >&2 \
      || ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$d/$name.tar" >&2
  fi
  rm -rf "$d/rootfs"
}

build_image busybox 'null' '["sh"]'
# The private registry's image (hack/e2e/start-registry.sh): busybox with
# another config, so another image ID. Were it busybox:e2e's ID, pulling it
# with a secret would make the local busybox:e2e an image the node pulled
# with credentials, which pods without them may not use under pull policy
# Never (KubeletEnsureSecretPulledImages, as upstream). Not imported.
build_image busybox-private 'null' '["/bin/sh"]' noimport
build_image pause '["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"]' 'null'
ctr -a "$CONTAINERD_SOCK" -n k8s.io images ls -q >&2
