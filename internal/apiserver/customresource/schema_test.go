package customresource

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// widgetSchema is the schema the tests share, written as a CRD author
// would.
const widgetSchema = `
type: object
properties:
  spec:
    type: object
    required: [size]
    x-kubernetes-validations:
    - rule: "self.replicas <= self.maxReplicas"
      message: "replicas must not exceed maxReplicas"
    - rule: "!has(oldSelf.size) || self.size >= oldSelf.size"
      message: "size may not shrink"
    properties:
      size:
        type: integer
        minimum: 1
        maximum: 10
      replicas:
        type: integer
        default: 1
      maxReplicas:
        type: integer
        default: 5
      color:
        type: string
        enum: [red, green]
      name:
        type: string
        pattern: "^[a-z]+$"
        maxLength: 8
      port:
        x-kubernetes-int-or-string: true
      created:
        type: string
        format: date-time
      tags:
        type: array
        maxItems: 2
        items:
          type: string
      note:
        type: string
        nullable: true
      extra:
        type: object
        x-kubernetes-preserve-unknown-fields: true
      labels:
        type: object
        additionalProperties:
          type: string
      template:
        type: object
        x-kubernetes-embedded-resource: true
        x-kubernetes-preserve-unknown-fields: true
  status:
    type: object
    properties:
      replicas:
        type: integer
`

func mustSchema(t *testing.T, doc string) *Schema {
	t.Helper()
	var props apiextensionsv1.JSONSchemaProps
	if err := yaml.Unmarshal([]byte(doc), &props); err != nil {
		t.Fatal(err)
	}
	s, err := NewSchema(&props)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func obj(t *testing.T, doc string) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return normalize(m).(map[string]interface{})
}

func TestValidate(t *testing.T) {
	s := mustSchema(t, widgetSchema)
	for _, tc := range []struct {
		name, obj, old string
		want           string // substring of the joined errors; "" means valid
	}{
		{name: "valid", obj: "spec: {size: 3, replicas: 1, maxReplicas: 2}"},
		{name: "required", obj: "spec: {replicas: 1, maxReplicas: 2}", want: "spec.size: Required value"},
		{name: "wrong type", obj: "spec: {size: three}", want: `spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"`},
		{name: "maximum", obj: "spec: {size: 11}", want: "spec.size in body should be less than or equal to 10"},
		{name: "minimum", obj: "spec: {size: 0}", want: "spec.size in body should be greater than or equal to 1"},
		{name: "enum", obj: "spec: {size: 1, color: blue}", want: `spec.color: Unsupported value: "blue": supported values: "red", "green"`},
		{name: "pattern", obj: "spec: {size: 1, name: ABC}", want: "spec.name in body should match '^[a-z]+$'"},
		{name: "max length", obj: "spec: {size: 1, name: abcdefghij}", want: "spec.name: Too long"},
		{name: "int-or-string int", obj: "spec: {size: 1, port: 80}"},
		{name: "int-or-string string", obj: "spec: {size: 1, port: http}"},
		{name: "int-or-string bool", obj: "spec: {size: 1, port: true}", want: "must be of type integer,string"},
		{name: "format", obj: "spec: {size: 1, created: yesterday}", want: `spec.created in body must be of type date-time: "yesterday"`},
		{name: "format ok", obj: "spec: {size: 1, created: '2024-01-02T03:04:05Z'}"},
		{name: "max items", obj: "spec: {size: 1, tags: [a, b, c]}", want: "spec.tags: Too many: 3: must have at most 2 items"},
		{name: "nullable", obj: "spec: {size: 1, note: null}"},
		{name: "not nullable", obj: "spec: {size: null}", want: `spec.size in body must be of type integer: "null"`},
		{name: "additional properties", obj: "spec: {size: 1, labels: {a: 1}}", want: `spec.labels.a in body must be of type string: "integer"`},
		{name: "embedded resource needs kind", obj: "spec: {size: 1, template: {apiVersion: v1}}", want: "spec.template.kind: Required value"},
		{name: "cel rule", obj: "spec: {size: 1, replicas: 6, maxReplicas: 5}", want: `spec: Invalid value: "object": replicas must not exceed maxReplicas`},
		{name: "transition rule", obj: "spec: {size: 1, replicas: 1, maxReplicas: 5}", old: "spec: {size: 2, replicas: 1, maxReplicas: 5}", want: "size may not shrink"},
		{name: "transition rule passes", obj: "spec: {size: 3, replicas: 1, maxReplicas: 5}", old: "spec: {size: 2, replicas: 1, maxReplicas: 5}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// As on the server: defaults first, then validation.
			var old map[string]interface{}
			if tc.old != "" {
				old = obj(t, tc.old)
				s.Default(old)
			}
			o := obj(t, tc.obj)
			s.Default(o)
			errs := s.Validate(o, old)
			got := errs.ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}

func TestPruneAndDefault(t *testing.T) {
	s := mustSchema(t, widgetSchema)
	o := obj(t, `
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
spec:
  size: 2
  bogus: 1
  extra: {anything: [1, 2]}
  template: {apiVersion: v1, kind: Pod, spec: {containers: []}}
status: {replicas: 1, phase: Running}
unknownTop: x
`)
	pruned := s.Prune(o)
	if want := []string{"spec.bogus", "status.phase", "unknownTop"}; !reflect.DeepEqual(pruned, want) {
		t.Errorf("pruned %v, want %v", pruned, want)
	}
	s.Default(o)
	got, _ := json.Marshal(o)
	want := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"extra":{"anything":[1,2]},"maxReplicas":5,"replicas":1,"size":2,"template":{"apiVersion":"v1","kind":"Pod","spec":{"containers":[]}}},"status":{"replicas":1}}`
	if string(got) != want {
		t.Errorf("after prune and default:\n got %s\nwant %s", got, want)
	}
}

func TestCompileErrors(t *testing.T) {
	var props apiextensionsv1.JSONSchemaProps
	yaml.Unmarshal([]byte(`
type: object
x-kubernetes-validations:
- rule: "self.a +"
`), &props)
	errs := CompileErrors(&props, nil)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "compilation failed") {
		t.Fatalf("errors %v, want one compilation failure", errs)
	}
}

func TestColumns(t *testing.T) {
	cols := NewColumns([]apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Size", Type: "integer", JSONPath: ".spec.size"},
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Ready", Type: "boolean", JSONPath: ".status.ready"},
	})
	row := cols.Row(obj(t, "spec: {size: 3, color: red}\nstatus: {ready: true}"), "w")
	if want := []interface{}{"w", int64(3), "red", true}; !reflect.DeepEqual(row, want) {
		t.Errorf("row %#v, want %#v", row, want)
	}
	if len(cols.Defs) != 4 || cols.Defs[0].Name != "Name" {
		t.Errorf("columns %v", cols.Defs)
	}
	// Without columns a custom resource prints its age.
	if d := NewColumns(nil).Defs; len(d) != 2 || d[1].Name != "Age" || d[1].Type != "date" {
		t.Errorf("default columns %v", d)
	}
}
