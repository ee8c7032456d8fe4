//go:build !regress_93210

package podworkers

// regress93210 is false in every normal build. Built with the tag
// regress_93210 (tests only, never the daemon) the workers re-create
// upstream bug kubernetes#93210: a pod deleted while a sync of it is in
// flight (started and deleted quickly) is killed without its grace period.
const regress93210 = false
