package apiserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/rudder-dev/rudder/internal/clustertest"
)

// TestCustomResourceOpenAPI checks that custom kinds appear in every form
// of OpenAPI a client may read: /openapi/v2 as protobuf (what client-go's
// discovery and kubectl's v2 fallback ask for), every document the
// /openapi/v3 index lists, and `kubectl explain` with and without v3.
func TestCustomResourceOpenAPI(t *testing.T) {
	c, ctx, _ := widgetCluster(t, clustertest.Options{})
	rc := c.Client.Discovery().RESTClient()

	t.Run("v2 protobuf", func(t *testing.T) {
		var doc *openapi_v2.Document
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
			body, err := rc.Get().AbsPath("/openapi/v2").SetHeader("Accept", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf").DoRaw(ctx)
			if err != nil {
				return false, nil
			}
			doc = &openapi_v2.Document{}
			if err := proto.Unmarshal(body, doc); err != nil {
				t.Fatalf("/openapi/v2 is not the v2 protobuf document: %v", err)
			}
			return hasDefinition(doc, "com.example.v1.Widget"), nil
		})
		if err != nil {
			t.Fatalf("/openapi/v2 protobuf lacks com.example.v1.Widget: %v", err)
		}
		for _, def := range []string{"com.example.v1.WidgetList", "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition", "io.k8s.api.apps.v1.Deployment"} {
			if !hasDefinition(doc, def) {
				t.Errorf("/openapi/v2 protobuf lacks definition %s", def)
			}
		}
		for _, path := range []string{"/apis/example.com/v1/namespaces/{namespace}/widgets/{name}", "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/scale", "/apis/apps/v1/namespaces/{namespace}/deployments"} {
			found := false
			for _, p := range doc.GetPaths().GetPath() {
				found = found || p.GetName() == path
			}
			if !found {
				t.Errorf("/openapi/v2 protobuf lacks path %s", path)
			}
		}
	})

	t.Run("every v3 document listed is served", func(t *testing.T) {
		body, err := rc.Get().AbsPath("/openapi/v3").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var index struct {
			Paths map[string]struct {
				URL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(body, &index); err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"apis/apiextensions.k8s.io", "apis/apiextensions.k8s.io/v1", "apis/example.com/v1", "apis/apps/v1"} {
			if _, ok := index.Paths[want]; !ok {
				t.Errorf("/openapi/v3 does not list %s", want)
			}
		}
		for key, p := range index.Paths {
			raw, err := rc.Get().AbsPath(strings.Split(p.URL, "?")[0]).DoRaw(ctx)
			if err != nil {
				t.Errorf("%s (%s): %v", key, p.URL, err)
				continue
			}
			var doc struct {
				OpenAPI string `json:"openapi"`
			}
			if err := json.Unmarshal(raw, &doc); err != nil || !strings.HasPrefix(doc.OpenAPI, "3.") {
				t.Errorf("%s is not an OpenAPI v3 document (%v): %.100s", key, err, raw)
			}
		}
	})

	t.Run("v3 request bodies", func(t *testing.T) {
		raw, err := rc.Get().AbsPath("/openapi/v3/apis/example.com/v1").DoRaw(ctx)
		if err != nil {
			t.Fatal(err)
		}
		type operation struct {
			RequestBody struct {
				Content map[string]struct {
					Schema struct {
						Ref string `json:"$ref"`
					} `json:"schema"`
				} `json:"content"`
			} `json:"requestBody"`
		}
		var doc struct {
			Paths map[string]struct {
				Put   operation `json:"put"`
				Patch operation `json:"patch"`
			} `json:"paths"`
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			t.Fatal(err)
		}
		item := "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"
		for _, tc := range []struct {
			what string
			op   operation
			want string
		}{
			{"put widgets/scale", doc.Paths[item+"/scale"].Put, "io.k8s.api.autoscaling.v1.Scale"},
			{"patch widgets/scale", doc.Paths[item+"/scale"].Patch, "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
			{"patch widgets", doc.Paths[item].Patch, "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
			{"put widgets", doc.Paths[item].Put, "com.example.v1.Widget"},
		} {
			for typ, c := range tc.op.RequestBody.Content {
				if c.Schema.Ref != "#/components/schemas/"+tc.want {
					t.Errorf("%s %s body is %q, want %s", tc.what, typ, c.Schema.Ref, tc.want)
				}
			}
			if len(tc.op.RequestBody.Content) == 0 {
				t.Errorf("%s has no request body", tc.what)
			}
		}
	})

	t.Run("kubectl explain", func(t *testing.T) {
		k := newKubectlRunner(t, c.Server.Kubeconfig)
		for _, v3 := range []string{"true", "false"} {
			k.env = append(k.env[:3:3], "KUBECTL_EXPLAIN_OPENAPIV3="+v3)
			out := k.ok(t, "", "explain", "widgets.spec.color")
			if !strings.Contains(out, "Widget") || !strings.Contains(out, "<string>") || !strings.Contains(out, "color") {
				t.Errorf("KUBECTL_EXPLAIN_OPENAPIV3=%s kubectl explain widgets.spec.color:\n%s", v3, out)
			}
		}
	})
}

func hasDefinition(doc *openapi_v2.Document, name string) bool {
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		if d.GetName() == name {
			return true
		}
	}
	return false
}
