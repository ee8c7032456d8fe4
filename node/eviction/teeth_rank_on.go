//go:build regress_teeth_rank

package eviction

// brokenRank: see teeth_rank.go. This build is deliberately broken.
const brokenRank = true
