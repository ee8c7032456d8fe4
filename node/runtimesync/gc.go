package runtimesync

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/lockstep-dev/lockstep/node/podstate"
)

// RemovePod removes every container and sandbox of a pod that is gone for
// good. Everything must already be stopped.
func (e *Executor) RemovePod(ctx context.Context, st *podstate.PodStatus) error {
	var errs []error
	for _, c := range st.Containers {
		if err := e.d.Runtime.RemoveContainer(ctx, c.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove container %q (%s) of pod %s: %w", c.Name, c.ID, st.UID, err))
		}
	}
	for _, sb := range st.Sandboxes {
		if err := e.d.Runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove sandbox %s of pod %s: %w", sb.ID, st.UID, err))
		}
	}
	return errors.Join(errs...)
}

// GCPod removes a live pod's dead weight: exited container instances older
// than the newest of each name, and not-ready sandboxes other than the
// newest that no longer hold a container.
func (e *Executor) GCPod(ctx context.Context, st *podstate.PodStatus) error {
	var errs []error
	seen := map[string]bool{}
	for _, c := range st.Containers { // newest first
		if seen[c.Name] {
			if c.State == podstate.ContainerExited {
				if err := e.d.Runtime.RemoveContainer(ctx, c.ID); err != nil && !isNotFound(err) {
					errs = append(errs, fmt.Errorf("remove dead container %q (%s) of pod %s: %w", c.Name, c.ID, st.UID, err))
				}
			}
			continue
		}
		seen[c.Name] = true
	}
	inUse := map[string]bool{}
	for _, c := range st.Containers {
		inUse[c.SandboxID] = true
	}
	for i, sb := range st.Sandboxes {
		if i == 0 || sb.State == podstate.SandboxReady || inUse[sb.ID] {
			continue
		}
		if err := e.d.Runtime.RemovePodSandbox(ctx, sb.ID); err != nil && !isNotFound(err) {
			errs = append(errs, fmt.Errorf("remove dead sandbox %s of pod %s: %w", sb.ID, st.UID, err))
		}
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	return err != nil && status.Code(err) == codes.NotFound
}

// removeContainer removes one container instance; one already gone is fine.
func (e *Executor) removeContainer(ctx context.Context, id string) error {
	if err := e.d.Runtime.RemoveContainer(ctx, id); err != nil && !isNotFound(err) {
		return err
	}
	return nil
}
