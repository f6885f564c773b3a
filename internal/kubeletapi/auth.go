package kubeletapi

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
)

// Authentication and authorization of the kubelet API, as upstream's
// kubelet does it in webhook mode:
//
//  1. Authenticate: the TLS handshake has already verified the client
//     certificate against the cluster CA; its subject names the user
//     (CommonName) and groups (Organization), plus system:authenticated,
//     as the API server's x509 authenticator reads them.
//  2. Authorize: map the request to the node it concerns — verb from the
//     HTTP method, resource "nodes", name the node, subresource from the
//     path (/metrics/* is metrics, /logs log, /stats stats, /pods,
//     /healthz and /configz their own name then proxy, anything else
//     proxy) — and ask the API server with a SubjectAccessReview. The
//     first subresource allowed wins; none allowed is 403 with the text
//     upstream's kubelet prints.
//  3. Cache: decisions are kept 5 min when allowed and 30 s when denied
//     (upstream's --authorization-webhook-cache-*-ttl defaults), so a
//     scraper hitting a node every 15 s costs one review per node per
//     5 min, not one per scrape.
//
// The API server's own client certificate (kube-apiserver-kubelet-client)
// is allowed by the bootstrap binding of system:kubelet-api-admin. The
// client the Authorizer uses must itself be allowed to create
// subjectaccessreviews (system:auth-delegator grants it).

// Cache lifetimes of authorization decisions.
const (
	authzAllowTTL = 5 * time.Minute
	authzDenyTTL  = 30 * time.Second
	// authzCacheMax bounds the cache; past it expired entries are swept
	// and, if still full, the cache starts over.
	authzCacheMax = 16384
)

// User is who presented a client certificate.
type User struct {
	Name   string
	Groups []string
}

// CertUser reads the user a verified client certificate names.
func CertUser(c *x509.Certificate) User {
	groups := slices.Clone(c.Subject.Organization)
	if !slices.Contains(groups, "system:authenticated") {
		groups = append(groups, "system:authenticated")
	}
	return User{Name: c.Subject.CommonName, Groups: groups}
}

// Authenticate reads the user of a request whose client certificate the
// TLS handshake verified, or writes 401 and returns false.
func Authenticate(w http.ResponseWriter, r *http.Request) (User, bool) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return User{}, false
	}
	return CertUser(r.TLS.PeerCertificates[0]), true
}

// Verb maps an HTTP method to an API verb as the kubelet does; HEAD
// is a get (upstream leaves it empty, which no rule names).
func Verb(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		return "delete"
	}
	return ""
}

// Subresources lists, in the order they are tried, the node
// subresources that grant a request for path (KubeletFineGrainedAuthz, on
// by default upstream since 1.33: /pods, /healthz and /configz have their
// own subresource and fall back to proxy).
func Subresources(path string) []string {
	for _, own := range []string{"pods", "healthz", "configz"} {
		if isSubpath(path, "/"+own) {
			return []string{own, "proxy"}
		}
	}
	switch {
	case isSubpath(path, "/stats"):
		return []string{"stats"}
	case isSubpath(path, "/metrics"):
		return []string{"metrics"}
	case isSubpath(path, "/logs"):
		return []string{"log"}
	case isSubpath(path, "/checkpoint"):
		return []string{"checkpoint"}
	}
	return []string{"proxy"}
}

// isSubpath is path == prefix or below it.
func isSubpath(path, prefix string) bool {
	return path == prefix || strings.HasPrefix(path, prefix+"/")
}

// Authorizer answers whether a user may make a request of a node, by
// SubjectAccessReview with a cache. It is safe for concurrent use.
type Authorizer struct {
	client kubernetes.Interface
	clock  clock.PassiveClock
	logger *slog.Logger

	mu    sync.Mutex
	cache map[authzKey]authzEntry
}

type authzKey struct {
	user, groups, verb, subresource, node string
}

type authzEntry struct {
	allowed bool
	expires time.Time
}

// NewAuthorizer asks through client; clk times the cache.
func NewAuthorizer(client kubernetes.Interface, clk clock.PassiveClock, logger *slog.Logger) *Authorizer {
	return &Authorizer{client: client, clock: clk, logger: logger, cache: make(map[authzKey]authzEntry)}
}

// Authorize writes the refusal and returns false unless u may make r of
// node. A review that fails is a 500, as upstream's "Authorization error".
func (a *Authorizer) Authorize(w http.ResponseWriter, r *http.Request, u User, node string) bool {
	verb := Verb(r.Method)
	subs := Subresources(r.URL.Path)
	for _, sub := range subs {
		ok, err := a.allowed(r.Context(), u, verb, sub, node)
		if err != nil {
			// Most likely the client may not create
			// subjectaccessreviews.
			a.logger.Warn("kubelet API: authorization failed", "user", u.Name, "verb", verb, "subresource", sub, "node", node, "err", err)
			http.Error(w, fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.Name, verb, sub), http.StatusInternalServerError)
			return false
		}
		if ok {
			return true
		}
	}
	http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)", u.Name, verb, subs), http.StatusForbidden)
	return false
}

// allowed is the cached decision, or a review's.
func (a *Authorizer) allowed(ctx context.Context, u User, verb, sub, node string) (bool, error) {
	key := authzKey{user: u.Name, groups: strings.Join(u.Groups, "\x00"), verb: verb, subresource: sub, node: node}
	now := a.clock.Now()
	a.mu.Lock()
	e, ok := a.cache[key]
	a.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.allowed, nil
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:   u.Name,
		Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Version: "v1", Resource: "nodes", Subresource: sub, Name: node,
		},
	}}
	got, err := a.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, sar, metav1.CreateOptions{})
	if err != nil {
		return false, err
	}
	allowed := got.Status.Allowed && !got.Status.Denied
	ttl := authzDenyTTL
	if allowed {
		ttl = authzAllowTTL
	}
	a.mu.Lock()
	if len(a.cache) >= authzCacheMax {
		for k, old := range a.cache {
			if !now.Before(old.expires) {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= authzCacheMax {
			clear(a.cache)
		}
	}
	a.cache[key] = authzEntry{allowed: allowed, expires: now.Add(ttl)}
	a.mu.Unlock()
	return allowed, nil
}
