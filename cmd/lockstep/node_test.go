package main

import (
	"go/parser"
	"go/token"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestNodeCommandLinksNoSimulator: what node.go imports (the daemon, the
// regression-variant check, the fake runtime of the demo) links neither
// the simulator (sim/...) nor the scenarios. The binary as a whole still
// does, for its `sim` and `deviceplugin` subcommands.
func TestNodeCommandLinksNoSimulator(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "node.go", nil, parser.ImportsOnly)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"list", "-deps"}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if strings.HasPrefix(path, "github.com/lockstep-dev/lockstep/") {
			args = append(args, path)
		}
	}
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		t.Fatalf("go %s: %v", strings.Join(args, " "), err)
	}
	var bad []string
	for _, pkg := range strings.Fields(string(out)) {
		for _, p := range []string{"github.com/lockstep-dev/lockstep/sim/", "github.com/lockstep-dev/lockstep/scenarios", "pgregory.net/rapid"} {
			if strings.HasPrefix(pkg, p) {
				bad = append(bad, pkg)
			}
		}
	}
	if len(bad) > 0 {
		t.Errorf("the node command's imports %v link %v", args[2:], bad)
	}
}
