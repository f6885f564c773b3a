package admission

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/scheme"
)

// Calling one webhook: an AdmissionReview v1 POSTed over HTTPS, checked
// the way upstream checks it, with upstream's error classes:
//
//   - whCallError: the webhook could not be called or answered
//     nonsense. failurePolicy decides: Ignore skips the webhook, Fail
//     turns it into a 500 "failed calling webhook ...".
//   - a *apierrors.StatusError: the webhook answered and refused
//     ("admission webhook ... denied the request: ..."), or the request
//     cannot be sent at all (a dry run to a webhook with side effects).
//     The failurePolicy does not apply.

// whCallError is upstream's ErrCallingWebhook.
type whCallError struct {
	webhook string
	reason  error
}

func (e *whCallError) Error() string {
	return fmt.Sprintf("failed calling webhook %q: %v", e.webhook, e.reason)
}

func (e *whCallError) Unwrap() error { return e.reason }

// whDenied is upstream's message for a webhook's refusal; the code is at
// least 400 whatever the webhook said.
func whDenied(webhook string, result *metav1.Status) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure, Code: http.StatusBadRequest}
	if result != nil {
		st = *result
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", webhook)
	switch {
	case st.Message != "":
		st.Message = deniedBy + ": " + st.Message
	case st.Reason != "":
		st.Message = deniedBy + ": " + string(st.Reason)
	default:
		st.Message = deniedBy + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// whDryRunUnsupported: a webhook that may have side effects is never
// sent a dry run, which would make them happen for a write that does
// not.
func whDryRunUnsupported(webhook string) error {
	return apierrors.NewBadRequest(fmt.Sprintf("admission webhook %q does not support dry run", webhook))
}

// whResult is what a webhook answered.
type whResult struct {
	allowed  bool
	status   *metav1.Status
	patch    []byte
	warnings []string
}

// whCaller sends AdmissionReviews. Transports are shared by every hook
// with the same CA bundle and server name, and live as long as the
// plugin, so that connections are reused across writes and across
// recompiled snapshots.
type whCaller struct {
	objects ObjectSource

	mu         sync.Mutex
	transports map[string]*http.Transport
}

func (c *whCaller) client(caBundle []byte, serverName string) (*http.Client, error) {
	sum := sha256.Sum256(caBundle)
	key := string(sum[:]) + "|" + serverName
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.transports == nil {
		c.transports = map[string]*http.Transport{}
	}
	t, ok := c.transports[key]
	if !ok && len(c.transports) >= whMaxTransports {
		// Configurations come and go with their CA bundles: rather than
		// track which transports are still used, start over now and then.
		for _, old := range c.transports {
			old.CloseIdleConnections()
		}
		clear(c.transports)
	}
	if !ok {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName}
		if len(caBundle) > 0 {
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(caBundle) {
				return nil, errors.New("unable to load root certificates: unable to parse bytes as PEM block")
			}
			cfg.RootCAs = pool
		}
		t = &http.Transport{
			TLSClientConfig:     cfg,
			DialContext:         (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConnsPerHost: 100,
			IdleConnTimeout:     90 * time.Second,
		}
		c.transports[key] = t
	}
	// No client timeout: the request's context carries the webhook's.
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}, nil
}

// whMaxTransports bounds the transports kept for distinct CA bundles and
// server names.
const whMaxTransports = 64

// endpoint returns the URL to POST to and the TLS server name: a URL
// hook's own, or a service's address behind its cluster DNS name.
func (c *whCaller) endpoint(ctx context.Context, cc admissionregistrationv1.WebhookClientConfig) (*url.URL, string, error) {
	if cc.URL != nil {
		u, err := url.Parse(*cc.URL)
		if err != nil {
			return nil, "", fmt.Errorf("invalid webhook url: %w", err)
		}
		return u, u.Hostname(), nil
	}
	s := cc.Service
	if s == nil {
		return nil, "", errors.New("neither url nor service is set")
	}
	port := int32(443)
	if s.Port != nil {
		port = *s.Port
	}
	host := s.Name + "." + s.Namespace + ".svc"
	addr, err := c.resolveService(ctx, s.Namespace, s.Name, port)
	if err != nil {
		return nil, "", err
	}
	u := &url.URL{Scheme: "https", Host: addr}
	if s.Path != nil {
		u.Path = *s.Path
	}
	return u, host, nil
}

var (
	servicesGVR       = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	endpointSlicesGVR = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
)

// resolveService picks a ready endpoint of the service's port, as
// kube-apiserver does when it routes to endpoints: the API server may
// not be on the service network.
func (c *whCaller) resolveService(ctx context.Context, namespace, name string, port int32) (string, error) {
	obj, err := c.objects.GetObject(ctx, servicesGVR, namespace, name)
	if err != nil {
		return "", err
	}
	svc, ok := obj.(*corev1.Service)
	if !ok || svc == nil {
		return "", fmt.Errorf("service %q not found", name)
	}
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return "", fmt.Errorf("no service port %d found for service %q", port, name)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port))), nil
	}
	eps, err := c.objects.ListObjects(ctx, endpointSlicesGVR, namespace, false)
	if err != nil {
		return "", err
	}
	for _, o := range eps {
		es, ok := o.(*discoveryv1.EndpointSlice)
		if !ok || es.Labels[discoveryv1.LabelServiceName] != name {
			continue
		}
		var target int32
		for _, p := range es.Ports {
			if p.Port != nil && (p.Name == nil && sp.Name == "" || p.Name != nil && *p.Name == sp.Name) {
				target = *p.Port
			}
		}
		if target == 0 {
			continue
		}
		for _, ep := range es.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready || len(ep.Addresses) == 0 {
				continue
			}
			return net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target))), nil
		}
	}
	return "", fmt.Errorf("service %q does not have ready endpoints", name)
}

// whReview builds the AdmissionReview for one call.
func whReview(inv *whInvocation, a *Attributes, version string) (*admissionv1.AdmissionReview, error) {
	obj, old := inv.object, inv.oldObject
	req := &admissionv1.AdmissionRequest{
		UID:                types.UID(uuid.NewUUID()),
		Kind:               metav1.GroupVersionKind(inv.kind),
		Resource:           metav1.GroupVersionResource(inv.resource),
		SubResource:        a.Subresource,
		RequestKind:        &metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind},
		RequestResource:    &metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource},
		RequestSubResource: a.Subresource,
		Name:               a.Name,
		Namespace:          a.Namespace,
		Operation:          admissionv1.Operation(a.Operation),
		DryRun:             new(a.DryRun),
	}
	if req.Name == "" && obj != nil {
		if m, ok := obj.(metav1.Object); ok {
			req.Name = m.GetName()
		}
	}
	if u := a.User; u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if a.Operation != Delete {
		if req.Object.Raw, err = whEncode(obj, inv.kind); err != nil {
			return nil, err
		}
	}
	if req.OldObject.Raw, err = whEncode(old, inv.kind); err != nil {
		return nil, err
	}
	req.Options.Raw = whOptionsJSON(a)
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/" + version, Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

// whOptionsJSON is the write's options object, as upstream sends it.
func whOptionsJSON(a *Attributes) []byte {
	kind := map[Operation]string{Create: "CreateOptions", Update: "UpdateOptions", Delete: "DeleteOptions"}[a.Operation]
	if kind == "" {
		return nil
	}
	o := map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": kind}
	if a.DryRun {
		o["dryRun"] = []string{metav1.DryRunAll}
	}
	b, _ := json.Marshal(o)
	return b
}

// whEncode is an object's JSON with apiVersion and kind, which typed
// objects in admission usually leave empty. The object is not changed:
// an old object is shared with the watch cache.
func whEncode(obj runtime.Object, fallback schema.GroupVersionKind) ([]byte, error) {
	if obj == nil {
		return nil, nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	if !obj.GetObjectKind().GroupVersionKind().Empty() || len(b) < 2 || b[0] != '{' {
		return b, nil
	}
	gvk := whKindOf(obj, fallback)
	head, _ := json.Marshal(map[string]string{"apiVersion": gvk.GroupVersion().String(), "kind": gvk.Kind})
	out := make([]byte, 0, len(head)+len(b))
	out = append(out, head[:len(head)-1]...)
	if len(b) > 2 {
		out = append(out, ',')
	}
	return append(out, b[1:]...), nil
}

// whKindOf names a typed object's kind: the request's when the Go type
// is the request kind's, else the scheme's (a /scale write carries a
// Scale).
func whKindOf(obj runtime.Object, fallback schema.GroupVersionKind) schema.GroupVersionKind {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return fallback
	}
	for _, g := range gvks {
		if g == fallback {
			return g
		}
	}
	return gvks[0]
}

// call sends one review and checks the answer.
func (c *whCaller) call(ctx context.Context, inv *whInvocation, a *Attributes, mutating bool) (*whResult, error) {
	h := inv.hook
	fail := func(format string, args ...any) error {
		return &whCallError{webhook: h.name, reason: fmt.Errorf(format, args...)}
	}
	version := ""
	for _, v := range h.reviewVersions {
		if v == "v1" || v == "v1beta1" {
			version = v
			break
		}
	}
	if version == "" {
		return nil, fail("webhook does not accept known AdmissionReview versions")
	}
	review, err := whReview(inv, a, version)
	if err != nil {
		return nil, fail("could not create admission objects: %w", err)
	}
	body, err := json.Marshal(review)
	if err != nil {
		return nil, fail("could not create admission objects: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	u, serverName, err := c.endpoint(ctx, h.clientConfig)
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	client, err := c.client(h.clientConfig.CABundle, serverName)
	if err != nil {
		return nil, fail("could not get REST client: %w", err)
	}
	// Tell the webhook how long it has, in whole seconds, as upstream's
	// REST client does.
	q := u.Query()
	q.Set("timeout", strconv.Itoa(int((h.timeout+time.Second-1)/time.Second))+"s")
	u.RawQuery = q.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	req.Host = u.Host
	if h.clientConfig.Service != nil {
		req.Host = serverName
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 3<<20))
	if err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var st metav1.Status
		if json.Unmarshal(data, &st) == nil && st.Kind == "Status" && st.Message != "" {
			return nil, fail("failed to call webhook: %s", st.Message)
		}
		return nil, fail("failed to call webhook: the server responded with the status code %d but did not return more information", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fail("failed to call webhook: %w", err)
	}
	if want := "admission.k8s.io/" + version; out.APIVersion != want || out.Kind != "AdmissionReview" {
		return nil, fail("received invalid webhook response: expected webhook response of %s, Kind=AdmissionReview, got %s, Kind=%s", want, out.APIVersion, out.Kind)
	}
	r := out.Response
	switch {
	case r == nil:
		return nil, fail("received invalid webhook response: webhook response was absent")
	case r.UID != review.Request.UID:
		return nil, fail("received invalid webhook response: expected response.uid=%q, got %q", review.Request.UID, r.UID)
	case mutating && len(r.Patch) > 0 && r.PatchType == nil:
		return nil, fail("received invalid webhook response: webhook returned response.patch but not response.patchType")
	case mutating && len(r.Patch) == 0 && r.PatchType != nil:
		return nil, fail("received invalid webhook response: webhook returned response.patchType but not response.patch")
	case !mutating && len(r.Patch) > 0:
		return nil, fail("received invalid webhook response: validating webhook may not return response.patch")
	case !mutating && r.PatchType != nil:
		return nil, fail("received invalid webhook response: validating webhook may not return response.patchType")
	case r.PatchType != nil && *r.PatchType != admissionv1.PatchTypeJSONPatch:
		return nil, fail("unsupported patch type %q", *r.PatchType)
	}
	return &whResult{allowed: r.Allowed, status: r.Result, patch: r.Patch, warnings: r.Warnings}, nil
}
