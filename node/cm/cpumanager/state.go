package cpumanager

import (
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/statefile"
)

// CheckpointFile is the state file's name under the root directory (the
// kubelet's name).
const CheckpointFile = "cpu_manager_state"

// State is what the CPU manager has handed out: the shared pool
// (default set) and each container's exclusive CPUs by pod UID and
// container name.
type State struct {
	Default     cpuset.CPUSet
	Assignments map[types.UID]map[string]cpuset.CPUSet
}

// newState is an empty state.
func newState() State {
	return State{Default: cpuset.New(), Assignments: map[types.UID]map[string]cpuset.CPUSet{}}
}

// set records a container's exclusive CPUs.
func (s *State) set(uid types.UID, name string, cpus cpuset.CPUSet) {
	if s.Assignments[uid] == nil {
		s.Assignments[uid] = map[string]cpuset.CPUSet{}
	}
	s.Assignments[uid][name] = cpus
}

// get is a container's exclusive CPUs.
func (s *State) get(uid types.UID, name string) (cpuset.CPUSet, bool) {
	c, ok := s.Assignments[uid][name]
	return c, ok
}

// checkpoint is the file's form: the policy, the default set and the
// entries as cpuset strings ("0-3,8"), and a checksum of the rest.
type checkpoint struct {
	PolicyName    string                       `json:"policyName"`
	DefaultCPUSet string                       `json:"defaultCpuSet"`
	Entries       map[string]map[string]string `json:"entries,omitempty"`
	Checksum      uint32                       `json:"checksum"`
}

// sum is the FNV-32a hash of the checkpoint's JSON with checksum 0 (map
// keys marshal sorted, so the same state always sums the same).
func (c checkpoint) sum() uint32 {
	c.Checksum = 0
	sum, _ := statefile.Sum32(c)
	return sum
}

// encode is the file's content for a policy's state.
func encode(policy string, s State) []byte {
	c := checkpoint{PolicyName: policy, DefaultCPUSet: s.Default.String(), Entries: map[string]map[string]string{}}
	for uid, cs := range s.Assignments {
		c.Entries[string(uid)] = map[string]string{}
		for name, cpus := range cs {
			c.Entries[string(uid)][name] = cpus.String()
		}
	}
	c.Checksum = c.sum()
	b, _ := json.MarshalIndent(c, "", "  ")
	return b
}

// decode parses a checkpoint and checks its checksum.
func decode(data []byte) (string, State, error) {
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return "", State{}, fmt.Errorf("not a CPU manager checkpoint: %w", err)
	}
	if got := c.sum(); got != c.Checksum {
		return "", State{}, fmt.Errorf("checkpoint is corrupted: checksum %d, content sums to %d", c.Checksum, got)
	}
	s := newState()
	var err error
	if s.Default, err = cpuset.Parse(c.DefaultCPUSet); err != nil {
		return "", State{}, fmt.Errorf("default cpuset %q: %w", c.DefaultCPUSet, err)
	}
	for uid, cs := range c.Entries {
		for name, str := range cs {
			cpus, err := cpuset.Parse(str)
			if err != nil {
				return "", State{}, fmt.Errorf("cpuset %q of container %q of pod %s: %w", str, name, uid, err)
			}
			s.set(types.UID(uid), name, cpus)
		}
	}
	return c.PolicyName, s, nil
}

// store reads and writes the checkpoint file.
type store struct {
	files deps.Files
	path  string
}

func newStore(files deps.Files, rootDir string) store {
	return store{files: files, path: filepath.Join(rootDir, CheckpointFile)}
}

// read returns the checkpoint's policy and state; ok is false when there
// is no file.
func (st store) read() (policy string, s State, ok bool, err error) {
	data, ok, err := statefile.Read(st.files, st.path)
	if !ok || err != nil {
		return "", State{}, false, err
	}
	policy, s, err = decode(data)
	if err != nil {
		return "", State{}, false, fmt.Errorf("%s: %w", st.path, err)
	}
	return policy, s, true, nil
}

// write replaces the checkpoint atomically (a new file renamed over it).
func (st store) write(policy string, s State) error {
	return statefile.Write(st.files, st.path, encode(policy, s), 0o644)
}

func sortedUIDs(s *State) []types.UID { return slices.Sorted(maps.Keys(s.Assignments)) }

func sortedNames(m map[string]cpuset.CPUSet) []string { return slices.Sorted(maps.Keys(m)) }
