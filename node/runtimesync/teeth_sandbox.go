//go:build !regress_teeth_sandbox

package runtimesync

// earlySandboxReady is false in every normal build. Built with the tag
// regress_teeth_sandbox (tests only; the daemon refuses a regress_ build)
// the executor reports a new sandbox ready before it asks the runtime to
// run it, failed or not: a deliberately broken build that shows the
// simulation checker's sandbox-reported invariant has teeth (see
// docs/checker.md).
const earlySandboxReady = false
