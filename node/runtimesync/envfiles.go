package runtimesync

import (
	"errors"
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// maxEnvFileLinks bounds the symbolic links followed in an env file's
// path (as filepath-securejoin, which the kubelet uses, does).
const maxEnvFileLinks = 255

// envFiles reads the files c's env fileKeyRefs name from their volumes'
// host directories (the kubelet's makeEnvironmentVariables with
// securejoin: a symbolic link a container wrote into the volume cannot
// lead the read out of it). A volume the pod lacks, or that is not on
// the host, is left out (podspec then reports it).
func (e *Executor) envFiles(pod *corev1.Pod, c *corev1.Container) map[string]podspec.EnvFile {
	var out map[string]podspec.EnvFile
	for _, env := range c.Env {
		ref := env.ValueFrom
		if ref == nil || ref.FileKeyRef == nil {
			continue
		}
		f := ref.FileKeyRef
		dir := ""
		for i := range pod.Spec.Volumes {
			if pod.Spec.Volumes[i].Name == f.VolumeName {
				dir = podspec.VolumeDir(e.cfg.Node.RootDir, pod.UID, &pod.Spec.Volumes[i])
			}
		}
		if dir == "" {
			continue
		}
		if out == nil {
			out = map[string]podspec.EnvFile{}
		}
		path, err := e.scopedJoin(dir, f.Path)
		file := podspec.EnvFile{Path: path, Err: err}
		if err == nil {
			file.Data, file.Err = e.readFile(path)
		}
		out[podspec.EnvFileKey(f.VolumeName, f.Path)] = file
	}
	return out
}

// readFile reads a host file through the Files port.
func (e *Executor) readFile(path string) ([]byte, error) {
	if e.ports.Files == nil {
		return nil, errors.New("no host files to read")
	}
	return e.ports.Files.ReadFile(path)
}

// scopedJoin joins sub to root, following symbolic links as if root were
// the file system's root: an absolute link target, or ".." past root,
// stays inside root.
func (e *Executor) scopedJoin(root, sub string) (string, error) {
	root = filepath.Clean(root)
	var resolved string // relative to root, cleaned
	pending := strings.Split(filepath.ToSlash(sub), "/")
	for links := 0; len(pending) > 0; {
		part := pending[0]
		pending = pending[1:]
		switch part {
		case "", ".":
			continue
		case "..":
			resolved = filepath.Dir(resolved)
			if resolved == "." || resolved == "/" {
				resolved = ""
			}
			continue
		}
		next := filepath.Join(resolved, part)
		if e.ports.Files == nil {
			resolved = next
			continue
		}
		target, err := e.ports.Files.Readlink(filepath.Join(root, next))
		if err != nil {
			resolved = next // not a link (or not there): read it as it is
			continue
		}
		if links++; links > maxEnvFileLinks {
			return "", errors.New("too many symbolic links")
		}
		if filepath.IsAbs(target) {
			resolved = ""
		}
		pending = append(strings.Split(filepath.ToSlash(target), "/"), pending...)
	}
	return filepath.Join(root, resolved), nil
}
