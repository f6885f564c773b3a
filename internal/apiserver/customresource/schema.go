package customresource

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Schema is one version's openAPIV3Schema, ready to apply: the tree
// decoded once (defaults and enums parsed, patterns and CEL rules
// compiled). It is immutable and safe for concurrent use.
type Schema struct {
	root *node
}

// node is one schema node. The API type keeps properties as a map of
// values; a tree of pointers gives every node a stable identity to hang
// its compiled rules and pattern on.
type node struct {
	s *apiextensionsv1.JSONSchemaProps

	properties  map[string]*node
	additional  *node // additionalProperties' schema
	additionalF bool  // additionalProperties: false
	items       *node
	allOf       []*node
	anyOf       []*node
	oneOf       []*node
	not         *node

	preserve    bool // x-kubernetes-preserve-unknown-fields
	intOrString bool
	embedded    bool
	hasDefault  bool
	def         interface{}
	enum        []interface{}
	pattern     *regexp.Regexp
	rules       []*celRule
}

// NewSchema prepares s. A nil schema accepts and keeps anything. It fails
// when a default or enum is not JSON, a pattern is not a regular
// expression, or a CEL rule does not compile.
func NewSchema(s *apiextensionsv1.JSONSchemaProps) (*Schema, error) {
	if s == nil {
		s = &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}
	}
	var errs field.ErrorList
	root := build(s, field.NewPath("openAPIV3Schema"), &errs)
	if len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &Schema{root: root}, nil
}

// CompileErrors returns what NewSchema would refuse in s, as field errors
// under fldPath, for the validation of a CRD.
func CompileErrors(s *apiextensionsv1.JSONSchemaProps, fldPath *field.Path) field.ErrorList {
	if s == nil {
		return nil
	}
	var errs field.ErrorList
	build(s, fldPath, &errs)
	return errs
}

func build(s *apiextensionsv1.JSONSchemaProps, p *field.Path, errs *field.ErrorList) *node {
	n := &node{s: s, intOrString: s.XIntOrString, embedded: s.XEmbeddedResource,
		preserve: s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields}
	if s.Default != nil {
		if err := json.Unmarshal(s.Default.Raw, &n.def); err != nil {
			*errs = append(*errs, field.Invalid(p.Child("default"), string(s.Default.Raw), err.Error()))
		} else {
			n.def, n.hasDefault = normalize(n.def), true
		}
	}
	for i, e := range s.Enum {
		var v interface{}
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			*errs = append(*errs, field.Invalid(p.Child("enum").Index(i), string(e.Raw), err.Error()))
			continue
		}
		n.enum = append(n.enum, normalize(v))
	}
	if s.Pattern != "" {
		re, err := regexp.Compile(s.Pattern)
		if err != nil {
			*errs = append(*errs, field.Invalid(p.Child("pattern"), s.Pattern, err.Error()))
		}
		n.pattern = re
	}
	for i, v := range s.XValidations {
		r, err := compileRule(v)
		if err != nil {
			*errs = append(*errs, field.Invalid(p.Child("x-kubernetes-validations").Index(i).Child("rule"), v.Rule, err.Error()))
			continue
		}
		n.rules = append(n.rules, r)
	}
	if len(s.Properties) > 0 {
		n.properties = make(map[string]*node, len(s.Properties))
		for _, name := range sortedKeys(s.Properties) {
			prop := s.Properties[name]
			n.properties[name] = build(&prop, p.Child("properties").Key(name), errs)
		}
	}
	if a := s.AdditionalProperties; a != nil {
		if a.Schema != nil {
			n.additional = build(a.Schema, p.Child("additionalProperties"), errs)
		} else if !a.Allows {
			n.additionalF = true
		} else {
			n.additional = &node{s: &apiextensionsv1.JSONSchemaProps{}, preserve: true}
		}
	}
	if s.Items != nil && s.Items.Schema != nil {
		n.items = build(s.Items.Schema, p.Child("items"), errs)
	}
	for i := range s.AllOf {
		n.allOf = append(n.allOf, build(&s.AllOf[i], p.Child("allOf").Index(i), errs))
	}
	for i := range s.AnyOf {
		n.anyOf = append(n.anyOf, build(&s.AnyOf[i], p.Child("anyOf").Index(i), errs))
	}
	for i := range s.OneOf {
		n.oneOf = append(n.oneOf, build(&s.OneOf[i], p.Child("oneOf").Index(i), errs))
	}
	if s.Not != nil {
		n.not = build(s.Not, p.Child("not"), errs)
	}
	return n
}

// normalize turns encoding/json's float64 integers into int64, the form
// unstructured objects hold, so defaults and enums compare equal to them.
func normalize(v interface{}) interface{} {
	switch t := v.(type) {
	case float64:
		if t == float64(int64(t)) && t < 1<<53 && t > -(1<<53) {
			return int64(t)
		}
	case map[string]interface{}:
		for k, e := range t {
			t[k] = normalize(e)
		}
	case []interface{}:
		for i, e := range t {
			t[i] = normalize(e)
		}
	}
	return v
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Default sets every missing field that has a default, top-down, so a
// defaulted object's own fields are defaulted in turn. A null in a field
// that is not nullable and has a default is replaced by the default, as
// upstream does.
func (s *Schema) Default(obj map[string]interface{}) { defaultNode(s.root, obj) }

func defaultNode(n *node, v interface{}) {
	if n == nil {
		return
	}
	switch t := v.(type) {
	case map[string]interface{}:
		for _, name := range sortedKeys(n.properties) {
			prop := n.properties[name]
			cur, ok := t[name]
			if prop.hasDefault && (!ok || (cur == nil && !prop.s.Nullable)) {
				t[name] = runtime.DeepCopyJSONValue(prop.def)
			}
		}
		for name, e := range t {
			if prop, ok := n.properties[name]; ok {
				defaultNode(prop, e)
			} else if n.additional != nil {
				defaultNode(n.additional, e)
			}
		}
	case []interface{}:
		for _, e := range t {
			defaultNode(n.items, e)
		}
	}
}

// Prune removes fields the schema does not declare and returns their
// paths ("spec.foo", "spec.items[0].bar"), sorted. At the root and in
// embedded resources apiVersion, kind and metadata are always kept.
func (s *Schema) Prune(obj map[string]interface{}) []string {
	var pruned []string
	pruneNode(s.root, obj, "", true, &pruned)
	sort.Strings(pruned)
	return pruned
}

func pruneNode(n *node, v interface{}, path string, isObjectRoot bool, pruned *[]string) {
	if n == nil || n.intOrString && n.s.Type == "" {
		return
	}
	switch t := v.(type) {
	case map[string]interface{}:
		for name, e := range t {
			sub := joinPath(path, name)
			if isObjectRoot && (name == "apiVersion" || name == "kind" || name == "metadata") {
				continue
			}
			if prop, ok := n.properties[name]; ok {
				pruneNode(prop, e, sub, prop.embedded, pruned)
				continue
			}
			if n.additional != nil {
				pruneNode(n.additional, e, sub, n.additional.embedded, pruned)
				continue
			}
			if n.preserve {
				continue
			}
			delete(t, name)
			*pruned = append(*pruned, sub)
		}
	case []interface{}:
		for i, e := range t {
			pruneNode(n.items, e, fmt.Sprintf("%s[%d]", path, i), n.items != nil && n.items.embedded, pruned)
		}
	}
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
