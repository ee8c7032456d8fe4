package devicemanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"path"

	"github.com/lockstep-dev/lockstep/node/deps"
	"github.com/lockstep-dev/lockstep/node/statefile"
)

// CheckpointName is the file, in the device plugin directory, that holds
// the allocations and registered devices across agent restarts.
const CheckpointName = "kubelet_internal_checkpoint"

// checkpointData is what the checkpoint holds.
type checkpointData struct {
	PodDeviceEntries  []podDevicesEntry   `json:"PodDeviceEntries"`
	RegisteredDevices map[string][]string `json:"RegisteredDevices"`
}

// podDevicesEntry is one container's devices of one resource.
type podDevicesEntry struct {
	PodUID        string                `json:"PodUID"`
	ContainerName string                `json:"ContainerName"`
	ResourceName  string                `json:"ResourceName"`
	DeviceIDs     []string              `json:"DeviceIDs"`
	AllocResp     deps.DeviceAllocation `json:"AllocResp"`
}

// checkpointFile is the checkpoint on disk: the data and its checksum.
type checkpointFile struct {
	Data     checkpointData `json:"Data"`
	Checksum uint64         `json:"Checksum"`
}

// checksum is the FNV-1a hash of the data's JSON encoding.
func checksum(d checkpointData) (uint64, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return 0, err
	}
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64(), nil
}

// writeCheckpoint writes d to dir atomically (a temporary file renamed).
func writeCheckpoint(files deps.Files, dir string, d checkpointData) error {
	sum, err := checksum(d)
	if err != nil {
		return fmt.Errorf("device checkpoint: %w", err)
	}
	b, err := json.Marshal(checkpointFile{Data: d, Checksum: sum})
	if err != nil {
		return fmt.Errorf("device checkpoint: %w", err)
	}
	if err := statefile.Write(files, path.Join(dir, CheckpointName), b, 0o600); err != nil {
		return fmt.Errorf("device checkpoint: %w", err)
	}
	return nil
}

// errCorrupt says a checkpoint's checksum does not match its data.
var errCorrupt = errors.New("checksum mismatch")

// readCheckpoint reads the checkpoint in dir; a missing one is empty.
func readCheckpoint(files deps.Files, dir string) (checkpointData, error) {
	p := path.Join(dir, CheckpointName)
	b, ok, err := statefile.Read(files, p)
	if !ok || err != nil {
		return checkpointData{}, err
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return checkpointData{}, fmt.Errorf("read device checkpoint %s: %w", p, err)
	}
	sum, err := checksum(f.Data)
	if err != nil || sum != f.Checksum {
		return checkpointData{}, fmt.Errorf("read device checkpoint %s: %w", p, errCorrupt)
	}
	return f.Data, nil
}
