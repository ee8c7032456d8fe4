//go:build regress_teeth_sandbox

package runtimesync

// earlySandboxReady: see teeth_sandbox.go. This build is deliberately
// broken.
const earlySandboxReady = true
