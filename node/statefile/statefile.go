// Package statefile reads and writes the agent's checkpoint files (the CPU
// and memory managers' state, the device manager's and the pod resource
// allocations) through deps.Files: a missing file reads as none, a write
// replaces the file atomically (a temporary file beside it renamed over
// it), and Sum32 is the FNV-1a checksum the kubelet's checkpoints carry of
// their JSON content.
package statefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path/filepath"

	"github.com/lockstep-dev/lockstep/node/deps"
)

// Read returns the content of the file at path; ok is false when there is
// no such file.
func Read(files deps.Files, path string) (data []byte, ok bool, err error) {
	data, err = files.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", path, err)
	}
	return data, true, nil
}

// Write replaces the file at path with data (mode perm) atomically: data
// goes to path+".tmp", renamed over path; path's directory is created
// when missing. A reader sees the old content or the new, never a part.
func Write(files deps.Files, path string, data []byte, perm fs.FileMode) error {
	tmp := path + ".tmp"
	err := files.CreateFile(tmp, data, perm)
	if errors.Is(err, fs.ErrNotExist) {
		// The directory is made only when missing, not before every
		// write: the allocation checkpoint is written at each admission.
		if err := files.MkdirAll(filepath.Dir(path)); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
		err = files.CreateFile(tmp, data, perm)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := files.Rename(tmp, path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteTorn is the write a crash or a full disk cuts short, for the
// agent's fault points: path+".tmp" gets the first half of data and is
// never renamed, so path keeps its old content, and the error says the
// write did not complete.
func WriteTorn(files deps.Files, path string, data []byte, perm fs.FileMode) error {
	if err := files.CreateFile(path+".tmp", data[:len(data)/2], perm); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return fmt.Errorf("write %s: torn after %d of %d bytes: %w", path, len(data)/2, len(data), fs.ErrClosed)
}

// Sum32 is the FNV-1a 32-bit hash of v's JSON encoding (map keys encode
// sorted, so equal values always sum the same). A checkpoint sums itself
// with its checksum field zeroed.
func Sum32(v any) (uint32, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return 0, fmt.Errorf("encode for checksum: %w", err)
	}
	h := fnv.New32a()
	_, _ = h.Write(b)
	return h.Sum32(), nil
}
