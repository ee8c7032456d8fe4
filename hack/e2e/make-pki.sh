#!/usr/bin/env bash
# Makes the test cluster's PKI in DIR: a CA (ca.crt, ca.key; the apiserver
# trusts it for clients, the node agents for the apiserver's client
# certificate) and the certificates it signs, each NAME:SUBJECT as NAME.crt
# and NAME.key (default: kubelet-client with O=system:masters, the
# apiserver's client certificate for the kubelet API: logs, exec, attach,
# port-forward and the node proxy go apiserver → agent). Valid two days.
# Used by hack/e2e/run.sh, hack/conformance/env.sh and hack/diff-kubelet/run.sh.
# Usage: make-pki.sh DIR CA_COMMON_NAME [NAME:SUBJECT...]
set -euo pipefail
dir="$1" ca_cn="$2"; shift 2
certs=("$@")
(( ${#certs[@]} )) || certs=("kubelet-client:/O=system:masters/CN=kube-apiserver-kubelet-client")
mkdir -p "$dir"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$ca_cn" \
  -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
for c in "${certs[@]}"; do
  name="${c%%:*}" subj="${c#*:}"
  openssl req -newkey rsa:2048 -nodes -subj "$subj" \
    -keyout "$dir/$name.key" -out "$dir/$name.csr" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" -CAcreateserial \
    -days 2 -out "$dir/$name.crt" 2>/dev/null
done
