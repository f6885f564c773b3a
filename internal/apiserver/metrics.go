package apiserver

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

var (
	requestCounter = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_request_total",
		Help: "Requests served, by verb, group, version, resource, subresource, scope and HTTP code.",
	}, []string{"verb", "group", "version", "resource", "subresource", "scope", "code"})
	requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "apiserver_request_duration_seconds",
		Help:    "Request latency, by verb, group, version, resource, subresource and scope. Watches are excluded.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60},
	}, []string{"verb", "group", "version", "resource", "subresource", "scope"})
)

// httpMethods are the methods metrics name; any other counts as "other",
// because the method is the client's to choose, as upstream's cleanVerb.
var httpMethods = map[string]bool{
	"get": true, "head": true, "post": true, "put": true, "patch": true,
	"delete": true, "options": true, "connect": true, "trace": true,
}

func observeRequest(info *requestInfo, code int, took time.Duration) {
	verb, scope := info.Verb, "cluster"
	if !info.IsResourceRequest {
		if !httpMethods[verb] {
			verb = "other"
		}
		verb, scope = "nonresource:"+verb, ""
	} else if info.Namespace != "" {
		scope = "namespace"
	}
	if info.Name != "" && info.IsResourceRequest {
		scope = "resource"
	}
	// Only a path that named a served resource is labelled with it (see
	// requestInfo.served); the rest are counted, under empty labels.
	group, version, resource, subresource := info.APIGroup, info.APIVersion, info.Resource, info.Subresource
	if !info.IsResourceRequest || !info.served {
		group, version, resource, subresource = "", "", "", ""
	}
	requestCounter.WithLabelValues(verb, group, version, resource, subresource, scope, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		requestLatency.WithLabelValues(verb, group, version, resource, subresource, scope).Observe(took.Seconds())
	}
}
