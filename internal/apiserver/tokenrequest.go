package apiserver

import (
	"context"
	"crypto"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/apiserver/registry"
	"github.com/rudder-dev/rudder/internal/auth"
)

// ServiceAccountTokens is how the server issues and publishes
// service-account tokens.
type ServiceAccountTokens struct {
	// Issuer signs the tokens of serviceaccounts/<name>/token. Required.
	Issuer *auth.TokenIssuer
	// Keys are every key that verifies a token (all are published at
	// /openid/v1/jwks); default the Issuer's.
	Keys []crypto.PublicKey
	// APIAudiences are the audiences of a TokenRequest or TokenReview
	// that names none (--api-audiences); default the issuer alone.
	APIAudiences []string
	// JWKSURI is the jwks_uri of the discovery document
	// (--service-account-jwks-uri); default https://<ExternalAddress>/openid/v1/jwks.
	JWKSURI string
	// ExternalAddress is host:port where clients reach this server.
	ExternalAddress string
}

// serviceAccountTokens is ServiceAccountTokens with defaults filled and
// the discovery documents built once.
type serviceAccountTokens struct {
	ServiceAccountTokens
	// oidcConfig and jwks are nil when the issuer cannot be an OIDC
	// issuer (not an https URL): then discovery is not served, as
	// upstream disables it.
	oidcConfig, jwks []byte
}

// tokenRequestGVK is the kind serviceaccounts/token reads and answers.
var tokenRequestGVK = authenticationv1.SchemeGroupVersion.WithKind("TokenRequest")

// SetServiceAccountTokens enables serviceaccounts/<name>/token and the
// OIDC discovery endpoints. It must be called before the server serves.
func (s *Server) SetServiceAccountTokens(t ServiceAccountTokens) error {
	if t.Issuer == nil {
		return errors.New("apiserver: service-account tokens need an issuer")
	}
	if len(t.Keys) == 0 {
		t.Keys = []crypto.PublicKey{t.Issuer.PublicKey()}
	}
	if len(t.APIAudiences) == 0 {
		t.APIAudiences = []string{t.Issuer.Issuer()}
	}
	st := &serviceAccountTokens{ServiceAccountTokens: t}
	config, jwks, err := oidcDocuments(t.Issuer.Issuer(), t.JWKSURI, t.ExternalAddress, t.Keys)
	if err != nil {
		slog.Warn("service-account issuer discovery disabled", "issuer", t.Issuer.Issuer(), "err", err)
	} else {
		st.oidcConfig, st.jwks = config, jwks
	}
	s.saTokens = st
	return nil
}

// apiAudiences are the audiences the server itself accepts.
func (s *Server) apiAudiences() []string {
	if s.saTokens == nil {
		return nil
	}
	return s.saTokens.APIAudiences
}

// ServiceAccountObjects reads service accounts and the objects tokens are
// bound to from the server's caches (etcd when not cached yet), for the
// service-account token authenticator.
func (s *Server) ServiceAccountObjects() auth.ServiceAccountObjects { return saObjects{s} }

type saObjects struct{ s *Server }

func saGet[T runtime.Object](ctx context.Context, s *Server, resource, namespace, name string) (T, error) {
	var zero T
	obj, err := s.GetObject(ctx, corev1.SchemeGroupVersion.WithResource(resource), namespace, name)
	if err != nil {
		return zero, err
	}
	if obj == nil {
		return zero, apierrors.NewNotFound(corev1.Resource(resource), name)
	}
	t, ok := obj.(T)
	if !ok {
		return zero, fmt.Errorf("%s %s/%s is a %T", resource, namespace, name, obj)
	}
	return t, nil
}

func (o saObjects) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	return saGet[*corev1.ServiceAccount](ctx, o.s, "serviceaccounts", namespace, name)
}

func (o saObjects) Pod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	return saGet[*corev1.Pod](ctx, o.s, "pods", namespace, name)
}

func (o saObjects) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	return saGet[*corev1.Secret](ctx, o.s, "secrets", namespace, name)
}

func (o saObjects) Node(ctx context.Context, name string) (*corev1.Node, error) {
	return saGet[*corev1.Node](ctx, o.s, "nodes", "", name)
}

// The kubelet asks for pod tokens of exactly 3607 seconds; upstream then
// signs them for a year but marks them stale ("warnafter") after the hour,
// so that clients that never reload their token keep working while their
// owners are warned (--service-account-extend-token-expiration).
const (
	warnOnlyExpirationSeconds = 3607
	extendedExpirationSeconds = 365 * 24 * 60 * 60
)

// createToken serves POST serviceaccounts/<name>/token: a TokenRequest in,
// the same TokenRequest with defaults and status.token out.
func (h *resourceHandler) createToken(w http.ResponseWriter, r *http.Request, namespace, name string) {
	out, err := h.s.issueToken(w, r, namespace, name)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	out.SetGroupVersionKind(tokenRequestGVK)
	h.reply(w, r, http.StatusCreated, out)
}

func (s *Server) issueToken(w http.ResponseWriter, r *http.Request, namespace, name string) (*authenticationv1.TokenRequest, error) {
	ref := kindRef{kind: tokenRequestGVK, newObject: func() runtime.Object { return &authenticationv1.TokenRequest{} }}
	h := s.handlers[corev1.SchemeGroupVersion.WithResource("serviceaccounts")]
	obj, isDry, err := h.readObject(w, r, ref)
	if err != nil {
		return nil, err
	}
	req := obj.(*authenticationv1.TokenRequest)
	gk := tokenRequestGVK.GroupKind()
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, apierrors.NewInvalid(gk, name, field.ErrorList{field.Invalid(field.NewPath("metadata", "namespace"), req.Namespace, "must match the service account namespace if specified")})
	}
	ctx := r.Context()
	objects := s.ServiceAccountObjects()
	sa, err := objects.ServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	registry.DefaultTokenRequest(req)
	if len(req.Spec.Audiences) == 0 {
		req.Spec.Audiences = slices.Clone(s.saTokens.APIAudiences)
	}
	if req.Name == "" {
		req.Name = sa.Name
	}
	if req.Namespace == "" {
		req.Namespace = sa.Namespace
	}
	// Taken before the token is built, so that the expiration reported
	// is never later than the token's own.
	now := s.now()
	req.CreationTimestamp = metav1.NewTime(now)
	req.Status = authenticationv1.TokenRequestStatus{}

	attrs := &admit.Attributes{Operation: admit.Create, Kind: tokenRequestGVK, Resource: h.res.GroupVersionResource(),
		Subresource: "token", Namespace: namespace, Name: name, Object: req, User: requestUser(r), DryRun: isDry}
	if err := s.admission.Admit(ctx, attrs); err != nil {
		return nil, err
	}
	if errs := registry.ValidateTokenRequest(req); len(errs) > 0 {
		return nil, apierrors.NewInvalid(gk, "", errs)
	}
	if err := s.admission.Validate(ctx, attrs); err != nil {
		return nil, err
	}
	bound, err := s.boundObjects(ctx, objects, req.Spec.BoundObjectRef, namespace, name)
	if err != nil {
		return nil, err
	}

	exp, warnAfter := *req.Spec.ExpirationSeconds, int64(0)
	if bound.Pod != nil && exp == warnOnlyExpirationSeconds && s.isAPIAudiences(req.Spec.Audiences) {
		warnAfter, exp = exp, max(exp, extendedExpirationSeconds)
	}
	claims, err := auth.NewServiceAccountClaims(sa, bound, req.Spec.Audiences, now, exp, warnAfter)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	token, err := s.saTokens.Issuer.Sign(claims)
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("failed to generate token: %v", err))
	}
	out := req.DeepCopy()
	out.Status = authenticationv1.TokenRequestStatus{
		Token:               token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*out.Spec.ExpirationSeconds) * time.Second)),
	}
	return out, nil
}

// isAPIAudiences reports whether every audience asked for is one of the
// API server's own: only such tokens get the kubelet's extended life.
func (s *Server) isAPIAudiences(auds []string) bool {
	for _, a := range auds {
		if !slices.Contains(s.saTokens.APIAudiences, a) {
			return false
		}
	}
	return true
}

// boundObjects resolves spec.boundObjectRef: the pod (with its node),
// secret or node the token will live no longer than. The object must
// exist, and have the UID given, if one is.
func (s *Server) boundObjects(ctx context.Context, objects auth.ServiceAccountObjects, ref *authenticationv1.BoundObjectReference, namespace, saName string) (auth.BoundObjects, error) {
	var bound auth.BoundObjects
	if ref == nil {
		return bound, nil
	}
	gvk := schema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
	var uid types.UID
	switch {
	case gvk.Group == "" && gvk.Kind == "Pod":
		pod, err := objects.Pod(ctx, namespace, ref.Name)
		if err != nil {
			return bound, err
		}
		if pod.Spec.ServiceAccountName != saName {
			return bound, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", saName))
		}
		bound.Pod, uid = pod, pod.UID
		if nodeName := pod.Spec.NodeName; nodeName != "" {
			node, err := objects.Node(ctx, nodeName)
			switch {
			case apierrors.IsNotFound(err):
				// The token still records where the pod runs, without a UID.
				bound.Node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName}}
			case err != nil:
				return bound, apierrors.NewInternalError(err)
			default:
				bound.Node = node
			}
		}
	case gvk.Group == "" && gvk.Kind == "Node":
		node, err := objects.Node(ctx, ref.Name)
		if err != nil {
			return bound, err
		}
		bound.Node, uid = node, node.UID
	case gvk.Group == "" && gvk.Kind == "Secret":
		secret, err := objects.Secret(ctx, namespace, ref.Name)
		if err != nil {
			return bound, err
		}
		bound.Secret, uid = secret, secret.UID
	default:
		return bound, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to object of type %s", saName, gvk.String()))
	}
	if ref.UID != "" && uid != ref.UID {
		return bound, apierrors.NewConflict(schema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
			fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return bound, nil
}
