package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Limits of what a files snapshot reads from a mount's host path.
const (
	maxFileBytes = 4096
	maxDirFiles  = 32
)

// runtimeView reads, from a node's fake runtime, what the agent asked for:
// each container's config (env, mounts, command, resources) and its
// sandbox's (hostname, DNS), and the host files behind the mounts — what
// the container sees.
type runtimeView struct {
	rt runtimeapi.RuntimeServiceClient
}

func dialRuntime(sock string) (*runtimeView, error) {
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial runtime %s: %w", sock, err)
	}
	return &runtimeView{rt: runtimeapi.NewRuntimeServiceClient(conn)}, nil
}

// podFiles describes what pod uid's containers see, newest attempt of each.
func (v *runtimeView) podFiles(ctx context.Context, uid string) (string, error) {
	sel := map[string]string{"io.kubernetes.pod.uid": uid}
	sbs, err := v.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{LabelSelector: sel}})
	if err != nil {
		return "", fmt.Errorf("list sandboxes of pod %s: %w", uid, err)
	}
	var b strings.Builder
	items := sbs.GetItems()
	sort.Slice(items, func(i, j int) bool { return items[i].CreatedAt > items[j].CreatedAt })
	if len(items) == 0 {
		return "no sandbox\n", nil
	}
	sb := items[0]
	fmt.Fprintf(&b, "sandboxes: %d\n", len(items))
	st, err := v.rt.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sb.Id, Verbose: true})
	if err != nil {
		return "", fmt.Errorf("status of sandbox of pod %s: %w", uid, err)
	}
	var si struct {
		Config *runtimeapi.PodSandboxConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &si); err != nil || si.Config == nil {
		return "", fmt.Errorf("sandbox of pod %s: no config in its verbose info (fakecri too old?)", uid)
	}
	describeSandbox(&b, si.Config)

	cs, err := v.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	if err != nil {
		return "", fmt.Errorf("list containers of pod %s: %w", uid, err)
	}
	newest := map[string]*runtimeapi.Container{}
	for _, c := range cs.GetContainers() {
		n := c.GetMetadata().GetName()
		if o := newest[n]; o == nil || c.GetMetadata().GetAttempt() > o.GetMetadata().GetAttempt() {
			newest[n] = c
		}
	}
	names := make([]string, 0, len(newest))
	for n := range newest {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c := newest[n]
		st, err := v.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id, Verbose: true})
		if err != nil {
			fmt.Fprintf(&b, "container %s: status: %v\n", n, err)
			continue
		}
		var ci struct {
			Config *runtimeapi.ContainerConfig `json:"config"`
		}
		if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &ci); err != nil || ci.Config == nil {
			fmt.Fprintf(&b, "container %s: no config in its verbose info\n", n)
			continue
		}
		describeContainer(&b, ci.Config)
	}
	return b.String(), nil
}

// describeSandbox writes the sandbox's hostname, resolv.conf as containerd
// writes it from the DNS config, ports and sysctls.
func describeSandbox(b *strings.Builder, c *runtimeapi.PodSandboxConfig) {
	fmt.Fprintf(b, "hostname: %s\n", c.GetHostname())
	if d := c.GetDnsConfig(); d != nil {
		b.WriteString("resolv.conf:\n")
		if len(d.Searches) > 0 {
			fmt.Fprintf(b, "  search %s\n", strings.Join(d.Searches, " "))
		}
		for _, s := range d.Servers {
			fmt.Fprintf(b, "  nameserver %s\n", s)
		}
		if len(d.Options) > 0 {
			fmt.Fprintf(b, "  options %s\n", strings.Join(d.Options, " "))
		}
	} else {
		b.WriteString("resolv.conf: (the runtime's)\n")
	}
	for _, p := range c.GetPortMappings() {
		fmt.Fprintf(b, "port: %s %d->%d host %s\n", p.Protocol, p.HostPort, p.ContainerPort, p.HostIp)
	}
	if l := c.GetLinux(); l != nil {
		keys := make([]string, 0, len(l.Sysctls))
		for k := range l.Sysctls {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(b, "sysctl: %s=%s\n", k, l.Sysctls[k])
		}
		if sc := l.GetSecurityContext(); sc != nil {
			fmt.Fprintf(b, "sandbox security: privileged=%v namespaces=%v supplementalGroups=%v\n",
				sc.Privileged, sc.GetNamespaceOptions(), sc.SupplementalGroups)
		}
	}
}

// describeContainer writes the container's command, env, mounts with the
// content behind them, resources and security settings.
func describeContainer(b *strings.Builder, c *runtimeapi.ContainerConfig) {
	fmt.Fprintf(b, "container %s (attempt %d)\n", c.GetMetadata().GetName(), c.GetMetadata().GetAttempt())
	fmt.Fprintf(b, "  image as sent to the runtime: %s\n", normaliseImage(c.GetImage().GetImage()))
	fmt.Fprintf(b, "  command: %q args: %q workdir: %q tty: %v stdin: %v\n", c.Command, c.Args, c.WorkingDir, c.Tty, c.Stdin)
	// Env by name: the kubelet orders the service link variables from a
	// map (a different order each time); a process sees a set.
	envs := append([]*runtimeapi.KeyValue(nil), c.Envs...)
	sort.SliceStable(envs, func(i, j int) bool { return envs[i].Key < envs[j].Key })
	for _, e := range envs {
		fmt.Fprintf(b, "  env %s=%s\n", e.Key, e.Value)
	}
	ms := append([]*runtimeapi.Mount(nil), c.Mounts...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].ContainerPath < ms[j].ContainerPath })
	for _, m := range ms {
		fmt.Fprintf(b, "  mount %s ro=%v rro=%v propagation=%s selinux=%v\n", m.ContainerPath, m.Readonly, m.RecursiveReadOnly, m.Propagation, m.SelinuxRelabel)
		describeHostPath(b, m.HostPath, "    ")
	}
	if l := c.GetLinux(); l != nil {
		if r := l.GetResources(); r != nil {
			fmt.Fprintf(b, "  resources: cpu_shares=%d cpu_quota=%d cpu_period=%d memory_limit=%d oom_score_adj=%d\n",
				r.CpuShares, r.CpuQuota, r.CpuPeriod, r.MemoryLimitInBytes, r.OomScoreAdj)
		}
		if sc := l.GetSecurityContext(); sc != nil {
			fmt.Fprintf(b, "  security: privileged=%v run_as_user=%v run_as_group=%v groups=%v readonly_rootfs=%v no_new_privs=%v caps=%v masked=%d readonly_paths=%d\n",
				sc.Privileged, sc.GetRunAsUser(), sc.GetRunAsGroup(), sc.SupplementalGroups, sc.ReadonlyRootfs, sc.NoNewPrivs,
				sc.GetCapabilities(), len(sc.MaskedPaths), len(sc.ReadonlyPaths))
		}
	}
	if len(c.Devices) > 0 {
		fmt.Fprintf(b, "  devices: %v\n", c.Devices)
	}
}

// describeHostPath writes a file's content, or a directory's visible
// files' (atomic-writer internals, names starting "..", are skipped).
func describeHostPath(b *strings.Builder, path, indent string) {
	fi, err := os.Stat(path)
	if err != nil {
		fmt.Fprintf(b, "%s(host path missing: the agent removed it)\n", indent)
		return
	}
	if !fi.IsDir() {
		fmt.Fprintf(b, "%sfile mode=%v uid=%s\n", indent, modeOf(fi), ownerOf(fi))
		writeContent(b, path, indent+"| ")
		return
	}
	fmt.Fprintf(b, "%sdir mode=%v uid=%s\n", indent, modeOf(fi), ownerOf(fi))
	n := 0
	_ = filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil || p == path {
			return nil
		}
		if strings.HasPrefix(d.Name(), "..") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if n++; n > maxDirFiles {
			return filepath.SkipAll
		}
		rel, _ := filepath.Rel(path, p)
		fi, err := os.Stat(p)
		if err != nil {
			fmt.Fprintf(b, "%s%s (dangling)\n", indent, rel)
			return nil
		}
		if fi.IsDir() {
			fmt.Fprintf(b, "%s%s/ mode=%v\n", indent, rel, modeOf(fi))
			return nil
		}
		fmt.Fprintf(b, "%s%s mode=%v uid=%s\n", indent, rel, modeOf(fi), ownerOf(fi))
		writeContent(b, p, indent+"| ")
		return nil
	})
}

// modeOf is a file's permission bits with its setuid, setgid and sticky
// bits (an fsGroup sets a volume directory's setgid bit).
func modeOf(fi os.FileInfo) os.FileMode {
	return fi.Mode() & (os.ModePerm | os.ModeSetuid | os.ModeSetgid | os.ModeSticky)
}

func writeContent(b *strings.Builder, path, indent string) {
	data, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintf(b, "%s(unreadable: %v)\n", indent, err)
		return
	}
	if len(data) > maxFileBytes || !utf8.Valid(data) {
		fmt.Fprintf(b, "%s(%d bytes, not shown)\n", indent, len(data))
		return
	}
	for _, line := range strings.Split(strings.TrimRight(string(data), "\n"), "\n") {
		fmt.Fprintf(b, "%s%s\n", indent, line)
	}
}

// writeFile writes content at path as container (newest attempt) of pod
// uid sees it: into the host directory behind the mount that holds path.
// It stands in for a container's own write, which the fake runtime does
// not perform.
func (v *runtimeView) writeFile(ctx context.Context, uid, container, path, content string) error {
	cs, err := v.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": uid, "io.kubernetes.container.name": container}}})
	if err != nil {
		return fmt.Errorf("list container %s of pod %s: %w", container, uid, err)
	}
	var newest *runtimeapi.Container
	for _, c := range cs.GetContainers() {
		if newest == nil || c.GetMetadata().GetAttempt() > newest.GetMetadata().GetAttempt() {
			newest = c
		}
	}
	if newest == nil {
		return fmt.Errorf("no container %s in pod %s yet", container, uid)
	}
	st, err := v.rt.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: newest.Id, Verbose: true})
	if err != nil {
		return fmt.Errorf("status of container %s of pod %s: %w", container, uid, err)
	}
	var ci struct {
		Config *runtimeapi.ContainerConfig `json:"config"`
	}
	if err := json.Unmarshal([]byte(st.GetInfo()["info"]), &ci); err != nil || ci.Config == nil {
		return fmt.Errorf("container %s of pod %s: no config in its verbose info", container, uid)
	}
	for _, m := range ci.Config.Mounts {
		rel, err := filepath.Rel(m.ContainerPath, path)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") || rel == "." {
			continue
		}
		host := filepath.Join(m.HostPath, rel)
		if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
			return fmt.Errorf("write %s of container %s: %w", path, container, err)
		}
		return nil
	}
	return fmt.Errorf("container %s of pod %s mounts nothing holding %s", container, uid, path)
}
