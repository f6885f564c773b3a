package registry

import (
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// crdYAML is a valid definition, as a user writes it; cases edit it.
const crdYAML = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
    shortNames: [wg]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
      scale:
        specReplicasPath: .spec.replicas
        statusReplicasPath: .status.replicas
    additionalPrinterColumns:
    - name: Size
      type: integer
      jsonPath: .spec.size
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
              replicas: {type: integer}
          status:
            type: object
            properties:
              replicas: {type: integer}
`

func testCRD(t *testing.T, edit func(*apiextensionsv1.CustomResourceDefinition)) *apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal([]byte(crdYAML), crd); err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(crd)
	}
	DefaultCRD(crd)
	return crd
}

func schemaOf(t *testing.T, doc string) *apiextensionsv1.JSONSchemaProps {
	t.Helper()
	s := &apiextensionsv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(doc), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDefaultCRD(t *testing.T) {
	crd := testCRD(t, nil)
	if crd.Spec.Conversion == nil || crd.Spec.Conversion.Strategy != apiextensionsv1.NoneConverter {
		t.Errorf("conversion %+v, want strategy None", crd.Spec.Conversion)
	}
	if crd.Spec.Names.Singular != "widget" || crd.Spec.Names.ListKind != "WidgetList" {
		t.Errorf("names %+v, want singular widget and listKind WidgetList", crd.Spec.Names)
	}
	crdPrepareForCreate(crd)
	if got := crd.Status.StoredVersions; len(got) != 1 || got[0] != "v1" {
		t.Errorf("storedVersions %v, want [v1]", got)
	}
}

func TestValidateCRD(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*apiextensionsv1.CustomResourceDefinition)
		want string // "" means valid
	}{
		{name: "valid"},
		{name: "name must be plural.group", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" },
			want: `metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group`},
		{name: "group needs a dot", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Group = "example"
			c.Name = "widgets.example"
		},
			want: "spec.group: Invalid value: \"example\": should be a domain with at least one dot"},
		{name: "scope", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = "Global" },
			want: `spec.scope: Unsupported value: "Global"`},
		{name: "plural required", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Plural = ""; c.Name = ".example.com" },
			want: "spec.names.plural: Required value"},
		{name: "plural format", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Plural = "Widgets"
			c.Name = "Widgets.example.com"
		},
			want: `spec.names.plural: Invalid value: "Widgets"`},
		{name: "kind required", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Kind = "" },
			want: "spec.names.kind: Required value"},
		{name: "kind and listKind differ", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.ListKind = "Widget" },
			want: "spec.names.listKind: Invalid value: \"Widget\": kind and listKind may not be the same"},
		{name: "no storage version", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Storage = false },
			want: "must have exactly one version marked as storage version"},
		{name: "two storage versions", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			v2 := c.Spec.Versions[0]
			v2.Name = "v2"
			c.Spec.Versions = append(c.Spec.Versions, v2)
		}, want: "must have exactly one version marked as storage version"},
		{name: "no served version", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Served = false },
			want: "must have at least one served version"},
		{name: "schema required", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil },
			want: "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"},
		{name: "non-structural: missing type", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  spec:\n    properties:\n      size: {type: integer}")
		}, want: "spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields"},
		{name: "non-structural: root not object", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: string")
		}, want: `openAPIV3Schema.type: Invalid value: "string": must be object at the root`},
		{name: "non-structural: type in anyOf", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  spec:\n    type: object\n    anyOf:\n    - type: object")
		}, want: "properties[spec].anyOf[0].type: Forbidden: must be empty to be structural"},
		{name: "int-or-string with type", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  port:\n    type: string\n    x-kubernetes-int-or-string: true")
		}, want: "must be empty if x-kubernetes-int-or-string is true"},
		{name: "int-or-string without type", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  port:\n    x-kubernetes-int-or-string: true")
		}},
		{name: "preserve unknown fields false", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nx-kubernetes-preserve-unknown-fields: false")
		}, want: "x-kubernetes-preserve-unknown-fields: Invalid value: false: must be true or undefined"},
		{name: "ref unsupported", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  spec:\n    $ref: '#/definitions/x'")
		}, want: "$ref is not supported"},
		{name: "properties and additionalProperties", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  a: {type: string}\nadditionalProperties: {type: string}")
		}, want: "additionalProperties and properties are mutual exclusive"},
		{name: "metadata restricted", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nproperties:\n  metadata:\n    type: object\n    properties:\n      labels: {type: object}")
		}, want: "must not specify anything other than name and generateName"},
		{name: "CEL rule must compile", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Schema.OpenAPIV3Schema = schemaOf(t, "type: object\nx-kubernetes-validations:\n- rule: 'self.spec.size >'")
		}, want: "x-kubernetes-validations[0].rule: Invalid value"},
		{name: "printer column type", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].Type = "float"
		}, want: `additionalPrinterColumns[0].type: Unsupported value: "float"`},
		{name: "printer column path", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].JSONPath = "spec.size"
		}, want: "additionalPrinterColumns[0].jsonPath: Invalid value"},
		{name: "scale path under spec", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Subresources.Scale.SpecReplicasPath = ".status.replicas"
		}, want: "specReplicasPath: Invalid value: \".status.replicas\": should be a json path under .spec"},
		{name: "webhook conversion needs client config", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}, want: "spec.conversion.webhook.clientConfig: Required value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := ValidateCRD(testCRD(t, tc.edit))
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

func TestValidateCRDUpdate(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*apiextensionsv1.CustomResourceDefinition)
		want string
	}{
		{name: "add a column", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns = nil
		}},
		{name: "scope is immutable", edit: func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = apiextensionsv1.ClusterScoped },
			want: "spec.scope: Invalid value: \"Cluster\": field is immutable"},
		{name: "stored version must stay declared", edit: func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Name = "v2"
		}, want: `status.storedVersions[0]: Invalid value: "v1": must appear in spec.versions`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			old := testCRD(t, nil)
			crdPrepareForCreate(old)
			old.ResourceVersion = "1"
			obj := old.DeepCopy()
			tc.edit(obj)
			crdPrepareForUpdate(obj, old)
			got := crdValidateUpdate(obj, old).ToAggregate()
			switch {
			case tc.want == "" && got != nil:
				t.Fatalf("unexpected errors: %v", got)
			case tc.want != "" && (got == nil || !strings.Contains(got.Error(), tc.want)):
				t.Fatalf("errors %v, want one containing %q", got, tc.want)
			}
		})
	}
}
