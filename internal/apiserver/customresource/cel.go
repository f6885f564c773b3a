package customresource

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/cel/library"
)

// x-kubernetes-validations: CEL rules evaluated with self bound to the
// value of the node that declares them, and oldSelf to its previous value
// on updates. A rule that mentions oldSelf is a transition rule and runs
// only when there is an old value to compare with, as upstream.
//
// Values are given to CEL as they are (maps, lists, int64, float64,
// strings), typed dynamically: the schema has already checked their
// types, so the rules only see well-typed data.

// celRule is one compiled rule.
type celRule struct {
	rule       apiextensionsv1.ValidationRule
	prog       cel.Program
	msgProg    cel.Program // messageExpression, if any
	transition bool
}

// ruleTimeout bounds one rule's evaluation: a rule is the CRD author's
// code running on every write.
const ruleTimeout = time.Second

var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable("self", cel.DynType),
		cel.Variable("oldSelf", cel.DynType),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		library.Lists(),
		library.Regex(),
		library.URLs(),
		library.Quantity(),
		cel.CrossTypeNumericComparisons(true),
	)
})

func compileRule(v apiextensionsv1.ValidationRule) (*celRule, error) {
	env, err := celEnv()
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(v.Rule) == "" {
		return nil, errors.New("rule is not specified")
	}
	ast, iss := env.Compile(v.Rule)
	if iss.Err() != nil {
		return nil, fmt.Errorf("compilation failed: %v", iss.Err())
	}
	if t := ast.OutputType(); t != cel.BoolType && t != cel.DynType {
		return nil, fmt.Errorf("compilation failed: rule must evaluate to a bool, got %s", t)
	}
	prog, err := env.Program(ast, cel.InterruptCheckFrequency(100))
	if err != nil {
		return nil, fmt.Errorf("compilation failed: %v", err)
	}
	r := &celRule{rule: v, prog: prog, transition: referencesOldSelf(ast)}
	if v.MessageExpression != "" {
		mast, iss := env.Compile(v.MessageExpression)
		if iss.Err() != nil {
			return nil, fmt.Errorf("messageExpression compilation failed: %v", iss.Err())
		}
		if r.msgProg, err = env.Program(mast); err != nil {
			return nil, fmt.Errorf("messageExpression compilation failed: %v", err)
		}
	}
	return r, nil
}

// referencesOldSelf reports whether the checked expression reads oldSelf.
func referencesOldSelf(ast *cel.Ast) bool {
	for _, r := range ast.NativeRep().ReferenceMap() {
		if r.Name == "oldSelf" {
			return true
		}
	}
	return false
}

// runRules evaluates the rules of n and of every node below it whose
// value is present.
func runRules(n *node, v, old interface{}, hasOld bool, p *field.Path) field.ErrorList {
	if n == nil || v == nil {
		return nil
	}
	var errs field.ErrorList
	for _, r := range n.rules {
		if r.transition && !hasOld {
			continue
		}
		if err := r.eval(n, v, old, p); err != nil {
			errs = append(errs, err)
		}
	}
	switch t := v.(type) {
	case map[string]interface{}:
		oldMap, _ := old.(map[string]interface{})
		for _, name := range sortedKeys(t) {
			sub := n.properties[name]
			if sub == nil {
				sub = n.additional
			}
			if sub == nil || (p == nil && (name == "metadata" || name == "apiVersion" || name == "kind")) {
				continue
			}
			ov, ok := oldMap[name]
			errs = append(errs, runRules(sub, t[name], ov, hasOld && ok, p.Child(name))...)
		}
	case []interface{}:
		oldList, _ := old.([]interface{})
		for i, e := range t {
			var ov interface{}
			if i < len(oldList) {
				ov = oldList[i]
			}
			errs = append(errs, runRules(n.items, e, ov, hasOld && i < len(oldList), p.Index(i))...)
		}
	}
	return errs
}

func (r *celRule) eval(n *node, v, old interface{}, p *field.Path) *field.Error {
	vars := map[string]interface{}{"self": v}
	if r.transition {
		vars["oldSelf"] = old
	}
	ctx, cancel := context.WithTimeout(context.Background(), ruleTimeout)
	defer cancel()
	out, _, err := r.prog.ContextEval(ctx, vars)
	at := p
	if r.rule.FieldPath != "" {
		for _, part := range strings.Split(strings.TrimPrefix(r.rule.FieldPath, "."), ".") {
			at = at.Child(part)
		}
	}
	typ := n.s.Type
	if typ == "" {
		typ = jsonType(v)
	}
	if err != nil {
		return field.Invalid(at, typ, fmt.Sprintf("%s: %v", ruleDescription(r.rule), err))
	}
	if b, ok := out.(types.Bool); ok && bool(b) {
		return nil
	}
	if _, ok := out.(types.Bool); !ok {
		return field.Invalid(at, typ, fmt.Sprintf("%s: rule did not evaluate to a bool", ruleDescription(r.rule)))
	}
	msg := r.message(vars)
	switch reason := r.rule.Reason; {
	case reason != nil && *reason == apiextensionsv1.FieldValueForbidden:
		return field.Forbidden(at, msg)
	case reason != nil && *reason == apiextensionsv1.FieldValueRequired:
		return field.Required(at, msg)
	case reason != nil && *reason == apiextensionsv1.FieldValueDuplicate:
		return field.Duplicate(at, msg)
	}
	return field.Invalid(at, typ, msg)
}

// message is what a failed rule says: its messageExpression's result, its
// message, or "failed rule: <rule>".
func (r *celRule) message(vars map[string]interface{}) string {
	if r.msgProg != nil {
		if out, _, err := r.msgProg.Eval(vars); err == nil {
			if s, ok := out.(ref.Val).Value().(string); ok && strings.TrimSpace(s) != "" {
				return s
			}
		}
	}
	if r.rule.Message != "" {
		return r.rule.Message
	}
	return ruleDescription(r.rule)
}

func ruleDescription(v apiextensionsv1.ValidationRule) string {
	return "failed rule: " + strings.TrimSpace(v.Rule)
}
