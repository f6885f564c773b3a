package bench

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// fakeResult is a scenario result with fixed summaries.
type fakeResult struct{ s []Summary }

func (f fakeResult) Print(w io.Writer) error {
	_, err := io.WriteString(w, "table of "+f.s[0].Target+"\n")
	return err
}
func (f fakeResult) Summaries() []Summary { return f.s }

func fptr(v float64) *float64 { return &v }

func TestOutputCompare(t *testing.T) {
	a := fakeResult{[]Summary{{Scenario: "density", Target: "embedded", Nodes: 10, Pods: 100, SecondsToAllRunning: fptr(2),
		PodStartupMS: &Quantiles{P50: 1000, P90: 1100, P99: 1200}, APIP99MS: map[string]float64{"create": 10, "list": 0},
		ServerCPUSeconds: fptr(4), OK: true}}}
	b := fakeResult{[]Summary{{Scenario: "density", Target: "kubeconfig", Kubeconfig: "/k2", Nodes: 10, Pods: 100, SecondsToAllRunning: fptr(3),
		PodStartupMS: &Quantiles{P50: 1500, P90: 1650, P99: 2400}, APIP99MS: map[string]float64{"create": 5, "list": 7, "patch": 1}}}}

	tests := []struct {
		name     string
		jsonOnly bool
		b        Summarizer
		check    func(t *testing.T, out string)
	}{
		{"json alone", true, nil, func(t *testing.T, out string) {
			line := uniformLine(t, out)
			if line["pods_per_second"] != nil || line["compare"] != nil {
				t.Errorf("unmeasured figures must be null and no comparison: %s", out)
			}
		}},
		{"json compared", true, b, func(t *testing.T, out string) {
			var got Summary
			if err := json.Unmarshal([]byte(out), &got); err != nil {
				t.Fatal(err)
			}
			r := got.Compare.Ratio
			want := map[string]float64{"seconds_to_all_running": 1.5, "pod_startup_ms.p99": 2, "api_p99_ms.create": 0.5}
			for k, v := range want {
				if r[k] != v {
					t.Errorf("ratio %s = %v, want %v (all: %v)", k, r[k], v, r)
				}
			}
			// A's list is 0 and B has no CPU figure: no ratio either way.
			for _, k := range []string{"api_p99_ms.list", "server_cpu_seconds", "api_p99_ms.patch"} {
				if _, ok := r[k]; ok {
					t.Errorf("ratio %s should be absent", k)
				}
			}
			if got.Compare.Kubeconfig != "/k2" || got.Compare.B.Target != "kubeconfig" {
				t.Errorf("comparison names the wrong B: %+v", got.Compare)
			}
		}},
		{"tables compared", false, b, func(t *testing.T, out string) {
			for _, want := range []string{"table of embedded", "table of kubeconfig", "COMPARISON density", "B = /k2"} {
				if !strings.Contains(out, want) {
					t.Errorf("output lacks %q:\n%s", want, out)
				}
			}
			row := lineWith(out, "pod_startup_ms.p99")
			if f := strings.Fields(row); len(f) != 4 || f[1] != "1200" || f[2] != "2400" || f[3] != "2.00" {
				t.Errorf("row %q, want A 1200, B 2400, B/A 2.00", row)
			}
			if f := strings.Fields(lineWith(out, "api_p99_ms.patch")); len(f) != 4 || f[1] != "-" || f[3] != "-" {
				t.Errorf("a figure only B has: %q", lineWith(out, "api_p99_ms.patch"))
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			if err := Output(&out, tc.jsonOnly, a, tc.b); err != nil {
				t.Fatal(err)
			}
			tc.check(t, out.String())
		})
	}
}

func lineWith(out, s string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, s) {
			return l
		}
	}
	return ""
}

// A kube-apiserver's /metrics labels verbs its own way; both servers'
// series must land in the same groups, and the delta must be the run's.
func TestAPIMetricsDelta(t *testing.T) {
	series := func(creates, lists, slowCreates int) string {
		var b strings.Builder
		b.WriteString("# TYPE apiserver_request_duration_seconds histogram\n")
		hist := func(labels string, fast, slow int) {
			// fast observations in (0.005, 0.01], slow in (1, 2.5].
			for _, le := range []struct {
				le string
				n  int
			}{{"0.005", 0}, {"0.01", fast}, {"1", fast}, {"2.5", fast + slow}, {"+Inf", fast + slow}} {
				b.WriteString("apiserver_request_duration_seconds_bucket{" + labels + `,le="` + le.le + `"} ` + itoa(le.n) + "\n")
			}
			b.WriteString("apiserver_request_duration_seconds_count{" + labels + "} " + itoa(fast+slow) + "\n")
			b.WriteString("apiserver_request_duration_seconds_sum{" + labels + "} 1\n")
		}
		hist(`verb="POST",group="",version="v1",resource="pods",subresource="",scope="namespace",component="apiserver",dry_run=""`, creates, slowCreates)
		hist(`verb="LIST",group="",version="v1",resource="pods",subresource="",scope="cluster",component="apiserver",dry_run=""`, lists, 0)
		hist(`verb="WATCH",group="",version="v1",resource="pods",subresource="",scope="cluster",component="apiserver",dry_run=""`, 5, 0)
		hist(`verb="GET",group="",version="",resource="",subresource="",scope="",component="",dry_run=""`, 9, 0)
		b.WriteString("# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total " + itoa(creates) + "\n")
		return b.String()
	}
	before, err := densityParseMetrics(strings.NewReader(series(10, 3, 0)))
	if err != nil {
		t.Fatal(err)
	}
	after, err := densityParseMetrics(strings.NewReader(series(108, 4, 2)))
	if err != nil {
		t.Fatal(err)
	}
	groups, byVerb, cpu, err := densityAPIDelta(before, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 2 {
		t.Fatalf("groups %+v, want create and list of pods (watch and non-resource left out)", groups)
	}
	create, list := groups[0], groups[1]
	if create.Verb != "create" || create.Count != 100 || list.Verb != "list" || list.Count != 1 {
		t.Fatalf("groups %+v", groups)
	}
	// 98 fast and 2 slow creates in the window: the p99 (rank 99) lies in
	// the (1, 2.5] bucket, halfway: 1.75 s; more than the 1 s SLO.
	if create.P99MS != 1750 || create.Met || byVerb["create"] != 1750 {
		t.Errorf("create p99 %v ms (met %t), by verb %v", create.P99MS, create.Met, byVerb)
	}
	if !list.Met || list.SLOMS != sloListMS {
		t.Errorf("list: %+v", list)
	}
	if cpu != 98 {
		t.Errorf("server CPU over the window %v, want 98", cpu)
	}
	if f := densitySLOFailures(groups); len(f) != 1 || !strings.Contains(f[0], "create pods") {
		t.Errorf("SLO failures %v", f)
	}
}

func itoa(v int) string { b, _ := json.Marshal(v); return string(b) }

func TestKeyOfRequest(t *testing.T) {
	tests := []struct {
		method, url string
		want        densityAPIKey
		ok          bool
	}{
		{"POST", "/api/v1/namespaces/ns/pods", densityAPIKey{"create", "pods", "namespace"}, true},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", densityAPIKey{"update", "pods/status", "resource"}, true},
		{"GET", "/api/v1/nodes", densityAPIKey{"list", "nodes", "cluster"}, true},
		{"GET", "/api/v1/nodes/n1", densityAPIKey{"get", "nodes", "resource"}, true},
		{"DELETE", "/apis/apps/v1/namespaces/ns/deployments", densityAPIKey{"deletecollection", "deployments", "namespace"}, true},
		{"DELETE", "/api/v1/namespaces/ns", densityAPIKey{"delete", "namespaces", "resource"}, true},
		{"GET", "/api/v1/namespaces/ns/pods?watch=true", densityAPIKey{}, false},
		{"GET", "/metrics", densityAPIKey{}, false},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, "https://h"+tc.url, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := densityKeyOfRequest(req)
			if ok != tc.ok || got != tc.want {
				t.Errorf("got %+v %t, want %+v %t", got, ok, tc.want, tc.ok)
			}
		})
	}
}
