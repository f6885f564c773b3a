package bench

// API call latency during a run, measured two ways (shared by the density
// and churn scenarios):
//
//   - server side: the API server's apiserver_request_duration_seconds
//     histogram on /metrics, scraped before and after the run and
//     differenced, so it covers every client's calls (scheduler,
//     controllers, nodes, the benchmark) exactly as the server timed them.
//     rudder and kube-apiserver both export it; only its buckets are
//     coarse (…0.5, 1, 2.5 s…), so a p99 is interpolated inside a bucket,
//     as Prometheus' histogram_quantile does.
//   - client side: the benchmark's own calls, timed by a RoundTripper from
//     request sent to the response body closed, in the fine histograms of
//     hist.go. This is the fallback when /metrics cannot be read.
//
// The SLO judged is upstream's API call latency SLO, over the run rather
// than over 5-minute windows: p99 per (verb, resource, scope) of mutating
// calls and single-object reads ≤ 1 s, of LISTs ≤ 30 s.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"
)

const (
	metricRequestDuration = "apiserver_request_duration_seconds"
	metricProcessCPU      = "process_cpu_seconds_total"
	metricProcessRSS      = "process_resident_memory_bytes"

	sloMutatingMS = 1000
	sloGetMS      = 1000
	sloListMS     = 30000
)

// APILatency is one (verb, resource, scope) group's calls during a run.
type APILatency struct {
	Verb string `json:"verb"`
	// Resource is resource or resource/subresource (pods/status).
	Resource string  `json:"resource"`
	Scope    string  `json:"scope,omitempty"`
	Count    uint64  `json:"count"`
	P50MS    float64 `json:"p50_ms"`
	P99MS    float64 `json:"p99_ms"`
	// SLOMS is the SLO's bound for the group's p99; Met says it held.
	SLOMS float64 `json:"slo_ms"`
	Met   bool    `json:"met"`
}

// densityAPIKey groups request latencies.
type densityAPIKey struct{ verb, resource, scope string }

// densityPromHist is a cumulative bucketed histogram: counts[i] is the
// number of observations ≤ bounds[i]; the last bound is +Inf.
type densityPromHist struct {
	bounds []float64
	counts []float64
}

// densityScrape is one reading of a server's /metrics.
type densityScrape struct {
	hists map[densityAPIKey]*densityPromHist
	// cpuSeconds and rssBytes are the server's process figures, when it
	// exports them (kube-apiserver does); negative when it does not.
	cpuSeconds float64
	rssBytes   float64
}

// densityScrapeMetrics reads /metrics through rc's client.
func densityScrapeMetrics(ctx context.Context, client rest.Interface) (*densityScrape, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	body, err := client.Get().AbsPath("/metrics").SetHeader("Accept", "text/plain").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading /metrics: %w", err)
	}
	return densityParseMetrics(bytes.NewReader(body))
}

func densityParseMetrics(r io.Reader) (*densityScrape, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parsing /metrics: %w", err)
	}
	s := &densityScrape{hists: map[densityAPIKey]*densityPromHist{}, cpuSeconds: -1, rssBytes: -1}
	if f := families[metricProcessCPU]; f != nil && len(f.Metric) > 0 {
		s.cpuSeconds = densityScalar(f.Metric[0])
	}
	if f := families[metricProcessRSS]; f != nil && len(f.Metric) > 0 {
		s.rssBytes = densityScalar(f.Metric[0])
	}
	f := families[metricRequestDuration]
	if f == nil {
		return nil, fmt.Errorf("/metrics has no %s", metricRequestDuration)
	}
	for _, m := range f.Metric {
		h := m.GetHistogram()
		if h == nil {
			continue
		}
		labels := map[string]string{}
		for _, lp := range m.Label {
			labels[lp.GetName()] = lp.GetValue()
		}
		key, ok := densityKeyOf(labels)
		if !ok {
			continue
		}
		ph := &densityPromHist{}
		for _, b := range h.Bucket {
			ph.bounds = append(ph.bounds, b.GetUpperBound())
			ph.counts = append(ph.counts, float64(b.GetCumulativeCount()))
		}
		ph.bounds = append(ph.bounds, math.Inf(1))
		ph.counts = append(ph.counts, float64(h.GetSampleCount()))
		if prev := s.hists[key]; prev != nil {
			if err := prev.add(ph, 1); err != nil {
				return nil, err
			}
		} else {
			s.hists[key] = ph
		}
	}
	return s, nil
}

func densityScalar(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return -1
}

// densityKeyOf maps a series' labels to its group, or false for what the
// SLO does not cover: non-resource paths (/healthz, /metrics), watches
// and long-running CONNECTs (exec, logs). rudder labels verbs as the
// authorizer names them (create, list, ...); kube-apiserver uses its
// reported verbs (POST, LIST, APPLY, ...), mapped here to the same names.
func densityKeyOf(l map[string]string) (densityAPIKey, bool) {
	if l["resource"] == "" || strings.HasPrefix(l["verb"], "nonresource") {
		return densityAPIKey{}, false
	}
	scope := l["scope"]
	verb := strings.ToLower(l["verb"])
	switch verb {
	case "post":
		verb = "create"
	case "put":
		verb = "update"
	case "apply":
		verb = "patch"
	case "delete":
		if scope != "resource" {
			verb = "deletecollection"
		}
	case "watch", "watchlist", "connect", "":
		return densityAPIKey{}, false
	}
	res := l["resource"]
	if sub := l["subresource"]; sub != "" {
		res += "/" + sub
	}
	return densityAPIKey{verb: verb, resource: res, scope: scope}, true
}

// add adds sign·o to h (sign -1 subtracts). Both must share bucket bounds,
// which a server's series of one histogram do.
func (h *densityPromHist) add(o *densityPromHist, sign float64) error {
	if len(h.bounds) != len(o.bounds) {
		return fmt.Errorf("%s series with different buckets", metricRequestDuration)
	}
	for i := range h.counts {
		h.counts[i] += sign * o.counts[i]
	}
	return nil
}

func (h *densityPromHist) clone() *densityPromHist {
	return &densityPromHist{bounds: append([]float64(nil), h.bounds...), counts: append([]float64(nil), h.counts...)}
}

func (h *densityPromHist) count() float64 { return h.counts[len(h.counts)-1] }

// quantile is histogram_quantile's estimate in seconds: linear within the
// bucket holding rank q·n, the lower bound of the first bucket taken as 0;
// a rank in the +Inf bucket reports the highest finite bound.
func (h *densityPromHist) quantile(q float64) float64 {
	n := h.count()
	if n <= 0 {
		return 0
	}
	rank := q * n
	for i, c := range h.counts {
		if c < rank {
			continue
		}
		if math.IsInf(h.bounds[i], 1) {
			if i == 0 {
				return 0
			}
			return h.bounds[i-1]
		}
		lo, below := 0.0, 0.0
		if i > 0 {
			lo, below = h.bounds[i-1], h.counts[i-1]
		}
		if c == below {
			return h.bounds[i]
		}
		return lo + (h.bounds[i]-lo)*(rank-below)/(c-below)
	}
	return h.bounds[len(h.bounds)-1]
}

// densityAPIDelta is what happened between two scrapes: the latency
// groups (sorted by verb, resource, scope), p99 by verb over all
// resources, and the server's CPU seconds (negative when not exported).
func densityAPIDelta(before, after *densityScrape) (groups []APILatency, byVerb map[string]float64, cpuSeconds float64, err error) {
	verbs := map[string]*densityPromHist{}
	for key, ha := range after.hists {
		d := ha.clone()
		if hb := before.hists[key]; hb != nil {
			if err := d.add(hb, -1); err != nil {
				return nil, nil, -1, err
			}
		}
		if d.count() <= 0 {
			continue
		}
		slo := densitySLOMS(key.verb)
		p99 := round3(d.quantile(0.99) * 1000)
		groups = append(groups, APILatency{Verb: key.verb, Resource: key.resource, Scope: key.scope,
			Count: uint64(d.count()), P50MS: round3(d.quantile(0.5) * 1000), P99MS: p99, SLOMS: slo, Met: p99 <= slo})
		if v := verbs[key.verb]; v != nil {
			if err := v.add(d, 1); err != nil {
				return nil, nil, -1, err
			}
		} else {
			verbs[key.verb] = d
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		a, b := groups[i], groups[j]
		if a.Verb != b.Verb {
			return a.Verb < b.Verb
		}
		if a.Resource != b.Resource {
			return a.Resource < b.Resource
		}
		return a.Scope < b.Scope
	})
	byVerb = map[string]float64{}
	for v, h := range verbs {
		byVerb[v] = round3(h.quantile(0.99) * 1000)
	}
	cpuSeconds = -1
	if before.cpuSeconds >= 0 && after.cpuSeconds >= 0 {
		cpuSeconds = round3(after.cpuSeconds - before.cpuSeconds)
	}
	return groups, byVerb, cpuSeconds, nil
}

// densitySLOMS is the p99 bound upstream's API call latency SLO sets.
func densitySLOMS(verb string) float64 {
	switch verb {
	case "list":
		return sloListMS
	case "get":
		return sloGetMS
	}
	return sloMutatingMS
}

// densitySLOFailures names the groups whose p99 broke the SLO.
func densitySLOFailures(groups []APILatency) []string {
	var out []string
	for _, g := range groups {
		if !g.Met {
			out = append(out, fmt.Sprintf("API %s %s (%s) p99 %.0f ms > %.0f ms", g.Verb, g.Resource, g.Scope, g.P99MS, g.SLOMS))
		}
	}
	return out
}

// densityRecorder times the benchmark's own API calls, by verb and
// resource, from the request sent to its response body closed (client-go
// always closes it once decoded). Watches are left out: they last the run.
type densityRecorder struct {
	mu    sync.Mutex
	hists map[densityAPIKey]*histogram
	errs  map[densityAPIKey]int
}

func newDensityRecorder() *densityRecorder {
	return &densityRecorder{hists: map[densityAPIKey]*histogram{}, errs: map[densityAPIKey]int{}}
}

// reset forgets what was recorded so far: the run's window starts.
func (r *densityRecorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.hists)
	clear(r.errs)
}

// wrap is a rest.Config.WrapTransport.
func (r *densityRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return densityRoundTripper(func(req *http.Request) (*http.Response, error) {
		key, ok := densityKeyOfRequest(req)
		if !ok {
			return rt.RoundTrip(req)
		}
		start := time.Now()
		resp, err := rt.RoundTrip(req)
		if err != nil {
			r.record(key, time.Since(start), true)
			return resp, err
		}
		failed := resp.StatusCode >= 400
		resp.Body = &densityTimedBody{ReadCloser: resp.Body, done: func() { r.record(key, time.Since(start), failed) }}
		return resp, nil
	})
}

type densityRoundTripper func(*http.Request) (*http.Response, error)

func (f densityRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// densityTimedBody calls done once, when the body is closed.
type densityTimedBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *densityTimedBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

func (r *densityRecorder) record(key densityAPIKey, d time.Duration, failed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.hists[key]
	if h == nil {
		h = &histogram{}
		r.hists[key] = h
	}
	h.record(d)
	if failed {
		r.errs[key]++
	}
}

// ClientLatency is one (verb, resource) group of the benchmark's own calls.
type ClientLatency struct {
	Verb     string  `json:"verb"`
	Resource string  `json:"resource"`
	Count    uint64  `json:"count"`
	Errors   int     `json:"errors"`
	P50MS    float64 `json:"p50_ms"`
	P90MS    float64 `json:"p90_ms"`
	P99MS    float64 `json:"p99_ms"`
	MaxMS    float64 `json:"max_ms"`
}

// results returns the groups, sorted, and p99 by verb over resources.
func (r *densityRecorder) results() ([]ClientLatency, map[string]float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []ClientLatency
	verbs := map[string]*histogram{}
	for k, h := range r.hists {
		out = append(out, ClientLatency{Verb: k.verb, Resource: k.resource, Count: h.n, Errors: r.errs[k],
			P50MS: round3(h.quantileMS(0.5)), P90MS: round3(h.quantileMS(0.9)), P99MS: round3(h.quantileMS(0.99)), MaxMS: round3(h.maxMS())})
		v := verbs[k.verb]
		if v == nil {
			v = &histogram{}
			verbs[k.verb] = v
		}
		v.merge(h)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Verb != out[j].Verb {
			return out[i].Verb < out[j].Verb
		}
		return out[i].Resource < out[j].Resource
	})
	byVerb := map[string]float64{}
	for v, h := range verbs {
		byVerb[v] = round3(h.quantileMS(0.99))
	}
	return out, byVerb
}

// densityKeyOfRequest names a request as the server's metrics would:
// /api/v1/namespaces/ns/pods/name/status → update pods/status, scope
// resource. Watches and non-resource paths give false.
func densityKeyOfRequest(req *http.Request) (densityAPIKey, bool) {
	if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
		return densityAPIKey{}, false
	}
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return densityAPIKey{}, false
	}
	scope := "cluster"
	if len(parts) >= 2 && parts[0] == "namespaces" && len(parts) > 2 {
		scope, parts = "namespace", parts[2:]
	}
	if len(parts) == 0 || parts[0] == "watch" {
		return densityAPIKey{}, false
	}
	res := parts[0]
	named := len(parts) >= 2
	if named {
		scope = "resource"
	}
	if len(parts) >= 3 {
		res += "/" + parts[2]
	}
	var verb string
	switch req.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if !named {
			verb = "deletecollection"
		}
	case http.MethodGet:
		verb = "get"
		if !named {
			verb = "list"
		}
	default:
		return densityAPIKey{}, false
	}
	return densityAPIKey{verb: verb, resource: res, scope: scope}, true
}
