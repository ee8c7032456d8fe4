#!/bin/sh
# curl stand-in for the agnhost image made here (the real image has curl):
# a GET with busybox wget, understanding the options the upstream suite
# passes (lifecycle hooks: `curl URL`; the networking utilities:
# `curl -g -q -s [-i] [-o FILE] [-w %{http_code}] [--max-time N]
# [--connect-timeout N] URL`). Other options are ignored.
out=- timeout= writeout= include= url=
while [ $# -gt 0 ]; do
  case $1 in
    -o|--output) out=$2; shift ;;
    -m|--max-time) timeout=$2; shift ;;
    --connect-timeout) [ -n "$timeout" ] || timeout=$2; shift ;;
    -w|--write-out) writeout=$2; shift ;;
    -i|--include) include=1 ;;
    -H|--header|-X|--request|-d|--data|-A|--user-agent|-u|--user) shift ;;
    -*) ;;
    *) url=$1 ;;
  esac
  shift
done
[ -n "$url" ] || { echo "curl: no URL specified" >&2; exit 2; }
tmp=$(mktemp -d) || exit 2
trap 'rm -rf "$tmp"' EXIT
# (Debian's busybox-static wget crashes with -T: a time limit is timeout's.)
${timeout:+timeout "${timeout%%.*}"} wget -q -S -O "$tmp/body" "$url" 2>"$tmp/headers"
rc=$?
code=$(sed -n 's/^ *HTTP\/[0-9.]* \([0-9][0-9][0-9]\).*/\1/p' "$tmp/headers" | tail -n 1)
response() {
  if [ -n "$include" ]; then
    sed -n 's/^  //p' "$tmp/headers"
    echo
  fi
  [ ! -f "$tmp/body" ] || cat "$tmp/body"
}
if [ "$out" = - ]; then response; else response > "$out"; fi
if [ -n "$writeout" ]; then
  printf '%s' "$writeout" | sed "s/%{http_code}/${code:-000}/g"
  exit 0
fi
# curl exits 0 on any HTTP answer (without -f); wget fails on >= 400.
[ -n "$code" ] && exit 0
exit $(( rc == 0 ? 0 : 7 ))
