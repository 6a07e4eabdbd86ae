package storetest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"testing"
)

// TestSuitesCoverTx: every aggregate store.Tx is made of (store/tx.go)
// has a suite of the same name, Run runs every suite, and every suite
// is a method of Suite.
func TestSuitesCoverTx(t *testing.T) {
	t.Parallel()
	f, err := parser.ParseFile(token.NewFileSet(), "../tx.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var aggregates []string
	ast.Inspect(f, func(n ast.Node) bool {
		ts, ok := n.(*ast.TypeSpec)
		if !ok || ts.Name.Name != "Tx" {
			return true
		}
		for _, m := range ts.Type.(*ast.InterfaceType).Methods.List {
			if id, ok := m.Type.(*ast.Ident); ok && len(m.Names) == 0 {
				aggregates = append(aggregates, id.Name)
			}
		}
		return false
	})
	if len(aggregates) < 10 {
		t.Fatalf("found only %v embedded in store.Tx", aggregates)
	}
	var run []string
	for _, s := range (Suite{}).suites() {
		run = append(run, s.name)
	}
	for _, a := range aggregates {
		if !slices.Contains(run, a) {
			t.Errorf("store.Tx's aggregate %s has no suite: add Suite.%s (storetest/suite_*.go) and list it in Suite.suites", a, a)
		}
	}
	typ := reflect.TypeFor[Suite]()
	for i := range typ.NumMethod() {
		if name := typ.Method(i).Name; name != "Run" && !slices.Contains(run, name) {
			t.Errorf("Suite.%s is not in Suite.suites: Run does not run it", name)
		}
	}
	for _, name := range run {
		if _, ok := typ.MethodByName(name); !ok {
			t.Errorf("Suite.suites lists %s, which is not a method of Suite", name)
		}
	}
}
