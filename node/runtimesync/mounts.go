package runtimesync

import (
	"fmt"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
)

// prepareMounts makes the subPath directories of a container's mounts of
// pod volumes, as upstream does, after checking that no component of the
// subPath is a symbolic link leading out of its volume (the escape of
// CVE-2017-1002101: a container writes a link into a shared volume, and a
// later subPath mount would follow it onto the host).
func (e *Executor) prepareMounts(cfg *runtimeapi.ContainerConfig) error {
	if e.ports.Files == nil {
		return nil
	}
	pods := podspec.PodsDir(e.cfg.Node.RootDir) + string(filepath.Separator)
	for _, m := range cfg.GetMounts() {
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
		if err := e.ports.Files.MkdirAll(m.GetHostPath()); err != nil {
			return fmt.Errorf("mount %s: create subPath directory: %w", m.GetContainerPath(), err)
		}
	}
	return nil
}

// checkSubPath refuses a subPath of volDir whose components include a
// symbolic link pointing outside volDir.
func (e *Executor) checkSubPath(volDir string, sub []string) error {
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
		if target != volDir && !strings.HasPrefix(target, volDir+string(filepath.Separator)) {
			return fmt.Errorf("subPath %s is a symbolic link to %s, outside its volume", cur, target)
		}
	}
	return nil
}
