// Command lockstep is the lockstep node agent and its tools: the node daemon,
// the deterministic simulator, the fake CRI runtime and version information.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	if err := newRootCommand().Execute(); err != nil {
		if errors.Is(err, errFailed) {
			os.Exit(1)
		}
		fmt.Fprintln(os.Stderr, "lockstep:", err)
		os.Exit(1)
	}
}

// newRootCommand assembles the lockstep command tree.
func newRootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "lockstep",
		Short:         "A deterministic, simulation-testable Kubernetes node agent",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newVersionCommand(),
		newSimCommand(),
		newNodeCommand(),
		newFakeCRICommand(),
		newDevicePluginCommand(),
	)
	return root
}
