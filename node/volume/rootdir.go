package volume

import (
	"fmt"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/podspec"
)

// ShareRootDir readies the agent's root directory (root, "" for
// podspec.DefaultRootDir) at start, as the kubelet's setupDataDirs:
// created, then made a shared mount (deps.Mounter.MakeShared), so that
// volumes below it (emptyDir, a hostPath under it) can be mounted with
// Bidirectional or HostToContainer propagation — containerd refuses
// those on a mount that is neither shared nor a slave. It is never
// undone (nor is upstream's), and a restarted agent stacks no second
// bind mount. An error names the directory and the cause; the caller
// treats it as fatal, as the kubelet does ("error configuring root
// directory"). Without files or mounts (nil) it does nothing.
func ShareRootDir(files deps.Files, mounts deps.Mounter, root string) error {
	if files == nil || mounts == nil {
		return nil
	}
	if root == "" {
		root = podspec.DefaultRootDir
	}
	if err := files.MkdirAll(root); err != nil {
		return fmt.Errorf("create the root directory %s: %w", root, err)
	}
	if rootDirNotShared {
		return nil
	}
	if err := mounts.MakeShared(root); err != nil {
		return fmt.Errorf("configure the root directory %s as a shared mount: %w", root, err)
	}
	return nil
}
