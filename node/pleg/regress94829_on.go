//go:build regress_94829

package pleg

import "time"

// regress94829: see regress94829.go. This build is deliberately broken.
const regress94829 = true

// refreshTimeout: no bound of the relist's own (a century).
func refreshTimeout(time.Duration) time.Duration { return 100 * 365 * 24 * time.Hour }
