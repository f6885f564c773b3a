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

func observeRequest(info *requestInfo, code int, took time.Duration) {
	verb, scope := info.Verb, "cluster"
	if !info.IsResourceRequest {
		verb, scope = "nonresource:"+verb, ""
	} else if info.Namespace != "" {
		scope = "namespace"
	}
	if info.Name != "" && info.IsResourceRequest {
		scope = "resource"
	}
	resource := info.Resource
	if !info.IsResourceRequest {
		resource = ""
	}
	requestCounter.WithLabelValues(verb, info.APIGroup, info.APIVersion, resource, info.Subresource, scope, strconv.Itoa(code)).Inc()
	if verb != "watch" {
		requestLatency.WithLabelValues(verb, info.APIGroup, info.APIVersion, resource, info.Subresource, scope).Observe(took.Seconds())
	}
}
