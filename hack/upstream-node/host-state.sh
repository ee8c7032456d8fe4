# What the upstream kubelet changes on the host and cannot be told not to,
# saved before it runs and put back after; sourced (by hack/bench-real and
# hack/diff-kubelet), not run.
#   kubelet_host_save     # before the kubelet starts
#   kubelet_host_restore  # at teardown; never fails
# Its container manager rewrites these sysctls to its preferred values
# (protectKernelDefaults only turns the rewrite into a start failure); its
# device plugin socket dir is hard-coded under /var/lib/kubelet (removed
# when the run created it) and its container log symlinks under
# /var/log/containers (removed when left empty).
kubelet_host_sysctls=(vm.overcommit_memory vm.panic_on_oom kernel.panic kernel.panic_on_oops kernel.keys.root_maxkeys kernel.keys.root_maxbytes)
declare -A kubelet_host_saved_sysctl
kubelet_host_save() {
  local s
  for s in "${kubelet_host_sysctls[@]}"; do kubelet_host_saved_sysctl[$s]=$(sysctl -n "$s" 2>/dev/null); done
  kubelet_host_had_var_lib_kubelet=$([[ -e /var/lib/kubelet ]] && echo yes || echo no)
}
kubelet_host_restore() {
  local s
  for s in "${kubelet_host_sysctls[@]}"; do
    [[ -n ${kubelet_host_saved_sysctl[$s]:-} ]] && sysctl -qw "$s=${kubelet_host_saved_sysctl[$s]}" 2>/dev/null
  done
  rmdir /var/log/containers 2>/dev/null
  [[ ${kubelet_host_had_var_lib_kubelet:-yes} == no ]] && rm -rf /var/lib/kubelet
  return 0
}
