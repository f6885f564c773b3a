package admission

import (
	"context"
	"fmt"
	"reflect"
	"sync"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/library"

	"github.com/rudder-dev/rudder/internal/auth"
	"github.com/rudder-dev/rudder/internal/cel"
)

// What CEL may spend on one request, on top of cel.PerCallLimit per
// expression (upstream's budgets).
const (
	// celRuntimeBudget is what all expressions of one policy binding may
	// spend on one request.
	celRuntimeBudget = 10_000_000
	// celMatchConditionsBudget is what the matchConditions of one policy
	// or webhook may spend on one request.
	celMatchConditionsBudget = 2_500_000
)

// CELActivationConfig holds what a request's expressions may read beyond
// the write itself.
type CELActivationConfig struct {
	// Params is the policy's parameter object (nil: params is null).
	Params runtime.Object
	// Namespace is the namespace object of a namespaced write (nil: null).
	Namespace runtime.Object
	// Authorizer backs the authorizer variable; nil allows nothing.
	Authorizer auth.Authorizer
}

// CELActivation is the values one request's expressions read: object,
// oldObject, request, namespaceObject, params, authorizer and
// variables. Objects are converted to CEL once, on first use, and the
// conversion is shared by every expression of the request. An
// activation is used by one request at a time; WithParams gives the
// per-binding copies.
type CELActivation struct {
	ctx   context.Context
	attrs *Attributes
	cfg   CELActivationConfig

	// Converted once, on first use; shared by copies from WithParams.
	shared *celShared

	params ref.Val
	vars   *celVariables
}

type celShared struct {
	once                                sync.Once
	object, oldObject, request, nsValue ref.Val
	authz, requestResource              ref.Val
}

// NewCELActivation returns the activation for a write.
func NewCELActivation(ctx context.Context, a *Attributes, cfg CELActivationConfig) *CELActivation {
	act := &CELActivation{ctx: ctx, attrs: a, cfg: cfg, shared: &celShared{}}
	act.params = celObjectValue(cfg.Params, schema.GroupVersionKind{})
	return act
}

// WithParams returns a copy that reads params and fresh variables, for
// the next binding of a policy; the request's converted objects are
// shared.
func (act *CELActivation) WithParams(params runtime.Object) *CELActivation {
	c := *act
	c.cfg.Params = params
	c.params = celObjectValue(params, schema.GroupVersionKind{})
	c.vars = nil
	return &c
}

// WithVariables returns a copy in which variables.<name> evaluates the
// named programs lazily, each at most once, in the copy's context.
// Programs may use the variables before them.
func (act *CELActivation) WithVariables(names []string, progs []*cel.Program) *CELActivation {
	c := *act
	c.vars = &celVariables{act: &c, names: names, progs: progs, done: make([]ref.Val, len(progs))}
	return &c
}

// VariablesCost is what the lazily evaluated variables have spent so far.
func (act *CELActivation) VariablesCost() int64 {
	if act.vars == nil {
		return 0
	}
	return act.vars.cost
}

func (act *CELActivation) convert() {
	s := act.shared
	s.once.Do(func() {
		a := act.attrs
		s.object = celObjectValue(a.Object, a.Kind)
		s.oldObject = celObjectValue(a.OldObject, a.Kind)
		if a.Operation == Delete {
			// A delete has no new object: upstream's object is null.
			s.object = types.NullValue
		}
		s.nsValue = celObjectValue(act.cfg.Namespace, schema.GroupVersionKind{Version: "v1", Kind: "Namespace"})
		s.request = types.DefaultTypeAdapter.NativeToValue(celRequest(a))
		az := celAuthorizer{authz: act.cfg.Authorizer}
		info := celUserInfo(a.User)
		s.authz = library.NewAuthorizerVal(info, az)
		s.requestResource = library.NewResourceAuthorizerVal(info, az, celResource{a})
	})
}

// ResolveName implements interpreter.Activation.
func (act *CELActivation) ResolveName(name string) (any, bool) {
	switch name {
	case "params":
		return act.params, true
	case "variables":
		if act.vars == nil {
			return types.NewStringInterfaceMap(types.DefaultTypeAdapter, map[string]any{}), true
		}
		return act.vars, true
	}
	act.convert()
	s := act.shared
	switch name {
	case "object":
		return s.object, true
	case "oldObject":
		return s.oldObject, true
	case "request":
		return s.request, true
	case "namespaceObject":
		return s.nsValue, true
	case "authorizer":
		return s.authz, true
	case "authorizer.requestResource":
		return s.requestResource, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (act *CELActivation) Parent() interpreter.Activation { return nil }

// celObjectValue converts an object to a CEL map as its JSON reads;
// nil is null. kind fills apiVersion and kind when the typed object
// leaves them empty, as objects in admission do.
func celObjectValue(obj runtime.Object, kind schema.GroupVersionKind) ref.Val {
	if obj == nil {
		return types.NullValue
	}
	var m map[string]any
	if u, ok := obj.(runtime.Unstructured); ok {
		m = u.UnstructuredContent()
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return types.NewErr("cannot convert object: %v", err)
		}
	}
	if _, ok := m["kind"]; !ok {
		av, k := obj.GetObjectKind().GroupVersionKind().ToAPIVersionAndKind()
		if k == "" {
			av, k = kind.ToAPIVersionAndKind()
		}
		if k != "" {
			m["apiVersion"], m["kind"] = av, k
		}
	}
	return types.DefaultTypeAdapter.NativeToValue(m)
}

// celRequest is the admission request as an AdmissionReview's request
// reads in JSON.
func celRequest(a *Attributes) map[string]any {
	u := map[string]any{}
	if a.User != nil {
		u["username"] = a.User.Name
		if a.User.UID != "" {
			u["uid"] = a.User.UID
		}
		if len(a.User.Groups) > 0 {
			u["groups"] = celStrings(a.User.Groups)
		}
		if len(a.User.Extra) > 0 {
			extra := map[string]any{}
			for k, v := range a.User.Extra {
				extra[k] = celStrings(v)
			}
			u["extra"] = extra
		}
	}
	kind := map[string]any{"group": a.Kind.Group, "version": a.Kind.Version, "kind": a.Kind.Kind}
	res := map[string]any{"group": a.Resource.Group, "version": a.Resource.Version, "resource": a.Resource.Resource}
	name := a.Name
	if name == "" && a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			name = m.GetName()
		}
	}
	r := map[string]any{
		"kind": kind, "resource": res, "requestKind": kind, "requestResource": res,
		"name": name, "namespace": a.Namespace, "operation": string(a.Operation),
		"userInfo": u, "dryRun": a.DryRun,
	}
	if a.Subresource != "" {
		r["subResource"], r["requestSubResource"] = a.Subresource, a.Subresource
	}
	return r
}

func celStrings(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// celVariables is the variables map: each entry is evaluated when first
// read, so an unused variable costs nothing and its error surfaces only
// where it is used, as upstream does.
type celVariables struct {
	act   *CELActivation
	names []string
	progs []*cel.Program
	done  []ref.Val
	cost  int64
}

var (
	_ traits.Mapper = (*celVariables)(nil)
	_ ref.Val       = (*celVariables)(nil)
)

func (v *celVariables) index(name string) int {
	for i, n := range v.names {
		if n == name {
			return i
		}
	}
	return -1
}

func (v *celVariables) eval(i int) ref.Val {
	if v.done[i] != nil {
		return v.done[i]
	}
	val, cost, err := v.progs[i].Eval(v.act.ctx, v.act)
	v.cost += cost
	if err != nil {
		val = types.WrapErr(err)
	}
	v.done[i] = val
	return val
}

func (v *celVariables) Find(key ref.Val) (ref.Val, bool) {
	s, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	i := v.index(string(s))
	if i < 0 {
		return nil, false
	}
	return v.eval(i), true
}

func (v *celVariables) Get(key ref.Val) ref.Val {
	if val, ok := v.Find(key); ok {
		return val
	}
	return types.NewErr("no such key: %v", key)
}

func (v *celVariables) Contains(key ref.Val) ref.Val {
	_, ok := key.(types.String)
	return types.Bool(ok && v.index(string(key.(types.String))) >= 0)
}

func (v *celVariables) Size() ref.Val { return types.Int(len(v.names)) }

func (v *celVariables) Iterator() traits.Iterator {
	keys := make([]any, len(v.names))
	for i, n := range v.names {
		keys[i] = n
	}
	return types.NewDynamicList(types.DefaultTypeAdapter, keys).(traits.Lister).Iterator()
}

func (v *celVariables) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("variables cannot be converted to %v", typeDesc)
}
func (v *celVariables) ConvertToType(t ref.Type) ref.Val {
	if t == types.MapType {
		return v
	}
	return types.NewErr("variables cannot be converted to %v", t)
}
func (v *celVariables) Equal(other ref.Val) ref.Val { return types.Bool(other == ref.Val(v)) }
func (v *celVariables) Type() ref.Type              { return types.MapType }
func (v *celVariables) Value() any                  { return v }

// celAuthorizer lets the authz library ask our authorizer.
type celAuthorizer struct{ authz auth.Authorizer }

func (c celAuthorizer) Authorize(_ context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if c.authz == nil {
		return authorizer.DecisionNoOpinion, "no authorizer", nil
	}
	var u *auth.User
	if info := a.GetUser(); info != nil {
		u = &auth.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	d, reason, err := c.authz.Authorize(auth.Attributes{
		User: u, Verb: a.GetVerb(), ResourceRequest: a.IsResourceRequest(),
		APIGroup: a.GetAPIGroup(), APIVersion: a.GetAPIVersion(), Resource: a.GetResource(),
		Subresource: a.GetSubresource(), Namespace: a.GetNamespace(), Name: a.GetName(), Path: a.GetPath(),
	})
	switch d {
	case auth.DecisionAllow:
		return authorizer.DecisionAllow, reason, err
	case auth.DecisionDeny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}

func celUserInfo(u *auth.User) user.Info {
	if u == nil {
		return &user.DefaultInfo{}
	}
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// celResource is the request's resource for authorizer.requestResource.
type celResource struct{ a *Attributes }

func (r celResource) GetName() string                          { return r.a.Name }
func (r celResource) GetNamespace() string                     { return r.a.Namespace }
func (r celResource) GetResource() schema.GroupVersionResource { return r.a.Resource }
func (r celResource) GetSubresource() string                   { return r.a.Subresource }
