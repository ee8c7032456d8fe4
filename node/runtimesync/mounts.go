package runtimesync

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// prepareMounts makes the subPath directories of a container's mounts of
// pod volumes, as upstream does, after checking that no component of the
// subPath is a symbolic link leading out of its volume (the escape of
// CVE-2017-1002101: a container writes a link into a shared volume, and a
// later subPath mount would follow it onto the host). It writes the pod's
// managed hosts file when the container mounts it (see writeHostsFile).
func (e *Executor) prepareMounts(pod *corev1.Pod, podIPs []string, cfg *runtimeapi.ContainerConfig) error {
	if e.ports.Files == nil {
		return nil
	}
	pods := podspec.PodsDir(e.cfg.Node.RootDir) + string(filepath.Separator)
	hostsFile := podspec.HostsFilePath(e.cfg.Node.RootDir, pod.UID)
	for _, m := range cfg.GetMounts() {
		if m.GetHostPath() == hostsFile {
			if err := e.writeHostsFile(pod, podIPs, hostsFile); err != nil {
				return err
			}
			continue
		}
		rest, ok := strings.CutPrefix(m.GetHostPath(), pods)
		if !ok {
			continue
		}
		// <uid>/volumes/<plugin>/<name>[/<subPath>]
		parts := strings.Split(rest, string(filepath.Separator))
		if len(parts) <= 4 {
			continue
		}
		volDir := filepath.Join(pods, filepath.Join(parts[:4]...))
		if err := e.checkSubPath(volDir, parts[4:]); err != nil {
			return fmt.Errorf("mount %s: %w", m.GetContainerPath(), err)
		}
		if err := e.makeSubPath(volDir, parts[4:]); err != nil {
			return fmt.Errorf("mount %s: create subPath directory: %w", m.GetContainerPath(), err)
		}
	}
	return nil
}

// makeSubPath creates the missing directories of a subPath under volDir
// with volDir's own mode (permission, setgid and sticky bits), as upstream
// does so that, say, an fsGroup's group keeps write access to a subPath of
// a world-writable emptyDir; directories that exist are left as they are.
func (e *Executor) makeSubPath(volDir string, sub []string) error {
	vol, err := e.ports.Files.Stat(volDir)
	if err != nil {
		return fmt.Errorf("stat volume directory: %w", err)
	}
	mode := vol.Mode() & (fs.ModePerm | fs.ModeSetgid | fs.ModeSticky)
	cur := volDir
	for _, part := range sub {
		cur = filepath.Join(cur, part)
		if _, err := e.ports.Files.Stat(cur); err == nil {
			continue
		} else if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err := e.ports.Files.MkdirAll(cur); err != nil {
			return err
		}
		if err := e.ports.Files.Chmod(cur, mode); err != nil {
			return err
		}
	}
	return nil
}

// writeHostsFile writes the pod's managed hosts file before a container
// that mounts it is created, as upstream does at every container
// creation: from the pod's IPs, hostname, subdomain and hostAliases, or
// for a host-network pod from the node's hosts file read now.
func (e *Executor) writeHostsFile(pod *corev1.Pod, podIPs []string, file string) error {
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		var err error
		if nodeHosts, err = e.ports.Files.ReadFile(e.cfg.Node.NodeHostsFile()); err != nil {
			return fmt.Errorf("hosts file of pod %s/%s: read the node's hosts file: %w", pod.Namespace, pod.Name, err)
		}
	}
	content, err := podspec.HostsFile(pod, podIPs, e.cfg.Node, nodeHosts)
	if err != nil {
		return err
	}
	if err := e.ports.Files.MkdirAll(filepath.Dir(file)); err != nil {
		return fmt.Errorf("hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := e.ports.Files.CreateFile(file, content, 0o644); err != nil {
		return fmt.Errorf("hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// checkSubPath refuses a subPath of volDir whose components include a
// symbolic link pointing outside volDir (or outside the path volDir links
// to: a persistentVolumeClaim volume's directory is a link to its
// PersistentVolume's path).
func (e *Executor) checkSubPath(volDir string, sub []string) error {
	inside := func(p string) bool { return p == volDir || strings.HasPrefix(p, volDir+string(filepath.Separator)) }
	if root, err := e.ports.Files.Readlink(volDir); err == nil && filepath.IsAbs(root) {
		inside = func(p string) bool {
			return p == volDir || strings.HasPrefix(p, volDir+string(filepath.Separator)) ||
				p == root || strings.HasPrefix(p, root+string(filepath.Separator))
		}
	}
	cur := volDir
	for _, part := range sub {
		cur = filepath.Join(cur, part)
		target, err := e.ports.Files.Readlink(cur)
		if err != nil {
			continue // not a link (or not there yet)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(cur), target)
		}
		if !inside(target) {
			return fmt.Errorf("subPath %s is a symbolic link to %s, outside its volume", cur, target)
		}
	}
	return nil
}

// terminationLog creates the empty host file that a new instance of c
// (attempt restartCount) gets bind-mounted at its terminationMessagePath,
// under the pod's containers directory, and returns its path. It returns
// "" when c has no terminationMessagePath, the agent keeps no files, or
// the file cannot be made (the container then runs without it, as
// upstream). The file is named by 8 hex digits unique to the instance
// (upstream draws them at random; a hash of the pod, the container, the
// attempt and the time keeps the simulator's draws untouched).
func (e *Executor) terminationLog(pod *corev1.Pod, c *corev1.Container, restartCount int) string {
	if e.ports.Files == nil || c.TerminationMessagePath == "" {
		return ""
	}
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d/%d", pod.UID, c.Name, restartCount, e.d.Clock.Now().UnixNano())
	path := podspec.TerminationLogPath(e.cfg.Node.RootDir, pod.UID, c.Name, fmt.Sprintf("%08x", h.Sum32()))
	err := e.ports.Files.MkdirAll(filepath.Dir(path))
	if err == nil {
		err = e.ports.Files.CreateFile(path, nil, 0o666)
	}
	if err != nil {
		PodLogger(e.d.Log, pod).Warn("cannot create the termination log file; the container runs without it",
			"container", c.Name, "path", path, "err", err)
		return ""
	}
	return path
}
