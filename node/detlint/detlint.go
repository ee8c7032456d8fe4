// Package detlint is the determinism lint: it parses the agent's Go files
// and reports every construct that would let time, randomness, scheduling
// or I/O escape the injected world (node/deps): the clock, timers and
// contexts that cancel on their own, randomness, goroutines, channels and
// select, the operating system (package os and its process, signal and
// user packages, syscall) and the network's I/O (dialing, listening, name
// lookups, HTTP clients and servers; net's pure helpers such as
// JoinHostPort and net.IP stay allowed). Only the real-world subtree
// (node/real) is exempt from the construct rules; test files are not
// checked. The lint is run by this package's tests, so `go test ./...`
// fails when the contract erodes.
package detlint

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	pathpkg "path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Module is the import path prefix of the project.
const Module = "github.com/lockstep-dev/lockstep"

// Finding is one violation, at file:line:col.
type Finding struct {
	Pos  string
	Rule string
	Msg  string
}

func (f Finding) String() string { return fmt.Sprintf("%s: %s: %s", f.Pos, f.Rule, f.Msg) }

// forbiddenCalls lists, per standard package, the names agent code may not
// use, with what to use instead.
var forbiddenCalls = map[string]map[string]string{
	"time": {
		"Now": "deps.Clock.Now", "Since": "deps.Clock.Since", "Until": "deps.Clock.Until",
		"Sleep": "deps.Tasks.Sleep", "After": "deps.Tasks.Sleep", "Tick": "deps.Tasks.NewTicker",
		"NewTimer": "deps.Tasks.AfterFunc", "NewTicker": "deps.Tasks.NewTicker", "AfterFunc": "deps.Tasks.AfterFunc",
	},
	"context": {
		"WithCancel": "deps.Tasks.WithCancel", "WithCancelCause": "deps.Tasks.WithCancel",
		"WithTimeout": "deps.Clock.WithTimeout", "WithTimeoutCause": "deps.Clock.WithTimeout",
		"WithDeadline": "deps.Clock.WithDeadline", "WithDeadlineCause": "deps.Clock.WithDeadline",
		"AfterFunc": "deps.Tasks.AfterFunc",
	},
	"sync": {
		"WaitGroup": "deps.Tasks and a deps.Signal", "Cond": "a deps.Signal", "NewCond": "a deps.Signal",
	},
	"net":      netIO("deps.ProbeNetwork, or another deps port that node/real implements"),
	"net/http": httpIO("deps.ProbeNetwork, or another deps port that node/real implements; node/real serves HTTP"),
}

// netIO names net's members that reach the network or the host's
// interfaces, each with what to use instead.
func netIO(instead string) map[string]string {
	out := map[string]string{}
	for _, name := range []string{
		"Dial", "DialTimeout", "DialIP", "DialTCP", "DialUDP", "DialUnix", "Dialer",
		"Listen", "ListenPacket", "ListenIP", "ListenTCP", "ListenUDP", "ListenUnix", "ListenUnixgram", "ListenMulticastUDP", "ListenConfig",
		"FileConn", "FileListener", "FilePacketConn", "Pipe",
		"Resolver", "DefaultResolver", "LookupAddr", "LookupCNAME", "LookupHost", "LookupIP", "LookupMX", "LookupNS", "LookupPort", "LookupSRV", "LookupTXT",
		"Interfaces", "InterfaceAddrs", "InterfaceByIndex", "InterfaceByName",
	} {
		out[name] = instead
	}
	return out
}

// httpIO names net/http's members that make requests or serve them.
func httpIO(instead string) map[string]string {
	out := map[string]string{}
	for _, name := range []string{
		"Get", "Head", "Post", "PostForm", "Client", "DefaultClient", "Transport", "DefaultTransport",
		"ListenAndServe", "ListenAndServeTLS", "Serve", "ServeTLS", "Server",
	} {
		out[name] = instead
	}
	return out
}

// forbiddenImports are packages agent code may not import at all.
var forbiddenImports = map[string]string{
	"math/rand":                    "randomness comes from deps.Rand",
	"math/rand/v2":                 "randomness comes from deps.Rand",
	"crypto/rand":                  "randomness comes from deps.Rand",
	"github.com/benbjohnson/clock": "time comes from deps.Clock; only node/real makes clock.New()",
	"os":                           "files go through deps.Files, processes through the runtime; only node/real touches the operating system",
	"os/exec":                      "the agent starts no process; only node/real touches the operating system",
	"os/signal":                    "signals are node/real's (cmd wires them in)",
	"os/user":                      "users are the runtime's and the image's; only node/real touches the operating system",
	"syscall":                      "only node/real touches the operating system",
}

// Config says what to check.
type Config struct {
	// Files is the node tree (the lint itself does no I/O: its test
	// passes os.DirFS).
	Files fs.FS
	// Root names the node tree in findings (file positions are
	// Root/<path in Files>).
	Root string
	// Exempt lists directories, relative to Root, whose files may use the
	// forbidden constructs (the real world).
	Exempt []string
}

// Check lints every non-test Go file of cfg.Files.
func Check(cfg Config) ([]Finding, error) {
	var out []Finding
	err := fs.WalkDir(cfg.Files, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		src, err := fs.ReadFile(cfg.Files, rel)
		if err != nil {
			return err
		}
		exempt := slices.ContainsFunc(cfg.Exempt, func(dir string) bool {
			return rel == dir || strings.HasPrefix(rel, pathpkg.Clean(dir)+"/")
		})
		found, err := CheckSource(filepath.Join(cfg.Root, filepath.FromSlash(rel)), src, exempt)
		out = append(out, found...)
		return err
	})
	return out, err
}

// CheckSource lints one file. An exempt file is checked only for imports
// that break the layering (node must not import the simulator, the fake
// runtime, scenarios, benchmarks or commands).
func CheckSource(filename string, src []byte, exempt bool) ([]Finding, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, filename, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, fmt.Errorf("parse %s: %w", filename, err)
	}
	c := &checker{fset: fset, names: map[string]string{}}
	for _, imp := range f.Imports {
		path, _ := strconv.Unquote(imp.Path.Value)
		for _, top := range []string{"sim", "fakecri", "scenarios", "bench", "cmd"} {
			if path == Module+"/"+top || strings.HasPrefix(path, Module+"/"+top+"/") {
				c.report(imp, "layering", fmt.Sprintf("node must not import %s", path))
			}
		}
		if !exempt && strings.HasPrefix(path, Module+"/node/real") {
			c.report(imp, "layering", fmt.Sprintf("agent code must not import the real world %s; cmd wires it in", path))
		}
		if exempt {
			continue
		}
		if why, bad := forbiddenImports[path]; bad {
			c.report(imp, "import", fmt.Sprintf("import of %s: %s", path, why))
		}
		if _, watched := forbiddenCalls[path]; watched {
			name := pathpkg.Base(path)
			if imp.Name != nil {
				name = imp.Name.Name
			}
			if name == "." {
				c.report(imp, "import", fmt.Sprintf("dot import of %s hides forbidden names", path))
			}
			c.names[name] = path
		}
	}
	if !exempt {
		ast.Inspect(f, c.visit)
	}
	return c.out, nil
}

type checker struct {
	fset  *token.FileSet
	names map[string]string // local name → watched package path
	out   []Finding
}

func (c *checker) report(n ast.Node, rule, msg string) {
	c.out = append(c.out, Finding{Pos: c.fset.Position(n.Pos()).String(), Rule: rule, Msg: msg})
}

func (c *checker) visit(n ast.Node) bool {
	switch x := n.(type) {
	case *ast.GoStmt:
		c.report(x, "go", "go statement: start tasks with deps.Tasks.Go")
	case *ast.SelectStmt:
		c.report(x, "select", "select statement: wait with deps.Signal, deps.Inbox or deps.Tasks.Sleep")
	case *ast.SendStmt:
		c.report(x, "channel", "channel send: hand values over with deps.Inbox")
	case *ast.UnaryExpr:
		if x.Op == token.ARROW {
			c.report(x, "channel", "channel receive: wait with deps.Signal or deps.Inbox")
		}
	case *ast.ChanType:
		c.report(x, "channel", "channel type: coordinate tasks with deps.Signal or deps.Inbox")
	case *ast.RangeStmt:
		if call, ok := x.X.(*ast.CallExpr); ok {
			if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Done" && len(call.Args) == 0 {
				c.report(x, "channel", "range over a Done channel: wait with deps.Signal or deps.Tasks.Sleep")
			}
		}
	case *ast.SelectorExpr:
		id, ok := x.X.(*ast.Ident)
		if !ok {
			return true
		}
		path, watched := c.names[id.Name]
		if !watched {
			return true
		}
		if instead, bad := forbiddenCalls[path][x.Sel.Name]; bad {
			c.report(x, path, fmt.Sprintf("%s.%s: use %s", path, x.Sel.Name, instead))
		}
	}
	return true
}
