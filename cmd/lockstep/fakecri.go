package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// newFakeCRICommand serves the fake CRI runtime over a unix socket.
// Placeholder until the fakecri package lands.
func newFakeCRICommand() *cobra.Command {
	return &cobra.Command{
		Use:   "fakecri",
		Short: "Serve the scriptable fake CRI v1 runtime on a unix socket",
		RunE: func(*cobra.Command, []string) error {
			return errors.New("fakecri: not built yet")
		},
	}
}
