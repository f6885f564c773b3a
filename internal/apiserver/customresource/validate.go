package customresource

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/mail"
	"reflect"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Validate checks obj (and, on updates, the transition from old, which
// may be nil) against the schema: value rules first, then the CEL rules
// of every node whose value passed them. apiVersion, kind and metadata at
// the root are the server's to check and skipped here.
func (s *Schema) Validate(obj, old map[string]interface{}) field.ErrorList {
	var errs field.ErrorList
	root := s.root
	for _, name := range sortedKeys(root.properties) {
		if name == "apiVersion" || name == "kind" || name == "metadata" {
			continue
		}
		p := field.NewPath(name)
		v, ok := obj[name]
		if !ok {
			continue
		}
		var ov interface{}
		hasOld := false
		if old != nil {
			ov, hasOld = old[name]
		}
		errs = append(errs, validateNode(root.properties[name], v, ov, hasOld, p)...)
	}
	for _, name := range root.s.Required {
		if name == "apiVersion" || name == "kind" || name == "metadata" {
			continue
		}
		if _, ok := obj[name]; !ok {
			errs = append(errs, field.Required(field.NewPath(name), ""))
		}
	}
	if len(errs) == 0 {
		errs = append(errs, runRules(root, obj, old, old != nil, nil)...)
	}
	return errs
}

// jsonType names a value as JSON schema does, for messages.
func jsonType(v interface{}) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int64, int32, int:
		return "integer"
	case float64, float32:
		return "number"
	case map[string]interface{}:
		return "object"
	case []interface{}:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

func typeMatches(want string, v interface{}) bool {
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "integer":
		switch t := v.(type) {
		case int64:
			return true
		case float64:
			return t == math.Trunc(t)
		}
		return false
	case "number":
		switch v.(type) {
		case int64, float64:
			return true
		}
		return false
	case "object":
		_, ok := v.(map[string]interface{})
		return ok
	case "array":
		_, ok := v.([]interface{})
		return ok
	}
	return true
}

// validateNode checks one value and everything below it. Upstream's
// messages name the path in the message too: "spec.replicas in body must
// be of type integer: \"string\"".
func validateNode(n *node, v, old interface{}, hasOld bool, p *field.Path) field.ErrorList {
	if n == nil {
		return nil
	}
	s := n.s
	if v == nil {
		if s.Nullable || (s.Type == "" && !n.intOrString) {
			return nil
		}
		want := s.Type
		if n.intOrString {
			want = "integer,string"
		}
		return field.ErrorList{field.Invalid(p, "null", fmt.Sprintf("%s in body must be of type %s: \"null\"", p, want))}
	}
	if n.intOrString {
		switch v.(type) {
		case int64, string:
		case float64:
			if !typeMatches("integer", v) {
				return field.ErrorList{field.Invalid(p, jsonType(v), fmt.Sprintf("%s in body must be of type integer,string: %q", p, jsonType(v)))}
			}
		default:
			return field.ErrorList{field.Invalid(p, jsonType(v), fmt.Sprintf("%s in body must be of type integer,string: %q", p, jsonType(v)))}
		}
	} else if s.Type != "" && !typeMatches(s.Type, v) {
		return field.ErrorList{field.Invalid(p, jsonType(v), fmt.Sprintf("%s in body must be of type %s: %q", p, s.Type, jsonType(v)))}
	}
	var errs field.ErrorList
	if len(n.enum) > 0 {
		found := false
		for _, e := range n.enum {
			if reflect.DeepEqual(e, v) {
				found = true
				break
			}
		}
		if !found {
			allowed := make([]string, len(n.enum))
			for i, e := range n.enum {
				allowed[i] = fmt.Sprint(e)
			}
			errs = append(errs, field.NotSupported(p, v, allowed))
		}
	}
	switch t := v.(type) {
	case string:
		errs = append(errs, validateString(n, t, p)...)
	case int64:
		errs = append(errs, validateNumber(n, float64(t), v, p)...)
	case float64:
		errs = append(errs, validateNumber(n, t, v, p)...)
	case map[string]interface{}:
		errs = append(errs, validateObject(n, t, old, hasOld, p)...)
	case []interface{}:
		errs = append(errs, validateArray(n, t, old, hasOld, p)...)
	}
	errs = append(errs, validateJunctors(n, v, p)...)
	return errs
}

func validateString(n *node, v string, p *field.Path) field.ErrorList {
	s := n.s
	var errs field.ErrorList
	length := int64(utf8.RuneCountInString(v))
	if s.MaxLength != nil && length > *s.MaxLength {
		errs = append(errs, field.TooLong(p, v, int(*s.MaxLength)))
	}
	if s.MinLength != nil && length < *s.MinLength {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be at least %d chars long", p, *s.MinLength)))
	}
	if n.pattern != nil && !n.pattern.MatchString(v) {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should match '%s'", p, s.Pattern)))
	}
	if s.Format != "" && !formatMatches(s.Format, v) {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body must be of type %s: %q", p, s.Format, v)))
	}
	return errs
}

var (
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
	hostnameRE = regexp.MustCompile(`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,62})?)*$`)
)

// formatMatches checks the formats Kubernetes validates; others (and
// int32/int64 on strings) are accepted, as upstream does.
func formatMatches(format, v string) bool {
	switch format {
	case "date-time", "datetime":
		for _, layout := range []string{time.RFC3339Nano, time.RFC3339, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05"} {
			if _, err := time.Parse(layout, v); err == nil {
				return true
			}
		}
		return false
	case "date":
		_, err := time.Parse("2006-01-02", v)
		return err == nil
	case "uuid":
		return uuidRE.MatchString(v)
	case "byte":
		_, err := base64.StdEncoding.DecodeString(v)
		return err == nil
	case "email":
		_, err := mail.ParseAddress(v)
		return err == nil
	case "hostname":
		return len(v) <= 255 && hostnameRE.MatchString(v)
	case "duration":
		_, err := time.ParseDuration(v)
		return err == nil
	}
	return true
}

func validateNumber(n *node, f float64, v interface{}, p *field.Path) field.ErrorList {
	s := n.s
	var errs field.ErrorList
	if s.Maximum != nil {
		if s.ExclusiveMaximum && f >= *s.Maximum {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be less than %v", p, *s.Maximum)))
		} else if !s.ExclusiveMaximum && f > *s.Maximum {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be less than or equal to %v", p, *s.Maximum)))
		}
	}
	if s.Minimum != nil {
		if s.ExclusiveMinimum && f <= *s.Minimum {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be greater than %v", p, *s.Minimum)))
		} else if !s.ExclusiveMinimum && f < *s.Minimum {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be greater than or equal to %v", p, *s.Minimum)))
		}
	}
	if s.MultipleOf != nil && *s.MultipleOf != 0 {
		if q := f / *s.MultipleOf; q != math.Trunc(q) {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body should be a multiple of %v", p, *s.MultipleOf)))
		}
	}
	if s.Format == "int32" {
		if f > math.MaxInt32 || f < math.MinInt32 {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body must be of type int32: %q", p, fmt.Sprint(v))))
		}
	}
	return errs
}

func validateObject(n *node, obj map[string]interface{}, old interface{}, hasOld bool, p *field.Path) field.ErrorList {
	s := n.s
	var errs field.ErrorList
	oldMap, _ := old.(map[string]interface{})
	if s.MaxProperties != nil && int64(len(obj)) > *s.MaxProperties {
		errs = append(errs, field.TooMany(p, len(obj), int(*s.MaxProperties)))
	}
	if s.MinProperties != nil && int64(len(obj)) < *s.MinProperties {
		errs = append(errs, field.Invalid(p, len(obj), fmt.Sprintf("%s in body should have at least %d properties", p, *s.MinProperties)))
	}
	for _, name := range s.Required {
		if _, ok := obj[name]; !ok {
			errs = append(errs, field.Required(p.Child(name), ""))
		}
	}
	if n.embedded {
		for _, name := range []string{"apiVersion", "kind"} {
			if v, ok := obj[name].(string); !ok || v == "" {
				errs = append(errs, field.Required(p.Child(name), "must not be empty"))
			}
		}
	}
	for _, name := range sortedKeys(obj) {
		v := obj[name]
		sub := n.properties[name]
		if sub == nil {
			if n.additionalF && !n.preserve {
				errs = append(errs, field.Invalid(p.Child(name), name, fmt.Sprintf("%s in body is a forbidden property", p.Child(name))))
				continue
			}
			sub = n.additional
		}
		if sub == nil || (n.embedded && (name == "apiVersion" || name == "kind" || name == "metadata")) {
			continue
		}
		ov, ok := oldMap[name]
		errs = append(errs, validateNode(sub, v, ov, hasOld && ok, p.Child(name))...)
	}
	return errs
}

func validateArray(n *node, list []interface{}, old interface{}, hasOld bool, p *field.Path) field.ErrorList {
	s := n.s
	var errs field.ErrorList
	if s.MaxItems != nil && int64(len(list)) > *s.MaxItems {
		errs = append(errs, field.TooMany(p, len(list), int(*s.MaxItems)))
	}
	if s.MinItems != nil && int64(len(list)) < *s.MinItems {
		errs = append(errs, field.Invalid(p, len(list), fmt.Sprintf("%s in body should have at least %d items", p, *s.MinItems)))
	}
	if s.XListType != nil && *s.XListType == "set" {
		for i := range list {
			for j := 0; j < i; j++ {
				if reflect.DeepEqual(list[i], list[j]) {
					errs = append(errs, field.Duplicate(p.Index(i), list[i]))
					break
				}
			}
		}
	}
	if s.XListType != nil && *s.XListType == "map" && len(s.XListMapKeys) > 0 {
		seen := map[string]int{}
		for i, e := range list {
			m, _ := e.(map[string]interface{})
			var key []string
			for _, k := range s.XListMapKeys {
				key = append(key, fmt.Sprintf("%s=%v", k, m[k]))
			}
			k := strings.Join(key, ",")
			if _, dup := seen[k]; dup {
				errs = append(errs, field.Duplicate(p.Index(i), e))
			}
			seen[k] = i
		}
	}
	// Old items correlate by index only for atomic lists in this
	// implementation: transition rules on list items see oldSelf when the
	// same index existed before.
	oldList, _ := old.([]interface{})
	for i, e := range list {
		var ov interface{}
		ok := i < len(oldList)
		if ok {
			ov = oldList[i]
		}
		errs = append(errs, validateNode(n.items, e, ov, hasOld && ok, p.Index(i))...)
	}
	return errs
}

// validateJunctors applies allOf, anyOf, oneOf and not. Their branches only
// carry value validations (the CRD's schema is structural), so a branch
// passes when validating against it finds nothing.
func validateJunctors(n *node, v interface{}, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, b := range n.allOf {
		errs = append(errs, validateBranch(b, v, p)...)
	}
	if len(n.anyOf) > 0 {
		ok := false
		for _, b := range n.anyOf {
			if len(validateBranch(b, v, p)) == 0 {
				ok = true
				break
			}
		}
		if !ok {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body must validate at least one schema (anyOf)", p)))
		}
	}
	if len(n.oneOf) > 0 {
		passed := 0
		for _, b := range n.oneOf {
			if len(validateBranch(b, v, p)) == 0 {
				passed++
			}
		}
		if passed != 1 {
			errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body must validate one and only one schema (oneOf)", p)))
		}
	}
	if n.not != nil && len(validateBranch(n.not, v, p)) == 0 {
		errs = append(errs, field.Invalid(p, v, fmt.Sprintf("%s in body must not validate the schema (not)", p)))
	}
	return errs
}

func validateBranch(b *node, v interface{}, p *field.Path) field.ErrorList {
	return validateNode(b, v, nil, false, p)
}
