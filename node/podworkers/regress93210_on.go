//go:build regress_93210

package podworkers

// regress93210: see regress93210.go. This build is deliberately broken.
const regress93210 = true
