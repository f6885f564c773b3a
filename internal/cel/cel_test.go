package cel

import (
	"errors"
	"strings"
	"testing"
)

func TestCompile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		expr    string
		want    Result
		decls   Decls
		wantErr string
	}{
		{name: "bool", expr: "object.metadata.name == 'web'", want: Bool},
		{name: "kubernetes libraries", want: Bool,
			expr: "quantity('1Gi').isGreaterThan(quantity('1Mi')) && url('https://x.io/a').getHost() == 'x.io' && 'abc'.matches('^a') && isIP('10.0.0.1') && [1, 2].isSorted()"},
		{name: "extensions", want: Bool, expr: "'a,b'.split(',').size() == 2 && sets.contains([1, 2], [1]) && {'a': 1}.all(k, v, v > 0)"},
		{name: "syntax error", expr: "object.x ==", want: Bool, wantErr: "compilation failed: ERROR: <input>:1:12: Syntax error"},
		{name: "undeclared params", expr: "params.x", want: Any, wantErr: "undeclared reference to 'params'"},
		{name: "declared params", expr: "params.x", want: Any, decls: Decls{Params: true}},
		{name: "authorizer only when declared", expr: "authorizer.path('/healthz').check('get').allowed()", want: Bool,
			wantErr: "undeclared reference to 'authorizer'"},
		{name: "authorizer", expr: "authorizer.path('/healthz').check('get').allowed()", want: Bool, decls: Decls{Authorizer: true}},
		{name: "wrong result", expr: "1 + 1", want: Bool, wantErr: "must evaluate to bool"},
		{name: "dyn result is checked at run time", expr: "object.spec", want: Bool},
		{name: "string or null", expr: "null", want: StringOrNull},
		{name: "unknown variable", expr: "variables.a && variables.b", want: Bool, decls: Decls{Variables: []string{"a"}},
			wantErr: "undefined variable(s): b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(tc.expr, tc.want, tc.decls)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("compile: %v", err)
				}
				return
			}
			var ce *CompileError
			if !errors.As(err, &ce) || !strings.Contains(ce.Detail, tc.wantErr) {
				t.Fatalf("error %v, want a CompileError with %q", err, tc.wantErr)
			}
		})
	}
}
