package runtimesync

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep-dev/lockstep/node/logrotate"
	"github.com/lockstep-dev/lockstep/node/podspec"
	"github.com/lockstep-dev/lockstep/node/podstate"
)

// GCPolicy says which dead (exited) container instances of live pods
// container garbage collection keeps, as the upstream kubelet's
// --minimum-container-ttl-duration, --maximum-dead-containers-per-container
// and --maximum-dead-containers do.
type GCPolicy struct {
	// MinAge: an instance created less than MinAge ago is never collected.
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances each (pod, container
	// name) keeps; < 0: no limit. The default 1 keeps the previous
	// instance, for kubectl logs --previous and lastState.
	MaxPerPodContainer int
	// MaxContainers is how many dead instances the node keeps in all;
	// < 0: no limit. Over the limit, every (pod, container) keeps an equal
	// share (at least one), then the oldest go first.
	MaxContainers int
}

// DefaultGCPolicy is the upstream kubelet's default policy: keep the
// newest dead instance of each container, whatever its age, with no node
// limit.
func DefaultGCPolicy() GCPolicy {
	return GCPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}
}

// deadUnit is the dead instances of one (pod, container name), newest
// first.
type deadUnit struct {
	pod  *podstate.PodStatus
	dead []podstate.Container
}

// DeadContainer is a dead container instance chosen for removal, with the
// pod it belongs to.
type DeadContainer struct {
	Pod       *podstate.PodStatus
	Container podstate.Container
}

// SelectDeadContainers returns the exited container instances of pods
// that policy says to remove at now, oldest first. Running, created and
// unknown instances are never chosen (syncs deal with those).
func SelectDeadContainers(pods []*podstate.PodStatus, policy GCPolicy, now time.Time) []DeadContainer {
	units := deadUnits(pods, policy.MinAge, now)
	var out []DeadContainer
	evict := func(u *deadUnit, keep int) {
		if len(u.dead) > keep {
			for _, c := range u.dead[keep:] {
				out = append(out, DeadContainer{Pod: u.pod, Container: c})
			}
			u.dead = u.dead[:keep]
		}
	}
	if policy.MaxPerPodContainer >= 0 {
		for _, u := range units {
			evict(u, policy.MaxPerPodContainer)
		}
	}
	if policy.MaxContainers >= 0 && countDead(units) > policy.MaxContainers && len(units) > 0 {
		share := max(policy.MaxContainers/len(units), 1)
		for _, u := range units {
			evict(u, share)
		}
		if extra := countDead(units) - policy.MaxContainers; extra > 0 {
			var all []DeadContainer
			for _, u := range units {
				for _, c := range u.dead {
					all = append(all, DeadContainer{Pod: u.pod, Container: c})
				}
			}
			sortOldestFirst(all)
			out = append(out, all[:extra]...)
		}
	}
	sortOldestFirst(out)
	return out
}

// deadUnits groups the exited instances older than minAge by pod and
// container name, in a stable order.
func deadUnits(pods []*podstate.PodStatus, minAge time.Duration, now time.Time) []*deadUnit {
	var units []*deadUnit
	for _, st := range pods {
		byName := map[string]*deadUnit{}
		for _, c := range st.Containers { // newest first
			if c.State != podstate.ContainerExited || now.Sub(c.CreatedAt) < minAge {
				continue
			}
			u := byName[c.Name]
			if u == nil {
				u = &deadUnit{pod: st}
				byName[c.Name] = u
				units = append(units, u)
			}
			u.dead = append(u.dead, c)
		}
	}
	return units
}

func countDead(units []*deadUnit) int {
	n := 0
	for _, u := range units {
		n += len(u.dead)
	}
	return n
}

func sortOldestFirst(cs []DeadContainer) {
	slices.SortStableFunc(cs, func(a, b DeadContainer) int {
		if c := a.Container.CreatedAt.Compare(b.Container.CreatedAt); c != 0 {
			return c
		}
		return cmp.Compare(a.Container.ID, b.Container.ID)
	})
}

// CollectGarbage removes what live pods no longer need: the dead container
// instances the GC policy lets go (with their logs), and not-ready
// sandboxes other than each pod's newest that no longer hold a container.
func (e *Executor) CollectGarbage(ctx context.Context, pods []*podstate.PodStatus) error {
	var errs []error
	removed := map[string]bool{}
	for _, d := range SelectDeadContainers(pods, e.gcPolicy(), e.d.Clock.Now()) {
		if err := e.removeContainer(ctx, podRef(d.Pod), d.Container); err != nil {
			errs = append(errs, fmt.Errorf("remove dead container %q (%s) of pod %s: %w", d.Container.Name, d.Container.ID, d.Pod.UID, err))
			continue
		}
		removed[d.Container.ID] = true
	}
	for _, st := range pods {
		inUse := map[string]bool{}
		for _, c := range st.Containers {
			if !removed[c.ID] {
				inUse[c.SandboxID] = true
			}
		}
		for i, sb := range st.Sandboxes {
			if i == 0 || sb.State == podstate.SandboxReady || inUse[sb.ID] {
				continue
			}
			if err := e.ports.Runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove dead sandbox %s of pod %s: %w", sb.ID, st.UID, err))
			}
		}
	}
	return errors.Join(errs...)
}

func (e *Executor) gcPolicy() GCPolicy {
	if e.cfg.GC != nil {
		return *e.cfg.GC
	}
	return DefaultGCPolicy()
}

// RemovePod removes every container and sandbox of a pod that is gone for
// good, and its log directory and log symlinks. Everything must already
// be stopped.
func (e *Executor) RemovePod(ctx context.Context, st *podstate.PodStatus) error {
	var errs []error
	for _, c := range st.Containers {
		if err := e.removeContainer(ctx, podRef(st), c); err != nil {
			errs = append(errs, fmt.Errorf("remove container %q (%s) of pod %s: %w", c.Name, c.ID, st.UID, err))
		}
	}
	for _, sb := range st.Sandboxes {
		if err := e.ports.Runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s of pod %s: %w", sb.ID, st.UID, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if e.ports.Files != nil {
		dir := podspec.LogDirectory(e.cfg.Node.PodLogsRoot, podRef(st))
		if err := e.ports.Files.RemoveAll(dir); err != nil {
			return fmt.Errorf("remove log directory %s of pod %s: %w", dir, st.UID, err)
		}
	}
	return nil
}

// removeContainer removes one container instance (one already gone is
// fine), then its log file and log symlink.
func (e *Executor) removeContainer(ctx context.Context, ref podstate.PodRef, c podstate.Container) error {
	if err := e.ports.Runtime.RemoveContainer(ctx, c.ID); err != nil && !isNotFound(err) {
		return err
	}
	if e.ports.Files == nil {
		return nil
	}
	file := podspec.ContainerLogFile(e.cfg.Node.PodLogsRoot, ref, c.Name, c.RestartCount)
	link := podspec.ContainerLogSymlink(e.cfg.Node.ContainerLogsDir, ref, c.Name, c.ID)
	errs := []error{e.ports.Files.Remove(file), e.ports.Files.Remove(link)}
	rotated, err := logrotate.Rotated(e.ports.Files, file)
	errs = append(errs, err)
	for _, r := range rotated {
		errs = append(errs, e.ports.Files.Remove(r))
	}
	return errors.Join(errs...)
}

// linkLog creates the symlink log shippers tail for a new container
// instance; failing it only costs the shippers that log, so it is logged,
// not returned.
func (e *Executor) linkLog(ref podstate.PodRef, name, id string, restartCount int) {
	if e.ports.Files == nil {
		return
	}
	link := podspec.ContainerLogSymlink(e.cfg.Node.ContainerLogsDir, ref, name, id)
	target := podspec.ContainerLogFile(e.cfg.Node.PodLogsRoot, ref, name, restartCount)
	err := e.ports.Files.MkdirAll(filepath.Dir(link))
	if err == nil {
		err = e.ports.Files.Symlink(target, link)
	}
	if err != nil {
		e.d.Log.Warn("creating the container log symlink failed", "pod", ref.Namespace+"/"+ref.Name, "container", name, "link", link, "error", err.Error())
	}
}

func podRef(st *podstate.PodStatus) podstate.PodRef {
	return podstate.PodRef{UID: st.UID, Name: st.Name, Namespace: st.Namespace}
}

func isNotFound(err error) bool {
	return err != nil && status.Code(err) == codes.NotFound
}
