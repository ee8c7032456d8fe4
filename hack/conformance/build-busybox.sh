#!/usr/bin/env bash
# Builds the busybox the conformance images are made of: busybox 1.37.0,
# the release upstream's e2e-test-images/busybox is (docker-library's
# busybox:1.37.0), configured as that image is (`make defconfig`, so ash is
# /bin/sh and every default applet is there, nmeter included; no applet runs
# before PATH) and linked statically. Debian's busybox-static (1.35) differs
# where the suites look: it has no nmeter (the node suite's specs stamp their
# log lines with `nmeter -d0 '%3t'`) and its ash drops environment variables
# whose names are not shell identifiers (the envFrom specs' `sh -c env`
# expects data-1=value-1 and the like; 1.37's ash keeps them).
#
# The source is the upstream tarball, which Debian's trixie ships as its
# busybox source package's orig tarball: fetched with `apt-get source` from
# the mirror this machine's Debian sources name (a private sources list and
# state directory; the system's apt configuration is left alone), or taken
# from $CONFORMANCE_BUSYBOX_TARBALL, and checked against the release's
# SHA-256. Built once under `nice -n 19` and cached in
# $LOCKSTEP_CONFORMANCE_CACHE/busybox-<sha256 of this script>/busybox.
# Prints the binary's path; exits non-zero, saying why, when the source
# cannot be had or the build fails.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
version=1.37.0
sha256=3311dff32e746499f4df0d5df04d7eb396382d7e108bb9250e7b519b837043a4
suite=trixie # the Debian release whose busybox source is $version
cache_root="${LOCKSTEP_CONFORMANCE_CACHE:-$HOME/.cache/lockstep-conformance}"
out="$cache_root/busybox-$(sha256sum < "$here/build-busybox.sh" | cut -c1-16)"
if [[ -x "$out/busybox" ]]; then
  echo "busybox $version cached in $out" >&2
  echo "$out/busybox"
  exit 0
fi
fail() { echo "build-busybox.sh: $*" >&2; exit 1; }
work="$(mktemp -d /tmp/lockstep-busybox.XXXXXX)"
trap 'rm -rf "$work"' EXIT
tarball="$work/busybox-$version.tar.bz2"

if [[ -n "${CONFORMANCE_BUSYBOX_TARBALL:-}" ]]; then
  cp "$CONFORMANCE_BUSYBOX_TARBALL" "$tarball" || fail "cannot read CONFORMANCE_BUSYBOX_TARBALL=$CONFORMANCE_BUSYBOX_TARBALL"
else
  # The Debian archive this machine installs from (not its security mirror).
  mirror="$( { cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }'
              cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '/^deb / { print ($2 ~ /^\[/ ? $3 : $2) }'
            } | awk '/\/debian\/?$/ { print; exit }' || true)"
  [[ -n "$mirror" ]] || fail "no Debian archive in /etc/apt's sources to fetch busybox's source from; set CONFORMANCE_BUSYBOX_TARBALL to busybox-$version.tar.bz2"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" > "$work/sources.list"
  mkdir -p "$work/lists/partial" "$work/src"
  apt=(-o Dir::Etc::SourceList="$work/sources.list" -o Dir::Etc::SourceParts=/dev/null
       -o Dir::State::Lists="$work/lists" -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" -qq update >&2 \
    || fail "apt-get update of $suite's source index from $mirror failed; set CONFORMANCE_BUSYBOX_TARBALL to busybox-$version.tar.bz2"
  (cd "$work/src" && apt-get "${apt[@]}" -qq source --download-only "busybox/$suite" >&2) \
    || fail "apt-get source busybox/$suite failed; set CONFORMANCE_BUSYBOX_TARBALL to busybox-$version.tar.bz2"
  [[ -f "$work/src/busybox_$version.orig.tar.bz2" ]] \
    || fail "$suite's busybox source is no longer $version (got: $(ls "$work/src")); set CONFORMANCE_BUSYBOX_TARBALL to busybox-$version.tar.bz2"
  mv "$work/src/busybox_$version.orig.tar.bz2" "$tarball"
fi
echo "$sha256  $tarball" | sha256sum -c --quiet - >&2 || fail "busybox-$version.tar.bz2 is not the release (SHA-256 differs)"

tar -C "$work" -xjf "$tarball"
cd "$work/busybox-$version"
make -s defconfig >/dev/null
# On top of the default configuration: what upstream's image adds (ar,
# inotifyd), static (the images have no libc), no tc (its CBQ code does not build against newer kernel headers; no spec
# runs tc), no SHA hardware acceleration (upstream's image builders patch
# that x86 code; plain C serves), no fancy sync options (as upstream's image).
set_conf() { # set_conf NAME y|n
  sed -i -e "/^$1=/d" -e "/^# $1 is not set/d" .config
  if [[ $2 == y ]]; then echo "$1=y" >> .config; else echo "# $1 is not set" >> .config; fi
}
set_conf CONFIG_AR y
set_conf CONFIG_FEATURE_AR_CREATE y
set_conf CONFIG_FEATURE_AR_LONG_FILENAMES y
set_conf CONFIG_INOTIFYD y
set_conf CONFIG_STATIC y
set_conf CONFIG_TC n
set_conf CONFIG_SHA1_HWACCEL n
set_conf CONFIG_SHA256_HWACCEL n
set_conf CONFIG_FEATURE_SYNC_FANCY n
{ yes '' || true; } | make -s oldconfig >/dev/null 2>&1
for want in CONFIG_STATIC=y CONFIG_SH_IS_ASH=y CONFIG_NMETER=y '# CONFIG_FEATURE_SH_STANDALONE is not set'; do
  grep -qx "$want" .config || fail "busybox configuration lacks '$want'"
done
start=$SECONDS
nice -n 19 make -s -j"$(nproc)" busybox >"$work/build.log" 2>&1 || { tail -n 30 "$work/build.log" >&2; fail "busybox $version did not build"; }
echo "busybox $version built in $((SECONDS - start)) s" >&2
./busybox --list | grep -qx nmeter || fail "the built busybox has no nmeter"
mkdir -p "$out.tmp" && cp busybox "$out.tmp/busybox"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out/busybox"
