package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

const (
	acceptTableV1      = "application/json;as=Table;v=v1;g=meta.k8s.io"
	acceptTableV1beta1 = "application/json;as=Table;v=v1beta1;g=meta.k8s.io"
	acceptPartialV1    = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"
	acceptPartialList  = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
	acceptProtoPartial = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io"
)

// protoBody strips the "k8s\0" envelope of a protobuf response and returns
// the runtime.Unknown inside, whose Raw is the object's message.
func protoBody(t *testing.T, body []byte) runtime.Unknown {
	t.Helper()
	if !bytes.HasPrefix(body, []byte("k8s\x00")) {
		t.Fatalf("protobuf body without the k8s envelope: %q", body[:min(len(body), 16)])
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(body[4:]); err != nil {
		t.Fatalf("protobuf envelope: %v", err)
	}
	return unk
}

func TestAPIEncodings(t *testing.T) {
	e := newAPIEnv(t, Config{})
	ctx := context.Background()
	ns := e.namespace(t, "enc")
	for _, name := range []string{"enc1", "enc2"} {
		if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, testConfigMap(name, map[string]string{"app": "enc"}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	objPath := "/api/v1/namespaces/" + ns + "/configmaps/enc1"
	listPath := "/api/v1/namespaces/" + ns + "/configmaps"

	t.Run("response media types", func(t *testing.T) {
		cases := []struct {
			name, path, accept, wantType string
			// decode returns the object names in the body.
			decode func(t *testing.T, body []byte) []string
		}{
			{"json object", objPath, "application/json", "application/json", jsonNames},
			{"json list", listPath, "application/json", "application/json", jsonNames},
			{"yaml object", objPath, "application/yaml", "application/yaml", yamlNames},
			{"yaml list", listPath, "application/yaml", "application/yaml", yamlNames},
			{"protobuf object", objPath, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", func(t *testing.T, body []byte) []string {
				unk := protoBody(t, body)
				var cm corev1.ConfigMap
				if unk.Kind != "ConfigMap" || unk.APIVersion != "v1" || cm.Unmarshal(unk.Raw) != nil {
					t.Fatalf("protobuf object of kind %s/%s", unk.APIVersion, unk.Kind)
				}
				return []string{cm.Name}
			}},
			{"protobuf list", listPath, "application/vnd.kubernetes.protobuf", "application/vnd.kubernetes.protobuf", func(t *testing.T, body []byte) []string {
				unk := protoBody(t, body)
				var l corev1.ConfigMapList
				if unk.Kind != "ConfigMapList" || l.Unmarshal(unk.Raw) != nil {
					t.Fatalf("protobuf list of kind %s", unk.Kind)
				}
				return configMapNames(&l)
			}},
			{"any type means json", objPath, "*/*", "application/json", jsonNames},
			// The first acceptable entry wins, as upstream negotiates.
			{"unknown first, json second", objPath, "application/xml, application/json;q=0.9", "application/json", jsonNames},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(t, http.MethodGet, tc.path, map[string]string{"Accept": tc.accept}, nil)
				if r.code != http.StatusOK || r.header.Get("Content-Type") != tc.wantType {
					t.Fatalf("%d %s, want 200 %s: %s", r.code, r.header.Get("Content-Type"), tc.wantType, r.body)
				}
				got := tc.decode(t, r.body)
				want := []string{"enc1"}
				if tc.path == listPath {
					want = []string{"enc1", "enc2"}
				}
				if !sameSet(got, want) {
					t.Fatalf("names %v, want %v", got, want)
				}
			})
		}
	})

	t.Run("not acceptable", func(t *testing.T) {
		r := e.do(t, http.MethodGet, objPath, map[string]string{"Accept": "application/xml"}, nil)
		checkRawStatus(t, r, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	})

	t.Run("table", func(t *testing.T) {
		cases := []struct {
			name, path, accept, includeObject string
			wantRows                          int
			wantObjectKind                    string // "" = no object in rows
		}{
			{"list default includes metadata", listPath, acceptTableV1, "", 2, "PartialObjectMetadata"},
			{"list with objects", listPath, acceptTableV1, "Object", 2, "ConfigMap"},
			{"list with metadata", listPath, acceptTableV1, "Metadata", 2, "PartialObjectMetadata"},
			{"list with nothing", listPath, acceptTableV1, "None", 2, ""},
			{"get one object", objPath, acceptTableV1, "Object", 1, "ConfigMap"},
			{"v1beta1 table", listPath, acceptTableV1beta1, "", 2, "PartialObjectMetadata"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				path := tc.path
				if tc.includeObject != "" {
					path += "?includeObject=" + tc.includeObject
				}
				r := e.do(t, http.MethodGet, path, map[string]string{"Accept": tc.accept}, nil)
				if r.code != http.StatusOK {
					t.Fatalf("%d: %s", r.code, r.body)
				}
				var tbl metav1.Table
				if err := json.Unmarshal(r.body, &tbl); err != nil {
					t.Fatal(err)
				}
				wantGV := "meta.k8s.io/v1"
				if tc.accept == acceptTableV1beta1 {
					wantGV = "meta.k8s.io/v1beta1"
				}
				if tbl.Kind != "Table" || tbl.APIVersion != wantGV {
					t.Fatalf("kind %s/%s, want %s Table", tbl.APIVersion, tbl.Kind, wantGV)
				}
				if len(tbl.ColumnDefinitions) == 0 || tbl.ColumnDefinitions[0].Name != "Name" {
					t.Fatalf("column definitions %+v: want Name first", tbl.ColumnDefinitions)
				}
				if len(tbl.Rows) != tc.wantRows {
					t.Fatalf("%d rows, want %d", len(tbl.Rows), tc.wantRows)
				}
				for _, row := range tbl.Rows {
					if len(row.Cells) != len(tbl.ColumnDefinitions) {
						t.Errorf("row has %d cells for %d columns", len(row.Cells), len(tbl.ColumnDefinitions))
					}
					var tm metav1.TypeMeta
					if len(row.Object.Raw) > 0 {
						if err := json.Unmarshal(row.Object.Raw, &tm); err != nil {
							t.Fatal(err)
						}
					}
					if tm.Kind != tc.wantObjectKind {
						t.Errorf("row object kind %q, want %q", tm.Kind, tc.wantObjectKind)
					}
				}
			})
		}
	})

	t.Run("partial object metadata", func(t *testing.T) {
		r := e.do(t, http.MethodGet, objPath, map[string]string{"Accept": acceptPartialV1}, nil)
		var p metav1.PartialObjectMetadata
		if r.code != http.StatusOK || json.Unmarshal(r.body, &p) != nil {
			t.Fatalf("%d: %s", r.code, r.body)
		}
		if p.Kind != "PartialObjectMetadata" || p.Name != "enc1" || p.Labels["app"] != "enc" || p.UID == "" || p.ResourceVersion == "" {
			t.Fatalf("partial object %+v", p)
		}
		if strings.Contains(string(r.body), `"data"`) {
			t.Errorf("metadata-only response carries data: %s", r.body)
		}

		r = e.do(t, http.MethodGet, listPath, map[string]string{"Accept": acceptPartialList}, nil)
		var pl metav1.PartialObjectMetadataList
		if r.code != http.StatusOK || json.Unmarshal(r.body, &pl) != nil {
			t.Fatalf("%d: %s", r.code, r.body)
		}
		if pl.Kind != "PartialObjectMetadataList" || len(pl.Items) != 2 || pl.ResourceVersion == "" {
			t.Fatalf("partial list %s with %d items, rv %q", pl.Kind, len(pl.Items), pl.ResourceVersion)
		}

		r = e.do(t, http.MethodGet, listPath, map[string]string{"Accept": acceptProtoPartial}, nil)
		unk := protoBody(t, r.body)
		var ppl metav1.PartialObjectMetadataList
		if unk.Kind != "PartialObjectMetadataList" || ppl.Unmarshal(unk.Raw) != nil || len(ppl.Items) != 2 {
			t.Fatalf("protobuf partial list: kind %s, %d items", unk.Kind, len(ppl.Items))
		}

		// The metadata client negotiates the same forms.
		gvr := corev1.SchemeGroupVersion.WithResource("configmaps")
		got, err := e.meta.Resource(gvr).Namespace(ns).Get(ctx, "enc2", metav1.GetOptions{})
		if err != nil || got.Name != "enc2" || got.Labels["app"] != "enc" {
			t.Fatalf("metadata client get: %+v %v", got, err)
		}
		list, err := e.meta.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 2 {
			t.Fatalf("metadata client list: %v", err)
		}
	})

	t.Run("request bodies", func(t *testing.T) {
		cmYAML := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  k: v\n"
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "from-proto"}, Data: map[string]string{"k": "v"}}
		var protoBuf bytes.Buffer
		if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(cm, &protoBuf); err != nil {
			t.Fatal(err)
		}
		cases := []struct {
			name, contentType string
			body              []byte
			wantCode          int
			wantName          string
		}{
			{"yaml", "application/yaml", []byte(cmYAML), http.StatusCreated, "from-yaml"},
			{"protobuf", "application/vnd.kubernetes.protobuf", protoBuf.Bytes(), http.StatusCreated, "from-proto"},
			{"json", "application/json", []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"from-json"}}`), http.StatusCreated, "from-json"},
			{"unknown content type", "text/plain", []byte("name=x"), http.StatusUnsupportedMediaType, ""},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				r := e.do(t, http.MethodPost, listPath, map[string]string{"Content-Type": tc.contentType, "Accept": "application/json"}, tc.body)
				if tc.wantCode != http.StatusCreated {
					checkRawStatus(t, r, tc.wantCode, metav1.StatusReasonUnsupportedMediaType)
					return
				}
				if r.code != tc.wantCode {
					t.Fatalf("%d: %s", r.code, r.body)
				}
				if _, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, tc.wantName, metav1.GetOptions{}); err != nil {
					t.Fatalf("object from a %s body not stored: %v", tc.name, err)
				}
			})
		}
	})
}

func jsonNames(t *testing.T, body []byte) []string {
	t.Helper()
	return namesOf(t, json.Unmarshal, body)
}

func yamlNames(t *testing.T, body []byte) []string {
	t.Helper()
	return namesOf(t, func(b []byte, v any) error { return yaml.Unmarshal(b, v) }, body)
}

// namesOf decodes an object or a list generically and returns its names.
func namesOf(t *testing.T, unmarshal func([]byte, any) error, body []byte) []string {
	t.Helper()
	var doc struct {
		Kind     string            `json:"kind"`
		Metadata metav1.ObjectMeta `json:"metadata"`
		Items    []struct {
			Metadata metav1.ObjectMeta `json:"metadata"`
		} `json:"items"`
	}
	if err := unmarshal(body, &doc); err != nil {
		t.Fatalf("decode: %v: %s", err, body)
	}
	switch doc.Kind {
	case "ConfigMap":
		return []string{doc.Metadata.Name}
	case "ConfigMapList":
		var out []string
		for _, it := range doc.Items {
			out = append(out, it.Metadata.Name)
		}
		return out
	}
	t.Fatalf("unexpected kind %q", doc.Kind)
	return nil
}

// checkRawStatus checks that a raw response is a metav1.Status with the
// code and reason upstream sends. The Status is in whatever (text) form
// the client accepted, JSON or YAML.
func checkRawStatus(t *testing.T, r rawResponse, code int, reason metav1.StatusReason) {
	t.Helper()
	var st metav1.Status
	if err := yaml.Unmarshal(r.body, &st); err != nil {
		t.Fatalf("%d: body is not a Status: %v: %s", r.code, err, r.body)
	}
	if r.code != code || st.Kind != "Status" || st.Code != int32(code) || st.Reason != reason || st.Status != metav1.StatusFailure {
		t.Fatalf("got HTTP %d %s/%s code %d reason %q, want %d %s: %s", r.code, st.APIVersion, st.Kind, st.Code, st.Reason, code, reason, st.Message)
	}
}
