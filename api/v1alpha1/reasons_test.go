package v1alpha1

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"testing"
)

// declaredReasons reads the Reason* constants a file declares: name → value, or
// name → the selector it is set to ("v1alpha1.ReasonRefNotFound").
func declaredReasons(t *testing.T, path string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{}
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.CONST {
			continue
		}
		for _, spec := range g.Specs {
			vs := spec.(*ast.ValueSpec)
			for i, name := range vs.Names {
				if !strings.HasPrefix(name.Name, "Reason") || i >= len(vs.Values) {
					continue
				}
				switch v := vs.Values[i].(type) {
				case *ast.BasicLit:
					declared[name.Name], _ = strconv.Unquote(v.Value)
				case *ast.SelectorExpr:
					declared[name.Name] = v.X.(*ast.Ident).Name + "." + v.Sel.Name
				default:
					t.Errorf("%s: %s is set to neither a string nor another reason", path, name.Name)
				}
			}
		}
	}
	return declared
}

func TestEveryReasonHasItsMeaning(t *testing.T) {
	declared := declaredReasons(t, "reasons.go")
	if len(declared) < 40 {
		t.Fatalf("read only %d reasons from reasons.go", len(declared))
	}
	values := map[string]string{}
	for name, value := range declared {
		if other, dup := values[value]; dup {
			t.Errorf("%s and %s are both %q", name, other, value)
		}
		values[value] = name
		if _, ok := MeaningOf(value); !ok {
			t.Errorf("%s (%q) has no entry in Reasons: say whether it stalls, retries or counts as a failure", name, value)
		}
	}
	seen := map[string]bool{}
	for _, m := range Reasons {
		if _, ok := values[m.Reason]; !ok {
			t.Errorf("Reasons holds %q, which reasons.go does not declare", m.Reason)
		}
		if seen[m.Reason] {
			t.Errorf("Reasons holds %q twice", m.Reason)
		}
		seen[m.Reason] = true
	}
}

func TestAReasonThatHoldsReadyFalseCountsAsAFailure(t *testing.T) {
	for _, m := range Reasons {
		if (m.Stalls || m.Retries) && !m.Failure {
			t.Errorf("%s stalls or retries a Sync (Ready False) but tether_sync_failure would report it as Other", m.Reason)
		}
	}
}

// The source package classes git failures with reasons of its own names; their
// values are declared here, once, so that they have their meaning too.
func TestTheSourceReasonsAreDeclaredHere(t *testing.T) {
	inSource := declaredReasons(t, "../../source/errors.go")
	if len(inSource) == 0 {
		t.Fatal("read no reasons from source/errors.go")
	}
	for name, value := range inSource {
		if !strings.HasPrefix(value, "v1alpha1.") {
			t.Errorf("source.%s is %q: declare it in api/v1alpha1/reasons.go and set it to v1alpha1's", name, value)
		}
	}
}
