package main

import (
	"errors"
	"os"

	"github.com/spf13/cobra"
)

var errFailed = errors.New("failed")

func main() {
	root := &cobra.Command{Use: "lockstep"}
	root.AddCommand(newNodeCommand(), newVersionCommand())
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
