package openapi

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/validation/spec"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// schemaAt follows a property path from a definition, through references
// (wrapped in allOf in v3) and array items.
func schemaAt(t *testing.T, defs map[string]*spec.Schema, model string, path ...string) *spec.Schema {
	t.Helper()
	s, ok := defs[model]
	if !ok {
		t.Fatalf("no schema %s", model)
	}
	deref := func(s *spec.Schema) *spec.Schema {
		ref := s.Ref.String()
		if ref == "" && len(s.AllOf) == 1 {
			ref = s.AllOf[0].Ref.String()
		}
		if ref == "" {
			return s
		}
		target, ok := defs[strings.TrimPrefix(ref, refPrefixV3)]
		if !ok {
			t.Fatalf("dangling reference %s", ref)
		}
		return target
	}
	for _, p := range path {
		s = deref(s)
		if s.Items != nil && s.Items.Schema != nil {
			s = deref(s.Items.Schema)
		}
		prop, ok := s.Properties[p]
		if !ok {
			t.Fatalf("%s has no property %s", model, strings.Join(path, "."))
		}
		s = &prop
	}
	return s
}

func TestSchemas(t *testing.T) {
	defs, err := Schemas()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("every kind has its group-version-kind", func(t *testing.T) {
		for gvk, typ := range clientgoscheme.Scheme.AllKnownTypes() {
			if gvk.Version == "__internal" {
				continue
			}
			name := modelName(typ)
			s, ok := defs[name]
			if !ok {
				// Only scheme types with no definition at all may be
				// missing: internal helper types of the scheme.
				if _, generated := GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })[name]; generated {
					t.Errorf("%v: schema %s missing", gvk, name)
				}
				continue
			}
			if !slices.Contains(gvksOf(t, s.Extensions), gvk) {
				t.Errorf("%s does not list %v", name, gvk)
			}
		}
	})
	t.Run("containers merge by name", func(t *testing.T) {
		c := schemaAt(t, defs, "io.k8s.api.apps.v1.Deployment", "spec", "template", "spec", "containers")
		want := map[string]interface{}{
			"x-kubernetes-list-type":       "map",
			"x-kubernetes-list-map-keys":   []interface{}{"name"},
			"x-kubernetes-patch-merge-key": "name",
			"x-kubernetes-patch-strategy":  "merge",
		}
		for k, v := range want {
			if got := normalize(c.Extensions[k]); !reflect.DeepEqual(got, v) {
				t.Errorf("%s = %#v, want %#v", k, got, v)
			}
		}
	})
	t.Run("strategy retains keys", func(t *testing.T) {
		s := schemaAt(t, defs, "io.k8s.api.apps.v1.Deployment", "spec", "strategy")
		if s.Extensions["x-kubernetes-patch-strategy"] != "retainKeys" {
			t.Errorf("x-kubernetes-patch-strategy = %v", s.Extensions["x-kubernetes-patch-strategy"])
		}
		if !strings.HasPrefix(s.Description, "The deployment strategy to use to replace existing pods with new ones.") {
			t.Errorf("description %q", s.Description)
		}
	})
	t.Run("int-or-string", func(t *testing.T) {
		s := defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
		if s == nil || s.Format != "int-or-string" || len(s.OneOf) != 2 {
			t.Errorf("IntOrString = %+v", s)
		}
		maxSurge := schemaAt(t, defs, "io.k8s.api.apps.v1.Deployment", "spec", "strategy", "rollingUpdate", "maxSurge")
		if len(maxSurge.AllOf) != 1 || maxSurge.AllOf[0].Ref.String() != refPrefixV3+"io.k8s.apimachinery.pkg.util.intstr.IntOrString" {
			t.Errorf("maxSurge does not refer to IntOrString: %+v", maxSurge)
		}
	})
	t.Run("quantity", func(t *testing.T) {
		// As upstream: a string or a number, no format.
		s := defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]
		if s == nil || len(s.OneOf) != 2 || s.OneOf[0].Type[0] != "string" || s.OneOf[1].Type[0] != "number" {
			t.Errorf("Quantity = %+v", s)
		}
	})
	t.Run("atomic and set lists", func(t *testing.T) {
		finalizers := schemaAt(t, defs, "io.k8s.api.core.v1.Pod", "metadata", "finalizers")
		if finalizers.Extensions["x-kubernetes-list-type"] != "set" {
			t.Errorf("metadata.finalizers list type %v", finalizers.Extensions["x-kubernetes-list-type"])
		}
		command := schemaAt(t, defs, "io.k8s.api.core.v1.Pod", "spec", "containers", "command")
		if command.Extensions["x-kubernetes-list-type"] != "atomic" {
			t.Errorf("containers[].command list type %v", command.Extensions["x-kubernetes-list-type"])
		}
	})
}

// normalize turns []string into []interface{} so extensions compare the
// same whether they came from generated code or JSON.
func normalize(v interface{}) interface{} {
	if ss, ok := v.([]string); ok {
		out := make([]interface{}, len(ss))
		for i, s := range ss {
			out[i] = s
		}
		return out
	}
	return v
}

// TestTypeConverter converts a Deployment the way server-side apply will,
// and checks that the containers list is keyed by name: the field set
// names a container by its key, not by its index.
func TestTypeConverter(t *testing.T) {
	tc, err := TypeConverter()
	if err != nil {
		t.Fatal(err)
	}
	d := &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "nginx"}, {Name: "sidecar", Image: "envoy"}},
		}}},
	}
	typed, err := tc.ObjectToTyped(d)
	if err != nil {
		t.Fatal(err)
	}
	set, err := typed.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	want := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
		fieldpath.KeyByFields("name", "sidecar"), "image")
	if !set.Has(want) {
		t.Errorf("field set lacks %s:\n%s", want, set)
	}
	if _, err := tc.ObjectToTyped(&corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}); err != nil {
		t.Errorf("Pod: %v", err)
	}
}

// TestGeneratedFileIsCurrent checks that zz_generated.openapi.go was
// generated from the k8s.io/api and kube-openapi this module builds with.
// The cheap check, always run: every struct the scheme reaches has the
// same JSON properties in Go as in its generated definition, and the
// go:generate directive names the kube-openapi version of go.mod. With
// RUDDER_CHECK_GENERATED=1 the test reruns the generator (about half a
// minute) and compares the bytes.
func TestGeneratedFileIsCurrent(t *testing.T) {
	const regenerate = "run: go generate ./internal/apiserver/openapi/"
	t.Run("generator version", func(t *testing.T) {
		directive := generateDirective(t)
		gomod, err := os.ReadFile("../../../go.mod")
		if err != nil {
			t.Fatal(err)
		}
		m := regexp.MustCompile(`(?m)^\s*k8s.io/kube-openapi (\S+)`).FindSubmatch(gomod)
		if m == nil {
			t.Fatal("go.mod does not require k8s.io/kube-openapi")
		}
		if !strings.Contains(directive, "openapi-gen@"+string(m[1])+" ") {
			t.Errorf("go:generate runs a different openapi-gen than go.mod's %s; update doc.go and %s", m[1], regenerate)
		}
	})
	t.Run("properties match the Go types", func(t *testing.T) {
		defs := GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
		seen := map[reflect.Type]bool{}
		var walk func(reflect.Type)
		walk = func(t reflect.Type) {
			for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
				t = t.Elem()
			}
			if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() == "" {
				return
			}
			seen[t] = true
			for _, f := range jsonFields(t) {
				walk(f.Type)
			}
		}
		for _, typ := range clientgoscheme.Scheme.AllKnownTypes() {
			walk(typ)
		}
		checked := 0
		for typ := range seen {
			def, ok := defs[modelName(typ)]
			if !ok || len(def.Schema.Properties) == 0 {
				continue // not generated, or a custom schema (Time, Quantity, ...)
			}
			var goNames, schemaNames []string
			for _, f := range jsonFields(typ) {
				goNames = append(goNames, f.name)
			}
			for name := range def.Schema.Properties {
				schemaNames = append(schemaNames, name)
			}
			sort.Strings(goNames)
			sort.Strings(schemaNames)
			if !reflect.DeepEqual(goNames, schemaNames) {
				t.Errorf("%s: Go fields %v, generated %v; %s", modelName(typ), goNames, schemaNames, regenerate)
			}
			checked++
		}
		if checked < 500 {
			t.Errorf("only %d definitions checked", checked)
		}
	})
	t.Run("regenerate", func(t *testing.T) {
		if os.Getenv("RUDDER_CHECK_GENERATED") == "" {
			t.Skip("set RUDDER_CHECK_GENERATED=1 to rerun openapi-gen")
		}
		dir := t.TempDir()
		args := strings.Fields(strings.TrimPrefix(generateDirective(t), "//go:generate "))
		for i, a := range args {
			if a == "--output-dir" {
				args[i+1] = dir
			}
		}
		cmd := exec.Command(args[0], args[1:]...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		got, err := os.ReadFile(filepath.Join(dir, "zz_generated.openapi.go"))
		if err != nil {
			t.Fatal(err)
		}
		have, err := os.ReadFile("zz_generated.openapi.go")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, have) {
			t.Errorf("zz_generated.openapi.go is stale; %s", regenerate)
		}
	})
}

func generateDirective(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^//go:generate .*openapi-gen.*$`).Find(src)
	if line == nil {
		t.Fatal("doc.go has no go:generate directive for openapi-gen")
	}
	return string(line)
}

type jsonField struct {
	name string
	reflect.StructField
}

// jsonFields lists the properties openapi-gen makes of a struct: a field
// is named by its json tag, or by its Go name when it has none; a tag
// ",inline" flattens the member's own fields; "-" and an empty name skip.
func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag, tagged := f.Tag.Lookup("json")
		parts := strings.Split(tag, ",")
		if tagged && len(parts) > 1 && parts[1] == "inline" {
			inner := f.Type
			if inner.Kind() == reflect.Pointer {
				inner = inner.Elem()
			}
			out = append(out, jsonFields(inner)...)
			continue
		}
		name := f.Name
		if tagged {
			name = parts[0]
		}
		if name == "" || name == "-" {
			continue
		}
		out = append(out, jsonField{name: name, StructField: f})
	}
	return out
}
