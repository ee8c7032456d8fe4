package main

import (
	"github.com/spf13/cobra"
)

// newSimCommand groups the simulation tools: runs of named scenarios of the
// complete agent, sweeps, replays, merges and the kernel-only demo.
func newSimCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sim",
		Short: "Run the real agent inside the deterministic simulator: scenarios, sweeps, replays",
		Long: `Run the complete node agent (real node/ code over the fake CRI runtime, a
simulated apiserver and a virtual clock) through named scenarios: seeded plans
of pod churn, faults and crashes, with every invariant checked after each step.
The same scenario, seed and binary always give the same trace hash. A failing
run exits non-zero and prints the one command that replays it.

  lockstep sim list                                  the scenarios and operations
  lockstep sim run --scenario mixed --seed 7         one run
  lockstep sim sweep --scenario mixed --seeds 1..500 many runs, failures shrunk
  lockstep sim replay .sim-failures/mixed-42.json    replay a saved failure
  lockstep sim merge shard-*/                        one report from many shards
  lockstep sim kernel-demo                           the kernel-only demo workload`,
	}
	cmd.AddCommand(newSimListCommand(), newSimRunCommand(), newSimSweepCommand(), newSimReplayCommand(),
		newSimMergeCommand(), newKernelDemoCommand())
	return cmd
}
