package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/library"
)

// CEL: the expression language of ValidatingAdmissionPolicy (and of
// webhooks' matchConditions). An expression is compiled once, against an
// environment that declares the variables it may read, and evaluated per
// request against a CELActivation holding the request's values:
//
//	prog, err := CompileExpression(`object.spec.replicas <= params.data.max`, CELBool, CELDecls{Params: true})
//	act := NewCELActivation(ctx, attrs, CELActivationConfig{Params: cm, Authorizer: authz})
//	val, cost, err := prog.Eval(ctx, act)
//
// The environment is Kubernetes': cel-go's standard library with its
// string, set, list and two-variable comprehension extensions, plus
// k8s.io/apiserver's Kubernetes libraries (quantity, url, regex, ip, cidr,
// format, semver, lists, authz). Objects are plain maps, as JSON shows
// them: `object.metadata.labels['app']`, `has(object.spec.x)`.
//
// Every evaluation is bounded: one expression may spend celPerCallLimit
// cost units (upstream's, about a tenth of a second), and callers add
// the returned costs up against celRuntimeBudget per policy.

const (
	// celPerCallLimit is the cost one expression may spend.
	celPerCallLimit = 1_000_000
	// celRuntimeBudget is what all expressions of one policy binding may
	// spend on one request.
	celRuntimeBudget = 10_000_000
	// celMatchConditionsBudget is what the matchConditions of one policy
	// or webhook may spend on one request.
	celMatchConditionsBudget = 2_500_000
)

// CELResult is the type an expression must evaluate to.
type CELResult int

const (
	CELAny          CELResult = iota // variables
	CELBool                          // validations, matchConditions
	CELString                        // messageExpression
	CELStringOrNull                  // auditAnnotations valueExpression
)

// CELDecls says which of the optional variables an expression may use.
// object, oldObject, request and namespaceObject are always declared.
type CELDecls struct {
	// Params declares params (a policy with paramKind).
	Params bool
	// Authorizer declares authorizer and authorizer.requestResource.
	Authorizer bool
	// Variables are the names usable as variables.<name>: a policy's
	// spec.variables that come before the expression.
	Variables []string
}

// CELCompileError is an expression that does not compile, or has the
// wrong type. Detail reads as upstream's ("compilation failed: ERROR:
// <input>:1:8: ...", "must evaluate to bool"); field validation reports
// it as an Invalid value at the expression's path.
type CELCompileError struct {
	Expression string
	Detail     string
}

func (e *CELCompileError) Error() string { return e.Detail }

// CELProgram is one compiled expression, safe for concurrent use.
type CELProgram struct {
	expr string
	prog cel.Program
}

// Expression returns the source the program was compiled from.
func (p *CELProgram) Expression() string { return p.expr }

// celEnvs caches one environment per shape of declarations: building one
// costs milliseconds, compiling against it microseconds.
var celEnvs sync.Map // celEnvKey -> *cel.Env

type celEnvKey struct{ params, authorizer bool }

func celEnv(params, authorizer bool) (*cel.Env, error) {
	key := celEnvKey{params, authorizer}
	if e, ok := celEnvs.Load(key); ok {
		return e.(*cel.Env), nil
	}
	opts := append(celLibraries(),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
	)
	if params {
		opts = append(opts, cel.Variable("params", cel.DynType))
	}
	if authorizer {
		opts = append(opts, cel.Variable("authorizer", library.AuthorizerType),
			cel.Variable("authorizer.requestResource", library.ResourceCheckType))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	e, _ := celEnvs.LoadOrStore(key, env)
	return e.(*cel.Env), nil
}

// celLibraries is the environment without variables: cel-go's standard
// library with the extensions and Kubernetes libraries upstream uses.
func celLibraries() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		ext.Bindings(),
		library.URLs(),
		library.Regex(),
		library.Lists(),
		library.Quantity(),
		library.IP(),
		library.CIDR(),
		library.Format(),
		library.SemverLib(),
		library.Authz(),
		library.AuthzSelectors(),
	}
}

// CompileExpression compiles expr for the variables decls declares and
// checks that it yields want. A *CELCompileError reports a user's
// mistake; other errors are the server's.
func CompileExpression(expr string, want CELResult, decls CELDecls) (*CELProgram, error) {
	env, err := celEnv(decls.Params, decls.Authorizer)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, &CELCompileError{Expression: expr, Detail: "compilation failed: " + iss.String()}
	}
	if unknown := celUnknownVariables(checked.NativeRep().Expr(), decls.Variables); len(unknown) > 0 {
		return nil, &CELCompileError{Expression: expr,
			Detail: fmt.Sprintf("compilation failed: undefined variable(s): %s", strings.Join(unknown, ", "))}
	}
	if err := celCheckResult(checked.OutputType(), want); err != nil {
		return nil, &CELCompileError{Expression: expr, Detail: err.Error()}
	}
	prog, err := env.Program(checked,
		cel.CostLimit(celPerCallLimit),
		cel.CostTracking(&library.CostEstimator{}),
		cel.InterruptCheckFrequency(100),
		cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, &CELCompileError{Expression: expr, Detail: "program instantiation failed: " + err.Error()}
	}
	return &CELProgram{expr: expr, prog: prog}, nil
}

// celCheckResult holds a dyn result to be checked at evaluation time;
// only a type known to be wrong fails compilation.
func celCheckResult(got *cel.Type, want CELResult) error {
	if got.IsExactType(cel.DynType) || want == CELAny {
		return nil
	}
	switch want {
	case CELBool:
		if !got.IsExactType(cel.BoolType) {
			return errors.New("must evaluate to bool")
		}
	case CELString:
		if !got.IsExactType(cel.StringType) {
			return errors.New("must evaluate to string")
		}
	case CELStringOrNull:
		if !got.IsExactType(cel.StringType) && !got.IsExactType(cel.NullType) {
			return errors.New("must evaluate to one of [string null_type]")
		}
	}
	return nil
}

// celUnknownVariables returns the names used as variables.<name> that are
// not declared: variables is a map to the type checker, so it cannot
// tell an unknown name from a known one.
func celUnknownVariables(e ast.Expr, declared []string) []string {
	var unknown []string
	ast.PostOrderVisit(e, ast.NewExprVisitor(func(x ast.Expr) {
		if x.Kind() != ast.SelectKind {
			return
		}
		sel := x.AsSelect()
		if op := sel.Operand(); op.Kind() != ast.IdentKind || op.AsIdent() != "variables" {
			return
		}
		name := sel.FieldName()
		for _, d := range declared {
			if d == name {
				return
			}
		}
		for _, u := range unknown {
			if u == name {
				return
			}
		}
		unknown = append(unknown, name)
	}))
	return unknown
}

// Eval runs the program against act and returns its value and the cost
// it spent. A runtime error (a missing field, a cost limit, a
// cancelled ctx) comes back as an error naming the expression.
func (p *CELProgram) Eval(ctx context.Context, act *CELActivation) (ref.Val, int64, error) {
	val, details, err := p.prog.ContextEval(ctx, act)
	var cost int64
	if details != nil && details.ActualCost() != nil {
		cost = int64(*details.ActualCost())
	}
	if err != nil {
		return nil, cost, fmt.Errorf("expression '%s' resulted in error: %w", p.expr, err)
	}
	return val, cost, nil
}

// EvalBool runs a program that yields a bool.
func (p *CELProgram) EvalBool(ctx context.Context, act *CELActivation) (bool, int64, error) {
	val, cost, err := p.Eval(ctx, act)
	if err != nil {
		return false, cost, err
	}
	b, ok := val.(types.Bool)
	if !ok {
		return false, cost, fmt.Errorf("expression '%s' resulted in error: must evaluate to bool", p.expr)
	}
	return bool(b), cost, nil
}

// EvalString runs a program that yields a string; null yields "", false.
func (p *CELProgram) EvalString(ctx context.Context, act *CELActivation) (string, bool, int64, error) {
	val, cost, err := p.Eval(ctx, act)
	if err != nil {
		return "", false, cost, err
	}
	switch v := val.(type) {
	case types.String:
		return string(v), true, cost, nil
	case types.Null:
		return "", false, cost, nil
	}
	return "", false, cost, fmt.Errorf("expression '%s' resulted in error: must evaluate to string", p.expr)
}

var _ interpreter.Activation = (*CELActivation)(nil)
