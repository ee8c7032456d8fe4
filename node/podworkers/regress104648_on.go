//go:build regress_104648

package podworkers

// regress104648: see regress.go. This build is deliberately broken.
const regress104648 = true
