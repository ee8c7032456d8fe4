// Package regress names the regression variants a binary was built with.
// Each upstream bug the simulation suite re-creates on purpose lives in
// the package it concerns as a hook built with the correct behaviour by
// default and a twin built only with the tag regress_<issue> (see
// docs/architecture.md, "Regression variants"). A binary built with one is
// for the suite's tests and replays only: the daemon refuses to run a node
// when Tags is not empty, and a replay command rebuilds the same variant.
// It is a leaf, so that the daemon can read it without linking the
// simulator.
package regress

import (
	"runtime/debug"
	"strings"
)

// TagPrefix starts the build tag of every regression variant.
const TagPrefix = "regress_"

// Tags lists the regression-variant build tags (regress_*) this binary
// was built with: none in every normal build.
func Tags() []string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return nil
	}
	return tags(info.Settings)
}

// tags picks the regress_* tags out of a build's settings.
func tags(settings []debug.BuildSetting) []string {
	var out []string
	for _, s := range settings {
		if s.Key != "-tags" {
			continue
		}
		for _, tag := range strings.Split(s.Value, ",") {
			if strings.HasPrefix(tag, TagPrefix) {
				out = append(out, tag)
			}
		}
	}
	return out
}
