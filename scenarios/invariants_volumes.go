package scenarios

import (
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/sim/memfs"
)

// checkVolumes checks volumes-kept: the volumes of a pod that has not
// terminated are never torn down. A running container's pod has not
// terminated, so every mount it was created with from a pod volume (below
// <pods>/<uid>/volumes; hostPath volumes are the host's) must still exist.
func (c *Checker) checkVolumes(truth []RuntimeContainer) {
	if c.volumesReported == nil {
		c.volumesReported = map[string]bool{}
	}
	pods := podspec.PodsDir("") + "/"
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for _, m := range c.trueMounts(ct.ID) {
			rest, ok := strings.CutPrefix(m.GetHostPath(), pods)
			if _, sub, _ := strings.Cut(rest, "/"); !ok || !strings.HasPrefix(sub, "volumes/") {
				continue // not a pod volume (a termination message file is not one)
			}
			if _, err := c.h.Files.Stat(m.GetHostPath()); err == nil {
				continue
			}
			key := ct.ID + " " + m.GetHostPath()
			if !c.volumesReported[key] {
				c.volumesReported[key] = true
				if c.unseenOnStaleView(ct.ID) {
					continue
				}
				c.fail("volumes-kept", "container %s/%s (%s) runs, but its volume %s is gone", ct.PodUID, ct.Name, ct.ID, m.GetHostPath())
			}
		}
	}
}

// unseenOnStaleView reports whether running container id may have been
// missing from what the agent saw of the runtime just now: the lists lag
// (stale-list) and it started less than their lag (plus a relist period
// and a step) ago, so it may have been created after the instant they
// show. An agent that restarted then knows nothing else of it, and may
// finish a deleted pod (tearing its volumes down) that still runs it, as
// the kubelet would; the container is stopped as an orphan once a list
// shows it.
func (c *Checker) unseenOnStaleView(id string) bool {
	now := c.h.K.Elapsed()
	if c.suite.viewStale == 0 || now > addSat(c.suite.viewStale, time.Second) {
		return false
	}
	started, ok := c.h.Runtime.TrueStartedAt(id)
	return ok && now-c.elapsedAt(started) <= c.suite.listLag+2*time.Second
}

// checkTokens checks token-valid: the service account token a running
// container of a pod reads from a projected volume is one the apiserver
// issued for that pod and has not expired (a token whose pod is gone from
// the API, after a forced deletion, is excused).
func (c *Checker) checkTokens(truth []RuntimeContainer) {
	for _, ct := range truth {
		if ct.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		for _, m := range c.trueMounts(ct.ID) {
			if !strings.Contains(m.GetHostPath(), "/"+podspec.PluginProjected+"/") {
				continue
			}
			for _, tok := range simTokens(c.h.Files, m.GetHostPath()) {
				r := c.h.API.User().ReviewToken(tok)
				if r.Known && !r.Expired && (c.tokensExpire.IsZero() || r.Expires.Before(c.tokensExpire)) {
					c.tokensExpire = r.Expires
				}
				bad := ""
				switch {
				case !r.Known:
					bad = "was never issued"
				case r.PodUID != string(ct.PodUID):
					bad = "is bound to pod " + r.PodUID
				case r.Expired && !r.PodGone:
					bad = "has expired"
				}
				key := ct.ID + " " + tok
				if bad != "" && !c.volumesReported[key] {
					c.volumesReported[key] = true
					c.fail("token-valid", "container %s/%s (%s) reads token %s, which %s", ct.PodUID, ct.Name, ct.ID, tok, bad)
				}
			}
		}
	}
}

// simTokens returns the simulated apiserver's tokens published at the top
// of a projected volume.
func simTokens(files *memfs.FS, dir string) []string {
	entries, err := files.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "..") {
			continue
		}
		data, err := files.ReadFile(dir + "/" + e.Name())
		if err == nil && strings.HasPrefix(string(data), "sim-token-") {
			out = append(out, string(data))
		}
	}
	return out
}
