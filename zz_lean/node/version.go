package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// version is the release of lockstep; overridden at link time with
// -ldflags "-X main.version=...".
var version = "v0.1.0-dev"

// newVersionCommand prints the lockstep version, the Go toolchain and the
// CRI API version it speaks.
func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the lockstep version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "lockstep %s (%s, %s/%s, CRI v1, cri-api %s)\n",
				version, runtime.Version(), runtime.GOOS, runtime.GOARCH, moduleVersion("k8s.io/cri-api"))
			return nil
		},
	}
}

// moduleVersion reports the version of a dependency linked into the binary.
func moduleVersion(path string) string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, dep := range info.Deps {
		if dep.Path == path {
			return dep.Version
		}
	}
	return "unknown"
}
