package main

import (
	"github.com/spf13/cobra"

	"github.com/lockstep-dev/lockstep/fakecri/cli"
)

// newFakeCRICommand is `lockstep fakecri` (see fakecri/cli).
func newFakeCRICommand() *cobra.Command { return cli.NewCommand() }
