// Package bench holds lockstep's benchmarks: the simulator kernel's speed,
// the fake runtime's costs and the agent's pod sync throughput. `make bench`
// runs them; docs/benchmarks.md records the figures with the command and
// the machine.
package bench
