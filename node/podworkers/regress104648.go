//go:build !regress_104648

package podworkers

// regress104648 is false in every normal build. Built with the tag
// regress_104648 (tests only, never the daemon) the workers re-create
// upstream bug kubernetes#104648: a pod created again under the UID of a
// worker that has terminated (a static pod whose manifest was removed and
// re-added unchanged) is not started again.
const regress104648 = false
