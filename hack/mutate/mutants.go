package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
)

// The mutation operators. Each names a kind of small, realistic bug.
const (
	// OpBoundary moves a comparison's boundary: < ↔ <=, > ↔ >=.
	OpBoundary = "boundary"
	// OpNegate negates a comparison: == ↔ !=, < ↔ >=, > ↔ <=.
	OpNegate = "negate"
	// OpBoolean swaps && and ||.
	OpBoolean = "boolean"
	// OpNot drops a logical not: !x → x.
	OpNot = "not"
	// OpArith swaps + and -, * and /.
	OpArith = "arith"
	// OpIncDec swaps ++ and --, += and -=.
	OpIncDec = "incdec"
	// OpReturnZero returns the zero value of a result (nil for an error,
	// a pointer, a slice or a map; 0, "" or false for a basic type) where
	// the code returns something else: a swallowed error, a lost result.
	OpReturnZero = "return-zero"
	// OpRemoveCall removes a statement that is only a call (its results,
	// if any, unused): a forgotten step. Never a lock, an unlock, a
	// panic, nor a defer or go statement (those are not plain calls).
	OpRemoveCall = "remove-call"
)

// Mutant is one small change of one file of a package, named by where it
// is and what it does, so that a report line and a re-run agree on it.
type Mutant struct {
	Pkg  string // package directory relative to the module root, e.g. node/backoff
	File string // file path relative to the module root
	Line int
	Col  int
	Op   string
	Orig string // the source text of the node before the change
	Mut  string // and after
}

// ID is the mutant's stable name: file:line:col/op.
func (m Mutant) ID() string {
	return fmt.Sprintf("%s:%d:%d/%s", m.File, m.Line, m.Col, m.Op)
}

// site is a mutation point found in a parsed file: the mutant it makes and
// the edit of the source that makes it (bytes [start, end) replaced by
// repl). Mutants are text edits of the original source, so that the rest
// of the file stays byte for byte as it was (line numbers included).
type site struct {
	Mutant
	start, end int
	repl       string
}

// noRemove are method or function names whose call statements are never
// removed: locks (a removal deadlocks or races, not a realistic bug of the
// logic) and panics.
var noRemove = map[string]bool{
	"Lock": true, "Unlock": true, "RLock": true, "RUnlock": true,
	"panic": true, "Done": true, "Wait": true,
}

// isObservabilityCall reports whether a call only logs, traces or counts
// (its callee's path has a part named like a logger, a tracer or a
// metric): mutants there change no decision of the agent.
func isObservabilityCall(call *ast.CallExpr) bool {
	for _, part := range calleeParts(call.Fun) {
		p := strings.ToLower(part)
		for _, prefix := range []string{"log", "klog", "slog", "trace", "tracer", "metric", "debug"} {
			if strings.HasPrefix(p, prefix) {
				return true
			}
		}
	}
	return false
}

// calleeParts is the dotted path of a callee: a.b.C → [a b C].
func calleeParts(e ast.Expr) []string {
	switch e := e.(type) {
	case *ast.Ident:
		return []string{e.Name}
	case *ast.SelectorExpr:
		return append(calleeParts(e.X), e.Sel.Name)
	case *ast.CallExpr:
		return calleeParts(e.Fun)
	case *ast.IndexExpr:
		return calleeParts(e.X)
	case *ast.ParenExpr:
		return calleeParts(e.X)
	}
	return nil
}

// isObservabilityStmt reports whether a statement is only a log, trace or
// metric call.
func isObservabilityStmt(s ast.Stmt) bool {
	es, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	return ok && isObservabilityCall(call)
}

var (
	boundary = map[token.Token]token.Token{token.LSS: token.LEQ, token.LEQ: token.LSS, token.GTR: token.GEQ, token.GEQ: token.GTR}
	negate   = map[token.Token]token.Token{token.EQL: token.NEQ, token.NEQ: token.EQL, token.LSS: token.GEQ, token.GEQ: token.LSS, token.GTR: token.LEQ, token.LEQ: token.GTR}
	boolean  = map[token.Token]token.Token{token.LAND: token.LOR, token.LOR: token.LAND}
	arith    = map[token.Token]token.Token{token.ADD: token.SUB, token.SUB: token.ADD, token.MUL: token.QUO, token.QUO: token.MUL}
	incdec   = map[token.Token]token.Token{token.INC: token.DEC, token.DEC: token.INC, token.ADD_ASSIGN: token.SUB_ASSIGN, token.SUB_ASSIGN: token.ADD_ASSIGN}
)

// finder walks one parsed file and collects its mutation sites in source
// order.
type finder struct {
	fset  *token.FileSet
	src   []byte
	pkg   string
	file  string
	sites []site
	funcs []*ast.FuncType // enclosing functions, innermost last
}

// findSites returns every mutation site of a parsed file, in the order of
// a depth-first walk (the same order every time for the same source).
func findSites(fset *token.FileSet, f *ast.File, src []byte, pkg, file string) []site {
	fd := &finder{fset: fset, src: src, pkg: pkg, file: file}
	for _, d := range f.Decls {
		fd.node(d)
	}
	return fd.sites
}

// oneLine puts source text on one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// window is how many bytes of context a report shows on each side of a
// change inside a long node.
const window = 36

func (fd *finder) off(p token.Pos) int { return fd.fset.Position(p).Offset }

// add records the mutant that replaces the source from..to by repl; ctx is
// the node whose text the report shows before and after.
func (fd *finder) add(op string, from, to token.Pos, repl string, ctx ast.Node) {
	start, end := fd.off(from), fd.off(to)
	cs, ce := fd.off(ctx.Pos()), fd.off(ctx.End())
	pre, post := "", ""
	if start-cs > window {
		cs, pre = start-window, "…"
	}
	if ce-end > window {
		ce, post = end+window, "…"
	}
	orig := pre + oneLine(string(fd.src[cs:ce])) + post
	mut := pre + oneLine(string(fd.src[cs:start])+repl+string(fd.src[end:ce])) + post
	p := fd.fset.Position(from)
	fd.sites = append(fd.sites, site{
		Mutant: Mutant{Pkg: fd.pkg, File: fd.file, Line: p.Line, Col: p.Column, Op: op, Orig: orig, Mut: mut},
		start:  start, end: end, repl: repl,
	})
}

// swap adds a site that replaces the operator tok at pos by table[tok], if
// the table has it.
func (fd *finder) swap(op string, pos token.Pos, tok token.Token, table map[token.Token]token.Token, ctx ast.Node) {
	to, ok := table[tok]
	if !ok {
		return
	}
	fd.add(op, pos, pos+token.Pos(len(tok.String())), to.String(), ctx)
}

func (fd *finder) node(n ast.Node) {
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Body != nil {
				fd.funcs = append(fd.funcs, n.Type)
				fd.node(n.Body)
				fd.funcs = fd.funcs[:len(fd.funcs)-1]
			}
			return false
		case *ast.FuncLit:
			fd.funcs = append(fd.funcs, n.Type)
			fd.node(n.Body)
			fd.funcs = fd.funcs[:len(fd.funcs)-1]
			return false
		case *ast.ExprStmt:
			if isObservabilityStmt(n) {
				return false
			}
		case *ast.BlockStmt:
			fd.removals(n.List)
		case *ast.CaseClause:
			fd.removals(n.Body)
		case *ast.CommClause:
			fd.removals(n.Body)
		case *ast.BinaryExpr:
			fd.binary(n)
		case *ast.UnaryExpr:
			if n.Op == token.NOT {
				fd.not(n)
			}
		case *ast.IncDecStmt:
			fd.swap(OpIncDec, n.TokPos, n.Tok, incdec, n)
		case *ast.AssignStmt:
			fd.swap(OpIncDec, n.TokPos, n.Tok, incdec, n)
		case *ast.ReturnStmt:
			fd.returnZero(n)
		}
		return true
	})
}

func (fd *finder) binary(n *ast.BinaryExpr) {
	fd.swap(OpBoundary, n.OpPos, n.Op, boundary, n)
	fd.swap(OpNegate, n.OpPos, n.Op, negate, n)
	fd.swap(OpBoolean, n.OpPos, n.Op, boolean, n)
	if n.Op == token.ADD && (isStringLit(n.X) || isStringLit(n.Y)) {
		return // string concatenation: a - would not compile
	}
	fd.swap(OpArith, n.OpPos, n.Op, arith, n)
}

func isStringLit(e ast.Expr) bool {
	b, ok := e.(*ast.BasicLit)
	return ok && b.Kind == token.STRING
}

// not drops the ! of n.
func (fd *finder) not(n *ast.UnaryExpr) {
	fd.add(OpNot, n.OpPos, n.OpPos+1, "", n)
}

// removals adds a site for every call statement of a statement list that
// is not a lock, a panic or an observability call.
func (fd *finder) removals(list []ast.Stmt) {
	for _, s := range list {
		es, ok := s.(*ast.ExprStmt)
		if !ok {
			continue
		}
		call, ok := es.X.(*ast.CallExpr)
		if !ok || isObservabilityCall(call) {
			continue
		}
		if parts := calleeParts(call.Fun); len(parts) > 0 && noRemove[parts[len(parts)-1]] {
			continue
		}
		fd.add(OpRemoveCall, es.Pos(), es.End(), "", es)
		fd.sites[len(fd.sites)-1].Mut = "(removed)"
	}
}

// returnZero adds a site per result of a return statement that can be
// replaced by its type's zero value and is not already that value. In a
// function with several results only the last error is replaced (the
// swallowed error); a single result of a basic, pointer, slice, map or
// error type is replaced by its zero value.
func (fd *finder) returnZero(r *ast.ReturnStmt) {
	if len(fd.funcs) == 0 {
		return
	}
	ft := fd.funcs[len(fd.funcs)-1]
	var types []ast.Expr
	if ft.Results != nil {
		for _, f := range ft.Results.List {
			n := max(len(f.Names), 1)
			for range n {
				types = append(types, f.Type)
			}
		}
	}
	if len(r.Results) != len(types) || len(types) == 0 {
		return // a bare return of named results, or a call returning several
	}
	i := len(types) - 1
	zero := zeroValue(types[i])
	if zero == "" || (len(types) > 1 && zero != "nil") {
		return
	}
	if len(types) > 1 && !isIdent(types[i], "error") {
		return
	}
	if id, ok := r.Results[i].(*ast.Ident); ok && id.Name == zero {
		return
	}
	if b, ok := r.Results[i].(*ast.BasicLit); ok && (b.Value == zero || b.Value == "0.0") {
		return
	}
	fd.add(OpReturnZero, r.Results[i].Pos(), r.Results[i].End(), zero, r)
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

// zeroValue is the Go source of the zero value of a result type written
// as t, or "" if it cannot be told without type-checking.
func zeroValue(t ast.Expr) string {
	switch t := t.(type) {
	case *ast.Ident:
		switch t.Name {
		case "error":
			return "nil"
		case "bool":
			return "false"
		case "string":
			return `""`
		case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64", "float32", "float64", "byte", "rune":
			return "0"
		}
	case *ast.SelectorExpr:
		if isIdent(t.X, "time") && t.Sel.Name == "Duration" {
			return "0"
		}
	case *ast.StarExpr, *ast.MapType:
		return "nil"
	case *ast.ArrayType:
		if t.Len == nil {
			return "nil"
		}
	}
	return ""
}

// isGenerated reports whether a file carries the standard "Code generated
// ... DO NOT EDIT." comment.
func isGenerated(f *ast.File) bool {
	for _, c := range f.Comments {
		for _, l := range c.List {
			if strings.HasPrefix(l.Text, "// Code generated ") && strings.HasSuffix(l.Text, " DO NOT EDIT.") {
				return true
			}
		}
	}
	return false
}

// hasBuildConstraint reports whether a file is built only under a build
// constraint (the regression and teeth variants): mutating it would change
// a build the judges never compile.
func hasBuildConstraint(f *ast.File) bool {
	for _, c := range f.Comments {
		if c.Pos() >= f.Package {
			break
		}
		for _, l := range c.List {
			if strings.HasPrefix(l.Text, "//go:build ") {
				return true
			}
		}
	}
	return false
}

// parseFile parses src as file name, with comments (kept in the printed
// mutant).
func parseFile(name string, src []byte) (*token.FileSet, *ast.File, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	return fset, f, err
}

// FileMutants lists the mutants of one source file (none for a generated
// or constrained file).
func FileMutants(pkg, file string, src []byte) ([]Mutant, error) {
	fset, f, err := parseFile(file, src)
	if err != nil {
		return nil, err
	}
	if isGenerated(f) || hasBuildConstraint(f) {
		return nil, nil
	}
	var out []Mutant
	for _, s := range findSites(fset, f, src, pkg, file) {
		out = append(out, s.Mutant)
	}
	return out, nil
}

// Apply returns the source of file src with mutant m applied.
func Apply(m Mutant, src []byte) ([]byte, error) {
	fset, f, err := parseFile(m.File, src)
	if err != nil {
		return nil, err
	}
	for _, s := range findSites(fset, f, src, m.Pkg, m.File) {
		if s.ID() != m.ID() {
			continue
		}
		out := make([]byte, 0, len(src)+len(s.repl))
		out = append(out, src[:s.start]...)
		out = append(out, s.repl...)
		return append(out, src[s.end:]...), nil
	}
	return nil, fmt.Errorf("mutant %s: no such site in %s", m.ID(), m.File)
}
