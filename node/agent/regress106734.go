//go:build !regress_106734

package agent

import (
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockstep-dev/lockstep/node/status"
)

// regress106734 is false in every normal build; see skipsFinalStatus.
const regress106734 = false

// skipsFinalStatus reports whether a terminated pod's final status is left
// unwritten: never. Built with the tag regress_106734 (tests only, never
// the daemon) it re-creates upstream bugs kubernetes#106734 / #98424: a
// pod this agent never synced (created and deleted quickly, or deleted
// before a restarted agent's first sync) gets no final status, so the
// status manager, which deletes only pods it holds a status of, never
// deletes it from the API: it stays Terminating.
func skipsFinalStatus(*status.Manager, types.UID) bool { return false }
