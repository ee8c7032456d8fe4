//go:build regress_121003

package agent

import "time"

// regress121003: see regress121003.go. This build is deliberately broken.
const regress121003 = true

// viewSince: any view will do.
func viewSince(time.Time) time.Time { return time.Time{} }
