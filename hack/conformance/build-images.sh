#!/usr/bin/env bash
# Builds the images the upstream suites run (no registry is reachable here)
# as OCI archives and imports them into containerd's k8s.io namespace under
# the names the suites expect. Each is made from busybox 1.37.0 built as
# upstream's busybox image is (build-busybox.sh: static, ash as /bin/sh,
# nmeter and the other default applets; relative applet links), plus:
#   agnhost      the static agnhost binary ($CONFORMANCE_BIN/agnhost) as
#                entrypoint, /bin/sh being Debian's dash, the image's own
#                user and group, a curl stand-in (busybox wget,
#                curl-standin.sh), netcat-openbsd as nc and busybox ash as
#                bash
#   pause        a sh loop that exits on TERM, user 65535
#   nonroot      user 1234
#   nonewprivs   upstream's nnp, setuid root
#   nginx        busybox httpd on port 80
#   glibc-dns-testing, busybox: busybox alone
# Where a suite uses two tags of one image (busybox 1.37.0-2 and 1.36.1-1,
# agnhost 2.66.1 and 2.55, nginx 1.27.0-2 and 1.28.0-2) each tag is an image
# of its own (a label naming it in the config, so a distinct image ID and
# digest): the specs that change a pod's image check that the status's image
# and imageID change with it.
# If busybox 1.37.0 cannot be built (its source cannot be fetched), Debian's
# busybox-static 1.35 serves instead, with a warning: no nmeter (the node
# suite's lifecycle specs fail), and bash as the busybox image's /bin/sh,
# since 1.35's ash drops environment variables with non-identifier names
# (then "should not write to root filesystem" fails on bash's error text).
# Images that cannot be made here (private registries, image volumes) are
# left out; their specs count as not applicable.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/../e2e/lib.sh"
bin="${CONFORMANCE_BIN:?CONFORMANCE_BIN: directory of the binaries build.sh made}"
work="$E2E_DIR/conformance-images"
rm -rf "$work" && mkdir -p "$work"
e2e=registry.k8s.io/e2e-test-images
if bb="$("$here/build-busybox.sh")"; then
  fallback=0
else
  bb=/bin/busybox fallback=1
  echo "build-images.sh: WARNING: busybox 1.37.0 could not be built (above); using Debian's busybox-static 1.35:" \
    "the specs that run nmeter fail, and the busybox image's /bin/sh is bash" >&2
fi

# busybox_rootfs DIR: a root file system of busybox ($bb).
busybox_rootfs() {
  local d=$1
  mkdir -p "$d/bin" "$d/tmp" "$d/etc" "$d/root" "$d/usr/bin"
  cp "$bb" "$d/bin/busybox"
  for a in $("$bb" --list); do [[ $a == busybox ]] || ln -sf busybox "$d/bin/$a"; done
  ln -sf ../../bin/env "$d/usr/bin/env"
  chmod 1777 "$d/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$d/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$d/etc/group"
}

# with_binary DIR FILE: copies FILE and the shared libraries it loads into DIR.
with_binary() {
  local d=$1 f=$2 lib
  mkdir -p "$d$(dirname "$f")" && cp -L "$f" "$d$f"
  for lib in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*'); do
    mkdir -p "$d$(dirname "$lib")" && cp -L "$lib" "$d$lib"
  done
}

# oci_import REF ROOTFS ENTRYPOINT_JSON CMD_JSON USER: tars ROOTFS into a
# one-layer OCI image named REF and imports it. The config's label names REF,
# so two tags made of one ROOTFS are two images.
oci_import() {
  local ref=$1 rootfs=$2 entry=$3 cmd=$4 user=$5 d ldig lsize cdig csize mdig msize
  d="$work/$(echo "$ref" | tr '/:' '__')"
  mkdir -p "$d/layout/blobs/sha256"
  tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -C "$rootfs" -cf "$d/layer.tar" .
  ldig=$(sha256sum "$d/layer.tar" | cut -d' ' -f1); lsize=$(stat -c %s "$d/layer.tar")
  mv "$d/layer.tar" "$d/layout/blobs/sha256/$ldig"
  printf '{"architecture":"amd64","os":"linux","config":{"User":"%s","Labels":{"dev.lockstep.conformance.image":"%s"},"Env":["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"],"Entrypoint":%s,"Cmd":%s,"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}' \
    "$user" "$ref" "$entry" "$cmd" "$ldig" > "$d/config.json"
  cdig=$(sha256sum "$d/config.json" | cut -d' ' -f1); csize=$(stat -c %s "$d/config.json")
  mv "$d/config.json" "$d/layout/blobs/sha256/$cdig"
  printf '{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:%s","size":%s},"layers":[{"mediaType":"application/vnd.oci.image.layer.v1.tar","digest":"sha256:%s","size":%s}]}' \
    "$cdig" "$csize" "$ldig" "$lsize" > "$d/manifest.json"
  mdig=$(sha256sum "$d/manifest.json" | cut -d' ' -f1); msize=$(stat -c %s "$d/manifest.json")
  mv "$d/manifest.json" "$d/layout/blobs/sha256/$mdig"
  printf '{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:%s","size":%s,"platform":{"architecture":"amd64","os":"linux"},"annotations":{"io.containerd.image.name":"%s","org.opencontainers.image.ref.name":"%s"}}]}' \
    "$mdig" "$msize" "$ref" "${ref##*:}" > "$d/layout/index.json"
  echo '{"imageLayoutVersion":"1.0.0"}' > "$d/layout/oci-layout"
  tar -C "$d/layout" -cf "$d/image.tar" .
  ctr -a "$CONTAINERD_SOCK" -n k8s.io images import "$d/image.tar" >&2
  rm -rf "$d/layout"
}

base="$work/rootfs-busybox"
busybox_rootfs "$base"
if (( fallback )); then
  # Debian's busybox 1.35 ash drops environment variables whose names are
  # not shell identifiers (envFrom keys like data-1, which the ConfigMap and
  # Secret "via the environment" specs' `sh -c env` expects); bash passes
  # them on and runs the ash extensions the specs use ([[ ]]).
  with_binary "$base" /bin/bash
  rm -f "$base/bin/sh" && ln -s bash "$base/bin/sh"
fi
for ref in "$e2e/busybox:1.37.0-2" "$e2e/busybox:1.36.1-1" "$e2e/glibc-dns-testing:2.1.1"; do
  oci_import "$ref" "$base" null '["sh"]' ""
done

r="$work/rootfs-nonroot"; busybox_rootfs "$r"
echo 'nonroot:x:1234:1234::/:/bin/sh' >> "$r/etc/passwd"
oci_import "$e2e/nonroot:1.5" "$r" null '["sh"]' 1234

# nonewprivs: upstream's nnp (a Go program printing its effective uid),
# setuid root, built from the suite's own module.
r="$work/rootfs-nonewprivs"; busybox_rootfs "$r"; mkdir -p "$r/usr/local/bin"
(cd "$here/tools" && CGO_ENABLED=0 GOWORK=off GOFLAGS="-mod=readonly -buildvcs=false" \
  nice -n 19 go build -trimpath -o "$r/usr/local/bin/nnp" k8s.io/kubernetes/test/images/nonewprivs)
chmod 4755 "$r/usr/local/bin/nnp"
oci_import "$e2e/nonewprivs:1.4" "$r" null '["nnp"]' ""

r="$work/rootfs-pause"; busybox_rootfs "$r"
oci_import registry.k8s.io/pause:3.10.2 "$r" \
  '["/bin/sh","-c","trap \"exit 0\" TERM INT; while :; do sleep 3600 & wait $!; done"]' null 65535

r="$work/rootfs-nginx"; busybox_rootfs "$r"
mkdir -p "$r/usr/share/nginx/html" && echo '<h1>Welcome to nginx!</h1>' > "$r/usr/share/nginx/html/index.html"
for tag in 1.27.0-2 1.28.0-2; do
  oci_import "$e2e/nginx:$tag" "$r" '["httpd","-f","-p","80","-h","/usr/share/nginx/html"]' null ""
done

r="$work/rootfs-agnhost"; busybox_rootfs "$r"
with_binary "$r" /bin/dash
rm -f "$r/bin/sh" && ln -s dash "$r/bin/sh"
cp "$bin/agnhost" "$r/agnhost" && ln -s agnhost "$r/agnhost-2"
# The real agnhost image has curl: the lifecycle hook specs run
# `sh -c "curl URL"`, the networking specs exec `curl -g -q -s … URL` in
# it. curl-standin.sh does those GETs with busybox's wget.
install -m 755 "$here/curl-standin.sh" "$r/bin/curl"
# ... and a netcat with UDP: the node-pod networking spec runs
# `echo hostName | nc -w 1 -u IP PORT`; busybox's nc has no -u.
with_binary "$r" /bin/nc.openbsd
ln -sf nc.openbsd "$r/bin/nc"
# ... and bash: the restartable-init-container probe specs run
# `/bin/bash -c` scripts that `trap … SIGTERM`, which dash refuses;
# busybox ash runs them.
printf '#!/bin/sh\nexec /bin/busybox ash "$@"\n' > "$r/bin/bash"
chmod 755 "$r/bin/bash"
# ... and a self-signed localhost certificate, which netexec serves HTTPS
# with in the HTTPS hook specs (--tls-cert-file /localhost.crt).
openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=localhost" \
  -keyout "$r/localhost.key" -out "$r/localhost.crt" 2>/dev/null
mkdir -p "$r/uploads"
echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >> "$r/etc/passwd"
printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >> "$r/etc/group"
for tag in 2.66.1 2.55; do
  oci_import "$e2e/agnhost:$tag" "$r" '["/agnhost"]' '["pause"]' ""
done
rm -rf "$work"/rootfs-*
ctr -a "$CONTAINERD_SOCK" -n k8s.io images ls -q >&2
