package customresource

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/client-go/util/jsonpath"
)

// Columns renders a version's additionalPrinterColumns after NAME. Without
// any, a custom resource prints NAME and AGE; with some, only those (a CRD
// that wants AGE too declares it), as upstream.
type Columns struct {
	Defs  []metav1.TableColumnDefinition
	paths []*jsonpath.JSONPath
	types []string
}

var nameDescription = metav1.ObjectMeta{}.SwaggerDoc()["name"]

// NewColumns compiles the column paths; a column whose path does not
// parse prints nothing (the CRD's validation refuses such paths).
func NewColumns(cols []apiextensionsv1.CustomResourceColumnDefinition) *Columns {
	if len(cols) == 0 {
		cols = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]}}
	}
	c := &Columns{Defs: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: nameDescription}}}
	for _, col := range cols {
		desc := col.Description
		if desc == "" {
			desc = "Custom resource definition column (in JSONPath format): " + col.JSONPath
		}
		c.Defs = append(c.Defs, metav1.TableColumnDefinition{Name: col.Name, Type: col.Type, Format: col.Format,
			Description: desc, Priority: col.Priority})
		jp := jsonpath.New(col.Name).AllowMissingKeys(true)
		if err := jp.Parse("{" + col.JSONPath + "}"); err != nil {
			jp = nil
		}
		c.paths = append(c.paths, jp)
		c.types = append(c.types, col.Type)
	}
	return c
}

// Row returns the cells of one object: its name, then one per column (nil
// when the path finds nothing).
func (c *Columns) Row(obj map[string]interface{}, name string) []interface{} {
	cells := []interface{}{name}
	for i, jp := range c.paths {
		cells = append(cells, cell(jp, c.types[i], obj))
	}
	return cells
}

func cell(jp *jsonpath.JSONPath, typ string, obj map[string]interface{}) interface{} {
	if jp == nil {
		return nil
	}
	results, err := jp.FindResults(obj)
	if err != nil || len(results) == 0 || len(results[0]) == 0 {
		return nil
	}
	v := results[0][0].Interface()
	switch typ {
	case "string":
		var buf bytes.Buffer
		if err := jp.PrintResults(&buf, []reflect.Value{reflect.ValueOf(v)}); err != nil {
			return nil
		}
		return buf.String()
	case "integer":
		switch t := v.(type) {
		case int64:
			return t
		case float64:
			return int64(t)
		}
	case "number":
		switch t := v.(type) {
		case int64, float64:
			return t
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return "<invalid>"
			}
			return duration.HumanDuration(time.Since(t))
		}
	}
	return nil
}

// Path reads a simple dotted path (".spec.replicas") in obj.
func Path(obj map[string]interface{}, path string) (interface{}, bool) {
	var cur interface{} = obj
	for _, part := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		m, ok := cur.(map[string]interface{})
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// SetPath writes v at a simple dotted path, creating objects on the way.
func SetPath(obj map[string]interface{}, path string, v interface{}) error {
	parts := strings.Split(strings.TrimPrefix(path, "."), ".")
	cur := obj
	for _, part := range parts[:len(parts)-1] {
		next, ok := cur[part]
		if !ok || next == nil {
			m := map[string]interface{}{}
			cur[part] = m
			cur = m
			continue
		}
		m, ok := next.(map[string]interface{})
		if !ok {
			return fmt.Errorf("%s is not an object", part)
		}
		cur = m
	}
	cur[parts[len(parts)-1]] = v
	return nil
}
