package store_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/bindery-nas/bindery/internal/testutil"
)

// TestNoSQLFromUserStrings reads internal/store (the only package that
// holds SQL) and flags every piece of SQL text built at run time from
// something other than constants: a `+` chain or fmt.Sprintf whose literal
// parts look like SQL and whose other operands are not (transitively)
// constants, literals, integers, or one of the few identifiers the store
// picks from fixed sets in code (allowedSQLParts, each with its reason).
// A user string can then only reach SQLite as a bound parameter.
//
// The analysis is syntactic and deliberately conservative: a local
// variable is accepted only when every assignment to it in its function is
// itself safe, and a []string joined into SQL only when every append to it
// is.
func TestNoSQLFromUserStrings(t *testing.T) {
	root, err := testutil.ModuleRoot()
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]any{}
	// Every package of the store but its test helpers.
	for _, dir := range []string{"store", "store/pgadmin", "store/reading", "store/feed", "store/hashes", "store/scanning", "store/duplicates", "store/thumbnails", "store/queue", "store/catalog", "store/leases", "store/internal/sqldb"} {
		paths, err := filepath.Glob(filepath.Join(root, "internal", dir, "*.go"))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no files in internal/%s: %v", dir, err)
		}
		for _, p := range paths {
			if !strings.HasSuffix(p, "_test.go") {
				srcs[p] = nil // read from disk
			}
		}
	}
	g, err := grepSQL(srcs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d store files, %d SQL expressions built at run time, all from constants (%d allow-listed uses)",
		len(srcs), g.built, g.allowedUses)
	for _, f := range g.findings {
		t.Errorf("SQL built from a non-constant: %s", f)
	}
	if g.built < 10 {
		t.Fatalf("only %d built SQL expressions found: the analysis is not seeing the store", g.built)
	}
}

// TestSQLGrepCatches proves the analysis flags the patterns it exists
// for, and accepts the safe ones.
func TestSQLGrepCatches(t *testing.T) {
	src := `package store
import ("fmt"; "strings")
const cols = "id, name"
func (s *Store) concat(name string) { s.r.Exec("SELECT " + cols + " FROM x WHERE name = '" + name + "'") }
func (s *Store) sprintf(table string) { _ = fmt.Sprintf("DELETE FROM %s", table) }
func (s *Store) joined(extra string) {
	w := []string{"a = ?"}
	w = append(w, extra)
	_ = "SELECT 1 FROM t WHERE " + strings.Join(w, " AND ")
}
func colSQL(c string) string { return "SELECT " + c + " FROM t" }
func (s *Store) viaHelper(u string) { _ = colSQL(u) }
func (s *Store) okInt(n int) { _ = fmt.Sprintf("SELECT 1 FROM t LIMIT %d", n) }
func (s *Store) okConst() { _ = colSQL("id") }
func (s *Store) okRange() {
	for _, table := range []string{"a", "b"} { _ = "DELETE FROM " + table }
}
func (s *Store) okJoin(on bool) {
	var w []string
	if on { w = append(w, "x = ?") }
	_ = "SELECT 1 FROM t WHERE " + strings.Join(w, " AND ")
}
`
	g, err := grepSQL(map[string]any{"bad.go": src})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"concat", "sprintf", "joined", "viaHelper"}
	if len(g.findings) != len(want) {
		t.Fatalf("findings %d, want %d (%v):\n%s", len(g.findings), len(want), want, strings.Join(g.findings, "\n"))
	}
	for i, f := range g.findings {
		line := strings.Split(src, "\n")[g.lines[i]-1]
		if !strings.Contains(line, want[i]) && !(want[i] == "joined" && strings.Contains(line, "strings.Join")) &&
			!(want[i] == "viaHelper" && strings.Contains(line, "colSQL")) {
			t.Errorf("finding %q on line %q, want %s", f, line, want[i])
		}
	}
}

// grepSQL parses the files (nil source: read from disk) as one package and
// runs the analysis.
func grepSQL(srcs map[string]any) (*sqlGrep, error) {
	g := &sqlGrep{fset: token.NewFileSet(), consts: map[string]bool{}, scopes: map[*ast.FuncDecl]*scope{}, visiting: map[string]bool{}}
	names := make([]string, 0, len(srcs))
	for n := range srcs {
		names = append(names, n)
	}
	sort.Strings(names)
	var parsed []*ast.File
	for _, n := range names {
		af, err := parser.ParseFile(g.fset, n, srcs[n], parser.SkipObjectResolution)
		if err != nil {
			return nil, err
		}
		parsed = append(parsed, af)
		g.collectConsts(af)
		for _, d := range af.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Body != nil {
				g.funcs = append(g.funcs, fn)
				g.scopes[fn] = newScope(fn)
			}
		}
	}
	for _, af := range parsed {
		g.check(af)
	}
	return g, nil
}

// allowedSQLParts are identifiers the store may interpolate into SQL
// without the analysis proving them constant, each with its reason. It is
// empty: every interpolated identifier is proven constant, through range
// loops over literal lists and through the call sites of helpers that take
// a table or column name.
var allowedSQLParts = map[string]string{}

var sqlWords = regexp.MustCompile(`(?i)\b(select|update|insert|delete|where|from|set|values|order by|returning|join|limit)\b`)

type sqlGrep struct {
	fset        *token.FileSet
	consts      map[string]bool // package-level constant names
	funcs       []*ast.FuncDecl // every function and method of the package
	scopes      map[*ast.FuncDecl]*scope
	visiting    map[string]bool // parameters being proven (cycle guard)
	findings    []string
	lines       []int // line of each finding
	built       int
	allowedUses int
}

func (g *sqlGrep) collectConsts(f *ast.File) {
	for _, d := range f.Decls {
		if gd, ok := d.(*ast.GenDecl); ok && gd.Tok == token.CONST {
			for _, s := range gd.Specs {
				for _, n := range s.(*ast.ValueSpec).Names {
					g.consts[n.Name] = true
				}
			}
		}
	}
}

// check walks every function: each SQL-looking `+` chain or Sprintf must
// be safe in the scope of its function.
func (g *sqlGrep) check(f *ast.File) {
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		sc := g.scopes[fn]
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.BinaryExpr:
				if e.Op == token.ADD && looksSQL(e) {
					g.built++
					g.expr(sc, e, e)
					return false // the chain was checked as a whole
				}
			case *ast.AssignStmt:
				if e.Tok == token.ADD_ASSIGN && len(e.Rhs) == 1 && looksSQL(e.Rhs[0]) {
					g.built++
					g.expr(sc, e.Rhs[0], e)
				}
			case *ast.CallExpr:
				if isCall(e, "fmt", "Sprintf") && len(e.Args) > 0 && looksSQL(e.Args[0]) {
					g.built++
					g.sprintf(sc, e)
				}
			}
			return true
		})
	}
}

func (g *sqlGrep) flag(at ast.Node, what string) {
	g.findings = append(g.findings, fmt.Sprintf("%s: %s", g.fset.Position(at.Pos()), what))
	g.lines = append(g.lines, g.fset.Position(at.Pos()).Line)
}

// expr checks that e is built only from safe parts.
func (g *sqlGrep) expr(sc *scope, e ast.Expr, at ast.Node) {
	if why := g.unsafe(sc, e, 0); why != "" {
		g.flag(at, why)
	}
}

func (g *sqlGrep) sprintf(sc *scope, call *ast.CallExpr) {
	format, ok := stringLit(call.Args[0])
	if !ok {
		g.flag(call, "Sprintf with a non-literal SQL format")
		return
	}
	verbs := regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`).FindAllString(format, -1)
	arg := 1
	for _, v := range verbs {
		if v == "%%" {
			continue
		}
		if arg >= len(call.Args) {
			break
		}
		// Integers cannot carry SQL; anything else must be safe text.
		if !strings.HasSuffix(v, "d") {
			if why := g.unsafe(sc, call.Args[arg], 0); why != "" {
				g.flag(call, "Sprintf "+v+": "+why)
			}
		}
		arg++
	}
}

// unsafe returns why e may carry a non-constant string into SQL, or "".
func (g *sqlGrep) unsafe(sc *scope, e ast.Expr, depth int) string {
	if depth > 12 {
		return "expression too deep to prove constant: " + render(e)
	}
	switch x := e.(type) {
	case *ast.BasicLit:
		return ""
	case *ast.ParenExpr: // depth counts hops through names, not nesting
		return g.unsafe(sc, x.X, depth)
	case *ast.BinaryExpr:
		if why := g.unsafe(sc, x.X, depth); why != "" {
			return why
		}
		return g.unsafe(sc, x.Y, depth)
	case *ast.Ident:
		return g.ident(sc, x, depth)
	case *ast.SelectorExpr:
		if _, ok := allowedSQLParts[render(x)]; ok {
			g.allowedUses++
			return ""
		}
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "protocol" {
			return "" // exported protocol constants (enum values, table names)
		}
		if pkg, ok := x.X.(*ast.Ident); ok && pkg.Name == "sqldb" && g.consts[x.Sel.Name] {
			return "" // the column lists the store's packages share
		}
		if as, ok := sc.assigns[render(x)]; ok {
			for _, a := range as {
				if why := g.unsafe(sc, a, depth+1); why != "" {
					return render(x) + " = " + why
				}
			}
			return ""
		}
		return "selector " + render(x)
	case *ast.CallExpr:
		if isCall(x, "strings", "Join") && len(x.Args) == 2 {
			if why := g.unsafe(sc, x.Args[1], depth+1); why != "" {
				return why
			}
			return g.slice(sc, x.Args[0], depth)
		}
		if isCall(x, "strings", "Repeat") && len(x.Args) == 2 {
			return g.unsafe(sc, x.Args[0], depth+1)
		}
		if isCall(x, "fmt", "Sprintf") {
			before := len(g.findings)
			g.sprintf(sc, x)
			if len(g.findings) > before {
				g.findings, g.lines = g.findings[:before], g.lines[:before]
				return "nested Sprintf with non-constant text: " + render(x)
			}
			return ""
		}
		return g.helperCall(sc, x, depth)
	}
	return "expression " + render(e)
}

func (g *sqlGrep) ident(sc *scope, x *ast.Ident, depth int) string {
	if _, ok := allowedSQLParts[x.Name]; ok {
		g.allowedUses++
		return ""
	}
	if sc.localConsts[x.Name] || (g.consts[x.Name] && sc.assigns[x.Name] == nil) {
		return ""
	}
	as, ok := sc.assigns[x.Name]
	if !ok {
		if i, isParam := sc.params[x.Name]; isParam {
			return g.param(sc.fn, i, depth)
		}
		return "identifier " + x.Name + " (unknown)"
	}
	for _, a := range as {
		if why := g.unsafe(sc, a, depth+1); why != "" {
			return x.Name + " := " + why
		}
	}
	return ""
}

// helperCall accepts a call of a package function returning SQL text when
// that function's results are built only from constants and its own
// parameters, and the arguments given here for those are safe.
func (g *sqlGrep) helperCall(sc *scope, call *ast.CallExpr, depth int) string {
	name := calleeName(call)
	for _, fn := range g.funcs {
		if fn.Name.Name != name {
			continue
		}
		fsc := g.scopes[fn]
		var why string
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if r, ok := n.(*ast.ReturnStmt); ok && why == "" {
				for _, res := range r.Results {
					why = g.unsafe(g.bind(fsc, sc, call, depth), res, depth+1)
				}
			}
			return why == ""
		})
		if why != "" {
			return "call " + name + ": " + why
		}
		return ""
	}
	return "call " + render(call)
}

// param proves parameter i of fn safe at every call site in the package.
func (g *sqlGrep) param(fn *ast.FuncDecl, i, depth int) string {
	key := fmt.Sprintf("%s#%d", fn.Name.Name, i)
	if g.visiting[key] {
		return ""
	}
	g.visiting[key] = true
	defer delete(g.visiting, key)
	calls := 0
	for _, caller := range g.funcs {
		csc := g.scopes[caller]
		var why string
		ast.Inspect(caller.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || why != "" || calleeName(call) != fn.Name.Name || i >= len(call.Args) {
				return why == ""
			}
			calls++
			if w := g.unsafe(csc, call.Args[i], depth+1); w != "" {
				why = fmt.Sprintf("%s: argument %d of %s: %s", g.fset.Position(call.Pos()), i+1, fn.Name.Name, w)
			}
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	if calls == 0 {
		return "parameter " + key + " of a function never called here"
	}
	return ""
}

func calleeName(call *ast.CallExpr) string {
	switch f := call.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		return f.Sel.Name
	}
	return ""
}

// slice checks a []string joined into SQL: every element ever appended or
// listed must be safe.
func (g *sqlGrep) slice(sc *scope, e ast.Expr, depth int) string {
	id, ok := e.(*ast.Ident)
	if !ok {
		return "joined " + render(e)
	}
	for _, a := range sc.appends[id.Name] {
		if why := g.unsafe(sc, a, depth+1); why != "" {
			return id.Name + " element: " + why
		}
	}
	for _, a := range sc.assigns[id.Name] {
		if lit, ok := a.(*ast.CompositeLit); ok {
			for _, el := range lit.Elts {
				if why := g.unsafe(sc, el, depth+1); why != "" {
					return id.Name + " element: " + why
				}
			}
		}
	}
	return ""
}

// scope is what one function assigns: every right-hand side per local
// name (`:=`, `=`, `+=`, var), the values appended to each slice, and its
// local constants.
type scope struct {
	fn          *ast.FuncDecl
	params      map[string]int // parameter name → index among the call's arguments
	assigns     map[string][]ast.Expr
	appends     map[string][]ast.Expr
	localConsts map[string]bool
}

func newScope(fn *ast.FuncDecl) *scope {
	sc := &scope{fn: fn, params: map[string]int{}, assigns: map[string][]ast.Expr{}, appends: map[string][]ast.Expr{},
		localConsts: map[string]bool{}}
	i := 0
	for _, f := range fn.Type.Params.List {
		for _, n := range f.Names {
			sc.params[n.Name] = i
			i++
		}
		if len(f.Names) == 0 {
			i++
		}
	}
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.RangeStmt:
			sc.rangeOver(s)
		case *ast.AssignStmt:
			for i, l := range s.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || i >= len(s.Rhs) || len(s.Lhs) != len(s.Rhs) {
					continue
				}
				r := s.Rhs[i]
				if call, ok := r.(*ast.CallExpr); ok && isIdent(call.Fun, "append") && len(call.Args) > 0 && isIdent(call.Args[0], id.Name) {
					sc.appends[id.Name] = append(sc.appends[id.Name], call.Args[1:]...)
					continue
				}
				sc.assigns[id.Name] = append(sc.assigns[id.Name], r)
			}
		case *ast.GenDecl:
			for _, spec := range s.Specs {
				vs, ok := spec.(*ast.ValueSpec)
				if !ok {
					continue
				}
				for i, n := range vs.Names {
					if s.Tok == token.CONST {
						sc.localConsts[n.Name] = true
					} else if i < len(vs.Values) {
						sc.assigns[n.Name] = append(sc.assigns[n.Name], vs.Values[i])
					} else {
						sc.assigns[n.Name] = append(sc.assigns[n.Name], &ast.BasicLit{Kind: token.STRING, Value: `""`})
					}
				}
			}
		}
		return true
	})
	return sc
}

// rangeOver records the values a range variable takes when the loop runs
// over a literal list: the elements, or the fields of struct elements
// (as "v.field").
func (sc *scope) rangeOver(r *ast.RangeStmt) {
	v, ok := r.Value.(*ast.Ident)
	lit, isLit := r.X.(*ast.CompositeLit)
	if !ok || !isLit {
		return
	}
	var fields []string
	if at, ok := lit.Type.(*ast.ArrayType); ok {
		if st, ok := at.Elt.(*ast.StructType); ok {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					fields = append(fields, n.Name)
				}
			}
		}
	}
	for _, el := range lit.Elts {
		sl, isStruct := el.(*ast.CompositeLit)
		if !isStruct || fields == nil {
			sc.assigns[v.Name] = append(sc.assigns[v.Name], el)
			continue
		}
		for i, fe := range sl.Elts {
			name, val := "", fe
			if kv, ok := fe.(*ast.KeyValueExpr); ok {
				name, val = render(kv.Key), kv.Value
			} else if i < len(fields) {
				name = fields[i]
			}
			sc.assigns[v.Name+"."+name] = append(sc.assigns[v.Name+"."+name], val)
		}
	}
}

// bind is the helper's scope with its parameters replaced by the
// caller's arguments (evaluated in the caller's scope).
func (g *sqlGrep) bind(sc, caller *scope, call *ast.CallExpr, depth int) *scope {
	b := &scope{fn: sc.fn, params: map[string]int{}, assigns: map[string][]ast.Expr{}, appends: sc.appends, localConsts: sc.localConsts}
	for k, v := range sc.assigns {
		b.assigns[k] = v
	}
	for name, i := range sc.params {
		if i < len(call.Args) {
			if why := g.unsafe(caller, call.Args[i], depth+1); why == "" {
				b.assigns[name] = []ast.Expr{&ast.BasicLit{Kind: token.STRING, Value: `""`}}
				continue
			}
		}
		b.params[name] = i
	}
	return b
}

func looksSQL(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if s, ok := stringLit(n); ok && sqlWords.MatchString(s) {
			found = true
		}
		return !found
	})
	return found
}

func stringLit(n ast.Node) (string, bool) {
	lit, ok := n.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

func isCall(c *ast.CallExpr, pkg, name string) bool {
	sel, ok := c.Fun.(*ast.SelectorExpr)
	return ok && isIdent(sel.X, pkg) && sel.Sel.Name == name
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func render(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return render(x.X) + "." + x.Sel.Name
	case *ast.CallExpr:
		return render(x.Fun) + "(…)"
	}
	return fmt.Sprintf("%T", e)
}
