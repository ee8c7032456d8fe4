package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// callerReplay is the replay command of a harness built without one: the
// go test command that runs the test which built it (found on the call
// stack), which replays the run since the test fixes its seed. Outside a
// test it says so instead of naming a wrong command.
func callerReplay() func(seed uint64) string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		fn := f.Function[strings.LastIndex(f.Function, ".")+1:]
		if strings.HasPrefix(fn, "Test") && strings.HasSuffix(f.File, "_test.go") {
			dir := relDir(filepath.Dir(f.File))
			return func(seed uint64) string {
				return fmt.Sprintf("go test -count=1 -run '^%s$' ./%s/ (seed %d)", fn, dir, seed)
			}
		}
		if !more {
			break
		}
	}
	return func(seed uint64) string {
		return fmt.Sprintf("re-run this program (harness seed %d; it set no replay command)", seed)
	}
}

// relDir is dir relative to the module root (the nearest go.mod above it).
func relDir(dir string) string {
	for root := dir; root != filepath.Dir(root); root = filepath.Dir(root) {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			if rel, err := filepath.Rel(root, dir); err == nil {
				return filepath.ToSlash(rel)
			}
		}
	}
	return dir
}
