package apiserver

// Fuzz targets for the parsers that see raw client input before any
// handler runs. Their seeds run in every `go test`, so each seed is also a
// regression test; run one for longer with
//
//	go test -run='^$' -fuzz=FuzzRequestInfo -fuzztime=30s ./internal/apiserver
//
// Crashers the fuzzer finds land in testdata/fuzz/<Target>/ and are
// replayed by plain `go test` from then on. FuzzServeHTTP, which drives the
// whole handler over a real etcd, is in fuzz_serve_test.go.

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	validationpath "k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fuzzRequest builds the request net/http would hand the server for a
// method and request target, or nil when net/http would have refused it
// before any handler ran (so the fuzzer does not chase impossible inputs).
func fuzzRequest(method, target string) *http.Request {
	if !validMethodToken(method) {
		return nil
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil
	}
	return &http.Request{Method: method, URL: u, Header: http.Header{}, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1}
}

// validMethodToken is RFC 9110's token rule, which net/http enforces on
// request methods.
func validMethodToken(m string) bool {
	if m == "" {
		return false
	}
	for i := 0; i < len(m); i++ {
		c := m[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether net/http would accept v as a header
// value: no control characters except tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

var resourceVerbs = map[string]bool{
	"get": true, "list": true, "watch": true, "create": true, "update": true,
	"patch": true, "delete": true, "deletecollection": true, "": true,
}

func FuzzRequestInfo(f *testing.F) {
	seeds := []struct{ method, target string }{
		{"GET", "/api/v1/namespaces/default/pods/web"},
		{"GET", "/api/v1/namespaces/default/pods"},
		{"GET", "/api/v1/pods?watch=true"},
		{"GET", "/api/v1/watch/namespaces/default/pods/web"},
		{"POST", "/apis/apps/v1/namespaces/demo/deployments"},
		{"PUT", "/apis/apps/v1/namespaces/demo/deployments/web/scale"},
		{"PATCH", "/api/v1/namespaces/default/pods/web/status"},
		{"DELETE", "/api/v1/namespaces/default/configmaps"},
		{"DELETE", "/api/v1/namespaces/gone"},
		{"PUT", "/api/v1/namespaces/gone/finalize"},
		{"GET", "/api/v1/namespaces/demo/status"},
		{"HEAD", "/apis/batch/v1/jobs?watch=1"},
		{"OPTIONS", "/apis"},
		{"GET", "/api"},
		{"GET", "/healthz/etcd"},
		{"GET", "//api//v1///namespaces//pods/"},
		{"GET", "/api/v1/namespaces/%2F/pods/%2E%2E"},
		{"GET", "/apis/x/y/z/a/b/c/d/e"},
		{"PROPFIND", "/api/v1/nodes"},
		{"GET", "http://example.com/api/v1/nodes?x=%zz"},
		{"GET", "*"},
	}
	for _, s := range seeds {
		f.Add(s.method, s.target)
	}
	f.Fuzz(func(t *testing.T, method, target string) {
		r := fuzzRequest(method, target)
		if r == nil {
			return
		}
		info := parseRequestInfo(r)
		if info.Path != r.URL.Path {
			t.Fatalf("Path %q, want %q", info.Path, r.URL.Path)
		}
		if !info.IsResourceRequest {
			// Non-resource requests are authorized by path and method.
			if info.Verb != strings.ToLower(method) || info.Resource != "" || info.Name != "" || info.Subresource != "" {
				t.Fatalf("non-resource request with resource attributes: %+v", info)
			}
			return
		}
		if info.APIPrefix != "api" && info.APIPrefix != "apis" {
			t.Fatalf("resource request with prefix %q", info.APIPrefix)
		}
		if info.APIPrefix == "api" && info.APIGroup != "" {
			t.Fatalf("legacy path with group %q", info.APIGroup)
		}
		if !resourceVerbs[info.Verb] {
			t.Fatalf("verb %q is not a resource verb", info.Verb)
		}
		// Resource, name and subresource are the first three parts: route
		// relies on that, and on nothing past them unless len(Parts) > 3.
		want := [3]string{}
		copy(want[:], info.Parts)
		if got := [3]string{info.Resource, info.Name, info.Subresource}; got != want {
			t.Fatalf("resource/name/subresource %q, parts %q", got, info.Parts)
		}
		// A GET or DELETE is a collection verb exactly when there is no name.
		switch info.Verb {
		case "deletecollection", "list":
			if info.Name != "" {
				t.Fatalf("%s with a name: %+v", info.Verb, info)
			}
		case "get", "delete":
			if info.Name == "" {
				t.Fatalf("%s without a name: %+v", info.Verb, info)
			}
		}
		// Parsing is a pure function of the request: authorization and
		// routing both rely on seeing the same answer.
		if again := parseRequestInfo(r); again.Verb != info.Verb || again.Namespace != info.Namespace || again.Name != info.Name {
			t.Fatalf("not deterministic: %+v vs %+v", info, again)
		}
	})
}

func FuzzContinueToken(f *testing.F) {
	const prefix = "/registry/configmaps/default/"
	f.Add(encodeContinue(42, "cm-7\x00"), int64(42), "cm-7\x00")
	f.Add(encodeContinue(-1, "a"), int64(-1), "a")
	f.Add("", int64(0), "")
	f.Add("not base64!", int64(1), "x")
	// RBAC names are path segments and may hold "..": their pages go on.
	f.Add(encodeContinue(7, "system:a..b\x00"), int64(7), "demo/a..b\x00")
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi8uLi9zZWNyZXRzIn0", int64(1), "../../secrets")
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIvIn0", int64(1), "/")
	f.Add("eyJ2IjoidjIiLCJydiI6MSwic3RhcnQiOiJhIn0", int64(9223372036854775807), "\x00\x00")
	f.Add("eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MWUzMDAsInN0YXJ0IjoiYSJ9", int64(-9223372036854775808), "a/b/c")
	f.Add("00000000000", int64(-28), ".")
	f.Fuzz(func(t *testing.T, token string, rev int64, key string) {
		// Arbitrary tokens: either a position strictly inside the prefix,
		// with no parent references, or a 400.
		start, _, err := decodeContinue(token, prefix)
		if err != nil {
			if !apierrors.IsBadRequest(err) {
				t.Fatalf("decodeContinue(%q): %v is not a 400", token, err)
			}
		} else if rel, ok := strings.CutPrefix(start, prefix); !ok || rel == "" || path.Clean("/"+rel) != "/"+rel {
			t.Fatalf("decodeContinue(%q) = %q escapes or empties prefix %q", token, start, prefix)
		}

		// Every token the server can mint comes back as it went out: the
		// key after the list's prefix is [namespace/]name, each a valid
		// path segment, usually followed by a NUL (the key just past it).
		// JSON turns invalid UTF-8 into U+FFFD, and names are UTF-8.
		segs := strings.Split(strings.TrimSuffix(key, "\x00"), "/")
		if len(segs) > 2 || !utf8.ValidString(key) {
			return
		}
		for _, seg := range segs {
			if seg == "" || len(validationpath.IsValidPathSegmentName(seg)) > 0 {
				return
			}
		}
		start, gotRev, err := decodeContinue(encodeContinue(rev, key), prefix)
		if err != nil {
			t.Fatalf("round trip of (%d, %q): %v", rev, key, err)
		}
		if gotRev != rev || start != prefix+key {
			t.Fatalf("round trip of (%d, %q) = (%d, %q)", rev, key, gotRev, start)
		}
	})
}

func FuzzListOptions(f *testing.F) {
	seeds := []string{
		"",
		"labelSelector=app%3Dweb%2Ctier+in+(a,b)%2C!legacy&fieldSelector=spec.nodeName%3Dn1",
		"limit=500&continue=abc&resourceVersion=0",
		"resourceVersion=12&resourceVersionMatch=Exact",
		"resourceVersion=0&resourceVersionMatch=Exact",
		"resourceVersionMatch=NotOlderThan",
		"sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan",
		"sendInitialEvents=true",
		"timeoutSeconds=-1",
		"timeoutSeconds=9223372036854775807",
		"limit=-5&resourceVersion=-1",
		"resourceVersion=99999999999999999999",
		"labelSelector=a%20in%20(",
		"fieldSelector=a%3D%3D%3Db",
		"fieldSelector=metadata.name!%3D%5C",
		"labelSelector=%3D%3D&labelSelector=x",
		"limit=1&limit=2&%zz=1;a=b",
	}
	for _, s := range seeds {
		f.Add(s, false)
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, rawQuery string, watch bool) {
		// The server reads r.URL.Query(), which drops malformed pairs.
		q, _ := url.ParseQuery(rawQuery)
		o, err := parseListOptions(q, watch)
		if err != nil {
			var st apierrors.APIStatus
			if !errors.As(err, &st) {
				t.Fatalf("error %v is not an API status", err)
			}
			if c := st.Status().Code; c != http.StatusBadRequest && c != http.StatusUnprocessableEntity {
				t.Fatalf("error code %d for a bad query: %v", c, err)
			}
			return
		}
		if o.labels == nil || o.fields == nil {
			t.Fatal("nil selector")
		}
		if o.limit < 0 || o.rv < 0 || o.timeoutSeconds < 0 {
			t.Fatalf("negative limit/rv/timeout: %+v", o)
		}
		// A watch's lifetime is time.Duration(timeoutSeconds) seconds.
		if d := time.Duration(o.timeoutSeconds) * time.Second; d < 0 || int64(d/time.Second) != o.timeoutSeconds {
			t.Fatalf("timeoutSeconds %d overflows a time.Duration", o.timeoutSeconds)
		}
		if o.resourceVersion != "" {
			if n, err := strconv.ParseInt(o.resourceVersion, 10, 64); err != nil || n != o.rv {
				t.Fatalf("rv %d from resourceVersion %q", o.rv, o.resourceVersion)
			}
		}
		switch o.rvMatch {
		case "", metav1.ResourceVersionMatchExact, metav1.ResourceVersionMatchNotOlderThan:
		default:
			t.Fatalf("accepted resourceVersionMatch %q", o.rvMatch)
		}
		if o.sendInitialEvents != nil && !watch {
			t.Fatal("sendInitialEvents accepted for a list")
		}
		// The matcher must take any object without panicking.
		if m := matcher(o); m != nil {
			m(&cacheObject{meta: &metav1.ObjectMeta{Labels: map[string]string{"app": "web"}}, fields: map[string]string{"metadata.name": "x"}})
		}
	})
}

var servedMedia = map[string]bool{mediaJSON: true, mediaYAML: true, mediaProtobuf: true}

func FuzzNegotiate(f *testing.F) {
	seeds := []struct{ accept, contentType string }{
		{"", ""},
		{"application/json", "application/json"},
		{"application/vnd.kubernetes.protobuf,application/json", "application/vnd.kubernetes.protobuf"},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", "application/yaml"},
		{"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", "application/merge-patch+json"},
		{"application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1", "application/strategic-merge-patch+json; charset=utf-8"},
		{"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "application/json-patch+json"},
		{"*/*;q=0.5, text/html;q=0", "text/yaml"},
		{"application/*;q=0", "application/x-yaml"},
		{"text/plain", "text/plain; charset=\"unterminated"},
		{";;;,,,/,*/,/*", ";"},
		{"application/json;q=abc;as=", "=;="},
		{"a/b/c;as=Table;g=meta.k8s.io;v=v1", "application/apply-patch+yaml"},
	}
	for _, s := range seeds {
		f.Add(s.accept, s.contentType, true)
		f.Add(s.accept, s.contentType, false)
	}
	f.Fuzz(func(t *testing.T, accept, ct string, allowTransform bool) {
		if !validHeaderValue(accept) || !validHeaderValue(ct) {
			return
		}
		r := &http.Request{Method: http.MethodGet, URL: &url.URL{Path: "/"}, Header: http.Header{}}
		r.Header.Set("Accept", accept)
		r.Header.Set("Content-Type", ct)

		tg, ok := negotiate(r, allowTransform)
		if ok {
			if !servedMedia[tg.media] {
				t.Fatalf("negotiated unserved media %q", tg.media)
			}
			if tg.transform != asObject {
				if !allowTransform {
					t.Fatalf("transform %d where none is allowed", tg.transform)
				}
				if tg.groupVersion.Group != metav1.GroupName {
					t.Fatalf("transform to group %q", tg.groupVersion.Group)
				}
			}
			if tg.transform == asTable && tg.media == mediaProtobuf {
				t.Fatal("Table negotiated as protobuf, which it has no form in")
			}
		} else if accept == "" {
			t.Fatal("an empty Accept must mean JSON")
		}
		// Every negotiated media type has an encoder.
		if ok && fuzzCodecs().encoderFor(tg.media, false) == nil {
			t.Fatalf("no encoder for %q", tg.media)
		}

		media := contentType(r)
		if ct == "" && media != mediaJSON {
			t.Fatalf("empty Content-Type read as %q", media)
		}
		fuzzCodecs().decoderFor(media, true)
		switch v := aggregatedVersion(r); v {
		case "", "v2", "v2beta1":
		default:
			t.Fatalf("aggregated discovery version %q", v)
		}
	})
}

// fuzzCodecs shares one codecs value across fuzz inputs: building the
// scheme costs milliseconds, the calls under test microseconds.
var fuzzCodecs = sync.OnceValue(newCodecs)
