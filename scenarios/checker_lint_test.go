package scenarios

import (
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// agentPrefix is the import path prefix of the agent's packages: the code
// under test. The simulator (sim/..., fakecri) is the world the agent runs
// in, not the agent, and the checker may use it freely.
const agentPrefix = "github.com/lockstep-dev/lockstep/node/"

// checkerMayUse is every name of an agent package the checker may use, and
// why: constants, label, annotation and file names (the contract by which
// the agent's objects are found in the runtime and on disk, as upstream
// names them), configuration types and defaults (settings the scenario
// gives the agent, not rules), and types that carry data. No decision of
// the agent is here: the checker derives those from its own reference
// model (package refmodel). Methods called on values (a cgroups.Config's
// PodName) are not selectors of a package and not seen here; the ones the
// checker calls are naming (cgroup and path layout).
var checkerMayUse = map[string]string{
	"podstate.LabelPodUID":                     "label name on CRI objects",
	"podstate.LabelPodName":                    "label name on CRI objects",
	"podstate.LabelPodNamespace":               "label name on CRI objects",
	"podstate.LabelContainerName":              "label name on CRI objects",
	"podstate.PodRef":                          "type: a pod's namespace, name and UID",
	"stats.Sample":                             "type: the agent's stats sample, the report under test (stats-rate, stats-memory-limit), read, never asked to decide",
	"podstate.PodRefFromLabels":                "reads the label names back into a PodRef",
	"podsource.AnnotationConfigSource":         "annotation name of a static pod's source",
	"podsource.AnnotationConfigMirror":         "annotation name of a mirror pod's hash",
	"podsource.SourceFile":                     "annotation value naming the file source",
	"podsource.SourceHTTP":                     "annotation value naming the HTTP source",
	"podspec.ContainerLogFile":                 "file layout: a container's log path",
	"podspec.LogDirectory":                     "file layout: a pod's log directory",
	"podspec.RefOf":                            "a pod's namespace, name and UID (for the log directory's name)",
	"podspec.VolumeDir":                        "file layout: a volume's directory",
	"podspec.PodsDir":                          "file layout: the pods directory",
	"podspec.PluginProjected":                  "file layout: the projected volume plugin's name",
	"eviction.Reason":                          "status reason string (Evicted)",
	"eviction.Threshold":                       "configuration type: the thresholds the scenario sets",
	"eviction.DefaultPressureTransitionPeriod": "configuration default",
	"eviction.PodStorage":                      "type: a pod's measured local storage",
	"eviction.ContainerStorage":                "type: a container's measured local storage",
	"eviction.LocalStorageViolation":           "type: a local storage verdict",
	"cgroups.Config":                           "configuration type (driver, cgroup names)",
	"cpumanager.Config":                        "configuration type",
	"cpumanager.PolicyStatic":                  "configuration name",
	"cpumanager.DefaultReconcilePeriod":        "configuration default",
	"memorymanager.PolicyStatic":               "configuration name",
	"topologymanager.PolicySingleNUMANode":     "configuration name",
	"imagegc.Policy":                           "configuration type",
	"logrotate.Config":                         "configuration type",
	"logrotate.CompressSuffix":                 "file naming of rotated logs",
	"logrotate.TmpSuffix":                      "file naming of rotated logs",
	"logrotate.Rotated":                        "lists a log's rotated files by their naming",
	"nodestatus.DefaultLeaseDuration":          "configuration default",
	"nodestatus.LeaseNamespace":                "the lease's namespace name",
	"podspec.DefaultRootDir":                   "configuration default",
	"pleg.DefaultPodStatusTimeout":             "configuration default",
}

// checkerStillTrusts is the agent's decision code the checker still
// calls, each a debt to pay with the reference model (issue 28): listed
// here so that it is seen, and so that no new use slips in.
var checkerStillTrusts = map[string]string{
	"eviction.CheckLocalStorage": "local-storage-kept: which limit a pod's storage exceeds",
	"shutdown.GroupsFor":         "shutdown-order: the shutdown groups of a configuration",
	"shutdown.Group":             "shutdown-order: type of a group",
	"shutdown.Assign":            "shutdown-order: which group a pod falls in",
	"shutdown.Total":             "shutdown-order: the total shutdown period",
	"shutdown.NodeMessage":       "shutdown-order: the node shutdown message",
	"cgroups.PodResources":       "resize and cgroups-match: a pod's cgroup limits",
	"cgroups.Widest":             "resize: the widest of two cgroup limits",
	"allocation.Apply":           "resize: a pod with its allocated resources",
	"allocation.PodResources":    "resize: type of an allocation",
	"allocation.NewStore":        "resize: the allocation checkpoint's reader",
	"podspec.NodeInfo":           "resize: type of the node's sizes",
	"podspec.ContainerResources": "resize: a container's CRI resources",
	"deps.CgroupResources":       "type: cgroup limits",
}

// TestCheckerTrustsNoAgentDecision: the checker (every file that declares
// a method of *Checker or is named invariants*.go, and package refmodel)
// uses nothing of the agent's packages but checkerMayUse's names (and the
// debts of checkerStillTrusts). refmodel imports no lockstep package at
// all. The harness and wiring files (world.go, run.go, the scenarios'
// action files) build and drive the agent and are not the checker.
func TestCheckerTrustsNoAgentDecision(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(name, "invariants") && !declaresCheckerMethod(f) {
			continue
		}
		checked++
		for _, use := range agentUses(t, fset, f) {
			if _, ok := checkerMayUse[use.name]; ok {
				continue
			}
			if _, ok := checkerStillTrusts[use.name]; ok {
				continue
			}
			t.Errorf("%s: the checker uses the agent's %s: derive it in refmodel (or, for a name, constant or type, add it to checkerMayUse with why)", use.at, use.name)
		}
	}
	if checked < 20 {
		t.Fatalf("only %d checker files found: is the test in the scenarios directory?", checked)
	}
	model, err := filepath.Glob(filepath.Join("refmodel", "*.go"))
	if err != nil || len(model) == 0 {
		t.Fatalf("no reference model files (%v)", err)
	}
	for _, name := range model {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); strings.HasPrefix(path, "github.com/lockstep-dev/lockstep/") {
				t.Errorf("%s: the reference model imports %s", fset.Position(imp.Pos()), path)
			}
		}
	}
}

// TestCheckerLintListsAreUsed: every allowance is still needed, so that
// the lists shrink as debts are paid.
func TestCheckerLintListsAreUsed(t *testing.T) {
	fset := token.NewFileSet()
	files, _ := filepath.Glob("*.go")
	used := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(name, "invariants") || declaresCheckerMethod(f) {
			for _, use := range agentUses(t, fset, f) {
				used[use.name] = true
			}
		}
	}
	for _, list := range []map[string]string{checkerMayUse, checkerStillTrusts} {
		for _, name := range slices.Sorted(maps.Keys(list)) {
			if !used[name] {
				t.Errorf("%s is listed but the checker no longer uses it: drop it", name)
			}
		}
	}
}

// declaresCheckerMethod reports whether f declares a method of *Checker.
func declaresCheckerMethod(f *ast.File) bool {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || len(fn.Recv.List) == 0 {
			continue
		}
		if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
			if id, ok := star.X.(*ast.Ident); ok && id.Name == "Checker" {
				return true
			}
		}
	}
	return false
}

// agentUse is one use of an agent package's name (pkg.Name) in a file.
type agentUse struct {
	name string
	at   token.Position
}

// agentUses lists f's uses of names of agent packages; a dot or blank
// import of one is an error of its own.
func agentUses(t *testing.T, fset *token.FileSet, f *ast.File) []agentUse {
	t.Helper()
	local := map[string]string{} // local name → package name
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		if !strings.HasPrefix(path, agentPrefix) {
			continue
		}
		pkg := path[strings.LastIndex(path, "/")+1:]
		name := pkg
		if imp.Name != nil {
			name = imp.Name.Name
		}
		if name == "." || name == "_" {
			t.Errorf("%s: %q import of agent package %s", fset.Position(imp.Pos()), name, path)
			continue
		}
		local[name] = pkg
	}
	var out []agentUse
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil {
			if pkg, ok := local[id.Name]; ok {
				out = append(out, agentUse{name: pkg + "." + sel.Sel.Name, at: fset.Position(sel.Pos())})
			}
		}
		return true
	})
	return out
}

// TestCheckerLintSeesADecision: the lint finds a use of the agent's
// ranking through a renamed import, and refuses a dot import.
func TestCheckerLintSeesADecision(t *testing.T) {
	const src = `package scenarios
import ev "github.com/lockstep-dev/lockstep/node/eviction"
func (c *Checker) rank(cs []ev.Candidate) { ev.Rank(ev.SignalMemoryAvailable, cs) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "invariants_x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	var refused []string
	for _, use := range agentUses(t, fset, f) {
		if _, ok := checkerMayUse[use.name]; !ok {
			refused = append(refused, use.name)
		}
	}
	if want := []string{"eviction.Candidate", "eviction.Rank", "eviction.SignalMemoryAvailable"}; !slices.Equal(refused, want) {
		t.Errorf("refused %v, want %v", refused, want)
	}
}
