package podutil

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestIsALeaf keeps podutil importable from every agent package: its code
// imports only the standard library and k8s.io/api.
func TestIsALeaf(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if !strings.Contains(first, ".") || strings.HasPrefix(path, "k8s.io/api/") {
				continue
			}
			t.Errorf("%s imports %q: podutil may import only the standard library and k8s.io/api", fset.Position(imp.Pos()), path)
		}
	}
}
