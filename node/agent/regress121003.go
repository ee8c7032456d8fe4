//go:build !regress_121003

package agent

import "time"

// regress121003 is false in every normal build: a sync acts only on a view
// of the runtime newer than the worker's last action that holds every
// container the agent started (see viewSince).
const regress121003 = false

// viewSince is the time the runtime view a sync acts on must be newer
// than: t, the end of the worker's last step. Built with the tag
// regress_121003 (tests only, never the daemon) the sync takes whatever
// view the cache holds and does not check it for the containers it
// started, re-creating upstream bugs kubernetes#121003 / #123087: acting
// on a view that predates its own last action, a worker starts a second
// instance of a container.
func viewSince(t time.Time) time.Time { return t }
