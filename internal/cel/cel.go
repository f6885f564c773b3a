package cel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	celgo "github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apiserver/pkg/cel/library"
)

// PerCallLimit is the cost one expression may spend (upstream's, about a
// tenth of a second); callers add the costs Eval returns up against their
// own budgets.
const PerCallLimit = 1_000_000

// Result is the type an expression must evaluate to.
type Result int

const (
	Any          Result = iota // variables
	Bool                       // validations, matchConditions
	String                     // messageExpression
	StringOrNull               // auditAnnotations valueExpression
)

// Decls says which of the optional variables an expression may use.
// object, oldObject, request and namespaceObject are always declared.
type Decls struct {
	// Params declares params (a policy with paramKind).
	Params bool
	// Authorizer declares authorizer and authorizer.requestResource.
	Authorizer bool
	// Variables are the names usable as variables.<name>: a policy's
	// spec.variables that come before the expression.
	Variables []string
}

// CompileError is an expression that does not compile, or has the
// wrong type. Detail reads as upstream's ("compilation failed: ERROR:
// <input>:1:8: ...", "must evaluate to bool"); field validation reports
// it as an Invalid value at the expression's path.
type CompileError struct {
	Expression string
	Detail     string
}

func (e *CompileError) Error() string { return e.Detail }

// Program is one compiled expression, safe for concurrent use.
type Program struct {
	expr string
	prog celgo.Program
}

// Expression returns the source the program was compiled from.
func (p *Program) Expression() string { return p.expr }

// envs caches one environment per shape of declarations: building one
// costs milliseconds, compiling against it microseconds.
var envs sync.Map // envKey -> *celgo.Env

type envKey struct{ params, authorizer bool }

func environment(params, authorizer bool) (*celgo.Env, error) {
	key := envKey{params, authorizer}
	if e, ok := envs.Load(key); ok {
		return e.(*celgo.Env), nil
	}
	opts := append(Libraries(),
		celgo.Variable("object", celgo.DynType),
		celgo.Variable("oldObject", celgo.DynType),
		celgo.Variable("request", celgo.DynType),
		celgo.Variable("namespaceObject", celgo.DynType),
		celgo.Variable("variables", celgo.MapType(celgo.StringType, celgo.DynType)),
	)
	if params {
		opts = append(opts, celgo.Variable("params", celgo.DynType))
	}
	if authorizer {
		opts = append(opts, celgo.Variable("authorizer", library.AuthorizerType),
			celgo.Variable("authorizer.requestResource", library.ResourceCheckType))
	}
	env, err := celgo.NewEnv(opts...)
	if err != nil {
		return nil, err
	}
	e, _ := envs.LoadOrStore(key, env)
	return e.(*celgo.Env), nil
}

// Libraries is the environment without variables: cel-go's standard
// library with the extensions and Kubernetes libraries upstream uses.
func Libraries() []celgo.EnvOption {
	return []celgo.EnvOption{
		celgo.HomogeneousAggregateLiterals(),
		celgo.EagerlyValidateDeclarations(true),
		celgo.DefaultUTCTimeZone(true),
		celgo.CrossTypeNumericComparisons(true),
		celgo.OptionalTypes(),
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

// Compile compiles expr for the variables decls declares and
// checks that it yields want. A *CompileError reports a user's
// mistake; other errors are the server's.
func Compile(expr string, want Result, decls Decls) (*Program, error) {
	env, err := environment(decls.Params, decls.Authorizer)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	checked, iss := env.Compile(expr)
	if iss.Err() != nil {
		return nil, &CompileError{Expression: expr, Detail: "compilation failed: " + iss.String()}
	}
	if unknown := unknownVariables(checked.NativeRep().Expr(), decls.Variables); len(unknown) > 0 {
		return nil, &CompileError{Expression: expr,
			Detail: fmt.Sprintf("compilation failed: undefined variable(s): %s", strings.Join(unknown, ", "))}
	}
	if err := checkResult(checked.OutputType(), want); err != nil {
		return nil, &CompileError{Expression: expr, Detail: err.Error()}
	}
	prog, err := env.Program(checked,
		celgo.CostLimit(PerCallLimit),
		celgo.CostTracking(&library.CostEstimator{}),
		celgo.InterruptCheckFrequency(100),
		celgo.EvalOptions(celgo.OptOptimize))
	if err != nil {
		return nil, &CompileError{Expression: expr, Detail: "program instantiation failed: " + err.Error()}
	}
	return &Program{expr: expr, prog: prog}, nil
}

// checkResult holds a dyn result to be checked at evaluation time;
// only a type known to be wrong fails compilation.
func checkResult(got *celgo.Type, want Result) error {
	if got.IsExactType(celgo.DynType) || want == Any {
		return nil
	}
	switch want {
	case Bool:
		if !got.IsExactType(celgo.BoolType) {
			return errors.New("must evaluate to bool")
		}
	case String:
		if !got.IsExactType(celgo.StringType) {
			return errors.New("must evaluate to string")
		}
	case StringOrNull:
		if !got.IsExactType(celgo.StringType) && !got.IsExactType(celgo.NullType) {
			return errors.New("must evaluate to one of [string null_type]")
		}
	}
	return nil
}

// unknownVariables returns the names used as variables.<name> that are
// not declared: variables is a map to the type checker, so it cannot
// tell an unknown name from a known one.
func unknownVariables(e ast.Expr, declared []string) []string {
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
func (p *Program) Eval(ctx context.Context, act interpreter.Activation) (ref.Val, int64, error) {
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
func (p *Program) EvalBool(ctx context.Context, act interpreter.Activation) (bool, int64, error) {
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
func (p *Program) EvalString(ctx context.Context, act interpreter.Activation) (string, bool, int64, error) {
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
