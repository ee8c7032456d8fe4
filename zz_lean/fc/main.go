package main

import (
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := &cobra.Command{Use: "lockstep"}
	root.AddCommand(newFakeCRICommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
