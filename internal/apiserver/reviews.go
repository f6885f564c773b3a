package apiserver

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/rudder-dev/rudder/internal/admit"
	"github.com/rudder-dev/rudder/internal/auth"
)

// The review resources (registry's Virtual ones) are questions put to the
// server's own authenticator and authorizer, answered in the status of the
// object posted. Their answers must be exactly what the same request would
// get from the pipeline in ServeHTTP, or `kubectl auth can-i` would lie:
// so each review calls the very Authenticator, Authorizer and RBAC rules
// the server runs, and nothing is decided here.

// reviewFunc answers one create of a virtual resource. obj is the posted
// object, decoded, defaulted, validated and admitted; the result is sent
// back with 201 Created.
type reviewFunc func(ctx context.Context, obj runtime.Object, user *auth.User) (runtime.Object, error)

// reviewFor names the answer of each virtual resource; New refuses a
// virtual resource it does not know.
func (s *Server) reviewFor(gr schema.GroupResource) reviewFunc {
	authn := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: authenticationv1.GroupName, Resource: r}
	}
	authz := func(r string) schema.GroupResource {
		return schema.GroupResource{Group: authorizationv1.GroupName, Resource: r}
	}
	switch gr {
	case authn("tokenreviews"):
		return s.reviewToken
	case authn("selfsubjectreviews"):
		return s.reviewSelfSubject
	case authz("subjectaccessreviews"):
		return s.reviewSubjectAccess
	case authz("localsubjectaccessreviews"):
		return s.reviewLocalSubjectAccess
	case authz("selfsubjectaccessreviews"):
		return s.reviewSelfSubjectAccess
	case authz("selfsubjectrulesreviews"):
		return s.reviewSelfSubjectRules
	}
	return nil
}

// serveReview is the whole REST surface of a virtual resource: POST to
// the collection, through the same decoding, defaulting, validation and
// admission as any create, and no storage.
func (h *resourceHandler) serveReview(w http.ResponseWriter, r *http.Request, info *requestInfo) {
	if info.Subresource != "" {
		h.s.writeError(w, r, notFound())
		return
	}
	info.served = true
	if info.Verb != "create" || info.Name != "" {
		h.s.writeError(w, r, methodNotAllowed(r, info))
		return
	}
	namespace := info.Namespace
	switch {
	case h.res.Namespaced && namespace == "":
		// Upstream serves namespaced reviews only under namespaces/{ns}.
		h.s.writeError(w, r, notFound())
		return
	case !h.res.Namespaced && namespace != "":
		h.s.writeError(w, r, notFound())
		return
	}
	if _, ok := h.negotiate(r); !ok {
		// Upstream negotiates before it reads the body: an answer the
		// client cannot take (a Table of a review) is never computed.
		h.s.writeError(w, r, notAcceptable())
		return
	}
	out, err := h.answerReview(w, r, namespace)
	if err != nil {
		h.s.writeError(w, r, err)
		return
	}
	out.GetObjectKind().SetGroupVersionKind(h.gvk)
	h.reply(w, r, http.StatusCreated, out)
}

func (h *resourceHandler) answerReview(w http.ResponseWriter, r *http.Request, namespace string) (runtime.Object, error) {
	obj, isDry, err := h.readObject(w, r, h.kindRef())
	if err != nil {
		return nil, err
	}
	if err := h.placeInNamespace(obj, namespace); err != nil {
		return nil, err
	}
	if h.res.Default != nil {
		h.res.Default(obj)
	}
	user := requestUser(r)
	if user == nil {
		return nil, apierrors.NewBadRequest("no user present on request")
	}
	ctx := r.Context()
	attrs := &admit.Attributes{Operation: admit.Create, Kind: h.gvk, Resource: h.res.GroupVersionResource(),
		Namespace: namespace, Object: obj, User: user, DryRun: isDry}
	if err := h.s.admission.Admit(ctx, attrs); err != nil {
		return nil, err
	}
	if h.res.Validate != nil {
		if err := h.invalid(obj, h.res.Validate(obj)); err != nil {
			return nil, err
		}
	}
	if err := h.s.admission.Validate(ctx, attrs); err != nil {
		return nil, err
	}
	return h.review(ctx, obj, user)
}

// reviewToken answers a TokenReview as the server would authenticate a
// request bearing the token: the same authenticator chain, with the
// review's audiences (default: the API audiences) asked for. An unknown
// or invalid token is authenticated=false with the authenticators'
// error, not an error of the review.
func (s *Server) reviewToken(ctx context.Context, obj runtime.Object, _ *auth.User) (runtime.Object, error) {
	tr := obj.(*authenticationv1.TokenReview)
	if tr.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	tr.Status = authenticationv1.TokenReviewStatus{}
	authn := s.cfg.Authenticator
	if authn == nil {
		return tr, nil
	}
	auds := tr.Spec.Audiences
	if len(auds) == 0 {
		auds = s.apiAudiences()
	}
	if len(auds) > 0 {
		ctx = auth.WithAudiences(ctx, auds)
	}
	// A request carrying nothing but the token: no client certificate,
	// no impersonation, no path for anonymous rules to match.
	fake := (&http.Request{Method: http.MethodPost, URL: &url.URL{}, Header: http.Header{}}).WithContext(ctx)
	fake.Header.Set("Authorization", "Bearer "+tr.Spec.Token)
	u, ok, err := authn.AuthenticateRequest(fake)
	tr.Status.Authenticated = ok && u != nil
	if err != nil {
		tr.Status.Error = err.Error()
	}
	if u == nil {
		return tr, nil
	}
	got := auth.AuthenticatedAudiences(ctx)
	if len(auds) > 0 && len(auth.Audiences(auds).Intersect(got)) == 0 {
		return nil, apierrors.NewInternalError(errAudiences)
	}
	tr.Status.User = reviewUserInfo(u)
	tr.Status.Audiences = got
	return tr, nil
}

// errAudiences is upstream's answer when an authenticator accepted a
// token without saying which of the asked audiences it is for.
var errAudiences = errors.New("error validating audiences")

// reviewSelfSubject tells the caller who the server thinks they are,
// after impersonation: `kubectl auth whoami`.
func (s *Server) reviewSelfSubject(_ context.Context, _ runtime.Object, user *auth.User) (runtime.Object, error) {
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(s.now())},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: reviewUserInfo(user)},
	}, nil
}

func reviewUserInfo(u *auth.User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups,
		Extra: make(map[string]authenticationv1.ExtraValue, len(u.Extra))}
	for k, v := range u.Extra {
		info.Extra[k] = authenticationv1.ExtraValue(v)
	}
	return info
}

func (s *Server) reviewSubjectAccess(_ context.Context, obj runtime.Object, _ *auth.User) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SubjectAccessReview)
	sar.Status = s.decideAccess(reviewSpecUser(&sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	return sar, nil
}

// reviewLocalSubjectAccess is a SubjectAccessReview confined to the
// namespace in the URL, which validation has tied the question to.
func (s *Server) reviewLocalSubjectAccess(_ context.Context, obj runtime.Object, _ *auth.User) (runtime.Object, error) {
	sar := obj.(*authorizationv1.LocalSubjectAccessReview)
	sar.Status = s.decideAccess(reviewSpecUser(&sar.Spec), sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	return sar, nil
}

// reviewSelfSubjectAccess asks about the requesting user itself: `kubectl
// auth can-i`.
func (s *Server) reviewSelfSubjectAccess(_ context.Context, obj runtime.Object, user *auth.User) (runtime.Object, error) {
	sar := obj.(*authorizationv1.SelfSubjectAccessReview)
	sar.Status = s.decideAccess(user, sar.Spec.ResourceAttributes, sar.Spec.NonResourceAttributes)
	return sar, nil
}

// reviewSpecUser is the subject a (Local)SubjectAccessReview asks about, taken
// as given: unlike a request's user it gets no system:authenticated.
func reviewSpecUser(spec *authorizationv1.SubjectAccessReviewSpec) *auth.User {
	u := &auth.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = make(map[string][]string, len(spec.Extra))
		for k, v := range spec.Extra {
			u.Extra[k] = v
		}
	}
	return u
}

// decideAccess asks the server's authorizer, with the attributes the
// equivalent request would carry.
func (s *Server) decideAccess(u *auth.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := auth.Attributes{User: u}
	if ra != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
		if a.APIVersion == "" {
			a.APIVersion = "*"
		}
	} else if nra != nil {
		a.Verb, a.Path = nra.Verb, nra.Path
	}
	az := s.cfg.Authorizer
	if az == nil {
		return authorizationv1.SubjectAccessReviewStatus{Allowed: true}
	}
	d, reason, err := az.Authorize(a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == auth.DecisionAllow, Denied: d == auth.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
}

// reviewSelfSubjectRules lists what the requesting user may do in a
// namespace: `kubectl auth can-i --list`. Upstream answers with the
// status alone; the spec is not echoed.
func (s *Server) reviewSelfSubjectRules(_ context.Context, obj runtime.Object, user *auth.User) (runtime.Object, error) {
	rr := obj.(*authorizationv1.SelfSubjectRulesReview)
	if rr.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	return &authorizationv1.SelfSubjectRulesReview{Status: auth.SubjectRules(s.ruleResolver(), user, rr.Spec.Namespace)}, nil
}

func (s *Server) ruleResolver() auth.RuleResolver {
	switch {
	case s.cfg.RuleResolver != nil:
		return s.cfg.RuleResolver
	case s.cfg.Authorizer == nil:
		return auth.AllowAllRules
	}
	return auth.NewRBACAuthorizer(s.RBACSource())
}
